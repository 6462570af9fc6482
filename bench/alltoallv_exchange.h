// tucoll-bench's alltoallv: typed buffers from a workload, the vendor reference, comparisons;
// with --memory device the buffers live on the GPU (CUDA builds), mirrored on the host for the
// contents and the check.
#pragma once

#include <map>
#include <string>

#include "device_mirror.h"
#include "tucoll.h"
#include "runner.h"
#include "typed_buffers.h"
#include "workload.h"

namespace tucoll::bench {

class AlltoallvExchange final : public Exchange {
  public:
    AlltoallvExchange(const BenchOptions &options, MPI_Comm comm, Layout layout = Layout::kPacked);
    ~AlltoallvExchange() override { free_plans(); }
    const char *collective() const override { return "alltoallv"; }
    std::string prepare(int64_t size) override;
    int run(const std::string &spec) override;
    int run_plain() override;
    int run_reference() override;
    // On device buffers the reference is the MPI's result on the host mirrors (run_reference).
    bool can_capture_reference() const override { return !device_.active(); }
    void capture_reference() override { reference_ = buffers_.recv; }
    void reset_output() override;
    int64_t compare_with_reference() const override;
    // `chosen`, the block-size statistics of the workload (BlockStats::names()), then algbw and
    // busbw (add_bandwidth_columns) of the mean rank's bytes.
    void add_columns(Row &row) const override;

  private:
    void free_plans();

    const BenchOptions &options_;
    MPI_Comm comm_;
    Layout layout_;
    TypePair types_;
    AlltoallvBuffers buffers_;
    Bytes reference_;
    std::vector<double> stats_;  // BlockStats::values() of the current workload
    int nprocs_ = 1;
    DeviceMirror device_;
    // --persistent: one plan per spec for the current inputs, made on the spec's first call (a
    // warm-up one unless --warmup 0), freed when the inputs change.
    std::map<std::string, tucoll_request_t> plans_;
};

}  // namespace tucoll::bench
