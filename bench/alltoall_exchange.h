// tucoll-bench's alltoall: --size bytes per block from every rank to every rank (MPI_Alltoall
// arguments), with nccl-tests' algbw and busbw columns; with --memory device the buffers live on
// the GPU (CUDA builds), mirrored on the host for the contents and the check.
#pragma once

#include "device_mirror.h"
#include "runner.h"
#include "typed_buffers.h"

namespace tucoll::bench {

class AlltoallExchange final : public Exchange {
  public:
    AlltoallExchange(const BenchOptions &options, MPI_Comm comm) : options_(options), comm_(comm) {}
    const char *collective() const override { return "alltoall"; }
    std::string prepare(int64_t size) override;
    int run(const std::string &spec) override;
    int run_plain() override;
    int run_reference() override;
    // On device buffers the reference is the MPI's result on the host mirrors (run_reference).
    bool can_capture_reference() const override { return !device_.active(); }
    void capture_reference() override;
    void reset_output() override;
    int64_t compare_with_reference() const override;
    std::string workload() const override { return "-"; }
    // algbw: the bytes one rank sends (P blocks, its own included) over the median time;
    // busbw = algbw (P-1)/P, what crosses the network per rank (nccl-tests' PERFORMANCE.md).
    void add_columns(Row &row) const override;

  private:
    const BenchOptions &options_;
    MPI_Comm comm_;
    TypePair types_;
    int nprocs_ = 1;
    int sendcount_ = 0, recvcount_ = 0;
    int64_t block_bytes_ = 0;
    Bytes send_, recv_, reference_;
    DeviceMirror device_;
};

}  // namespace tucoll::bench
