// tucoll-bench's alltoallv: typed buffers from a workload, the vendor reference, comparisons.
#pragma once

#include "runner.h"
#include "typed_buffers.h"
#include "workload.h"

namespace tucoll::bench {

class AlltoallvExchange final : public Exchange {
  public:
    AlltoallvExchange(const BenchOptions &options, MPI_Comm comm, Layout layout = Layout::kPacked);
    const char *collective() const override { return "alltoallv"; }
    std::string prepare(int64_t size) override;
    int run(const std::string &spec) override;
    int run_plain() override;
    int run_reference() override;
    bool can_capture_reference() const override { return true; }
    void capture_reference() override { reference_ = buffers_.recv; }
    void reset_output() override { buffers_.fill_recv_sentinel(); }
    int64_t compare_with_reference() const override { return first_difference(buffers_.recv, reference_); }
    // `chosen`, then the block-size statistics of the workload (BlockStats::names()).
    void add_columns(Row &row) const override;

  private:
    const BenchOptions &options_;
    MPI_Comm comm_;
    Layout layout_;
    TypePair types_;
    AlltoallvBuffers buffers_;
    Bytes reference_;
    std::vector<double> stats_;  // BlockStats::values() of the current workload
};

}  // namespace tucoll::bench
