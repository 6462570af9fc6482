// Workloads: who sends how many bytes to whom. A workload is a pure function of (sender,
// receiver), so every rank computes its own row and column in O(P) without exchanging anything
// and without ever holding the P x P matrix (needed at thousands of simulated ranks).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tucoll::bench {

// splitmix64: a counter-based hash, so that values derived from (seed, i, j) are the same on
// every rank that computes them.
inline uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

class Workload {
  public:
    // `dist` is one of the names in distribution_help(); `max_bytes` is S, the largest block.
    // Returns an empty string on success, else what is wrong.
    static std::string create(const std::string &dist, int64_t max_bytes, int nprocs, uint64_t seed,
                              Workload *out);
    // As create, for the calling rank of `comm` (collective over it; the same answer on every
    // rank): a pattern file is read by rank 0 alone, which keeps the whole matrix (statistics
    // need it) and sends every other rank its own row and column, so that a simulation of
    // thousands of ranks in one process does not hold P copies of P x P entries. On those ranks
    // bytes(src, dst) is defined where src or dst is the rank.
    static std::string create_for_rank(const std::string &dist, int64_t max_bytes, MPI_Comm comm, uint64_t seed,
                                       Workload *out);

    int64_t bytes(int src, int dst) const;  // block size from src to dst
    std::vector<int64_t> row(int src) const;  // what src sends to each rank
    std::vector<int64_t> column(int dst) const;  // what each rank sends to dst
    const std::string &name() const { return name_; }
    int nprocs() const { return nprocs_; }

  private:
    enum class Kind { kUniform, kNormal, kPowerlaw, kFft1, kFft2, kZeros, kOnehot, kOnehuge, kFile };
    Kind kind_ = Kind::kUniform;
    std::string name_;
    int64_t max_bytes_ = 0;
    int nprocs_ = 1;
    uint64_t seed_ = 1;
    std::vector<int64_t> matrix_;  // only for file workloads (row-major P x P)
    // File workloads from create_for_rank on ranks other than 0: that rank's row and column.
    int only_rank_ = -1;
    std::vector<int64_t> own_row_, own_column_;
};

// Statistics of the P x P block sizes in bytes, for the tuner (tucoll analyze / fit). The first
// three are what the library's `auto` computes from one allreduce (names as in tuning tables).
struct BlockStats {
    double max_block = 0;           // largest block
    double mean_block = 0;          // total bytes / P^2
    double busiest_mean_block = 0;  // bytes the busiest rank sends / P
    double median_block = 0;
    double std_block = 0;
    double skew_block = 0;          // third standardized moment (0 when all blocks are equal)
    double zero_share = 0;          // fraction of empty blocks
    double total_bytes = 0;
    double rank_imbalance = 0;      // busiest rank's bytes / the mean rank's (1 = balanced)

    static const std::vector<std::string> &names();
    std::vector<double> values() const;
};

// The statistics of `workload` with block (i, j) counted as bytes(i, j) -> `sent(bytes)`
// (what a datatype lets through). O(P^2) time, O(P^2) memory for the median.
template <class Sent>
BlockStats block_stats(const Workload &workload, Sent sent);

// One line per distribution, for --help.
std::string distribution_help();

// The largest block of the onehuge distribution.
int64_t onehuge_bytes(int64_t max_bytes);

BlockStats summarize_blocks(std::vector<double> blocks, int nprocs);  // blocks row by row

template <class Sent>
BlockStats block_stats(const Workload &workload, Sent sent) {
    const int p = workload.nprocs();
    std::vector<double> blocks(static_cast<size_t>(p) * p);
    for (int i = 0; i < p; ++i) {
        for (int j = 0; j < p; ++j) blocks[static_cast<size_t>(i) * p + j] = static_cast<double>(sent(workload.bytes(i, j)));
    }
    return summarize_blocks(std::move(blocks), p);
}

}  // namespace tucoll::bench
