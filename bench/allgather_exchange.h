// tucoll-bench's allgather and allgatherv: typed buffers, the vendor reference, comparisons.
#pragma once

#include "runner.h"
#include "typed_buffers.h"

namespace tucoll::bench {

class AllgatherExchange final : public Exchange {
  public:
    // `vector`: allgatherv, block sizes from the --dist workload (rank 0's row of it).
    AllgatherExchange(const BenchOptions &options, MPI_Comm comm, bool vector, bool in_place,
                      Layout layout = Layout::kPacked);
    const char *collective() const override { return vector_ ? "allgatherv" : "allgather"; }
    std::string prepare(int64_t size) override;
    int run(const std::string &spec) override;
    int run_plain() override;
    int run_reference() override;
    bool can_capture_reference() const override { return true; }
    void capture_reference() override { reference_ = buffers_.recv; }
    void reset_output() override { buffers_.reset_recv(); }
    int64_t compare_with_reference() const override { return first_difference(buffers_.recv, reference_); }

  private:
    const BenchOptions &options_;
    MPI_Comm comm_;
    bool vector_, in_place_;
    Layout layout_;
    TypePair types_;
    AllgatherBuffers buffers_;
    Bytes reference_;
};

// Block sizes of an allgatherv with distribution `dist`: what rank 0 sends each rank under it.
std::string allgatherv_block_sizes(const std::string &dist, int64_t size, int nprocs, uint64_t seed,
                                   std::vector<int64_t> *out);

}  // namespace tucoll::bench
