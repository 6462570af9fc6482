// The measurement loop every collective shares: candidates interleaved per iteration with a
// barrier before each call, time = slowest rank, median/min/max over iterations, results
// checked against the vendor MPI.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tucoll::bench {

// `--alg mpi`: the collective's plain MPI call on the bench's communicator, not through tucoll.
constexpr const char *kPlainMpi = "mpi";

struct BenchOptions {
    std::vector<std::string> algs;  // specs (or kPlainMpi); empty = every registered algorithm, defaults
    std::string dist = "uniform";
    int64_t size = 1024;
    std::vector<int64_t> sizes;  // overrides size when given
    std::string type = "char";
    int iters = 20;  // >= 1
    int warmup = 3;
    bool check = false;
    uint64_t seed = 1;
    std::string format = "table";
    int ppn = 0;  // 0 = leave the topology to TUCOLL_PPN / MPI_Comm_split_type
    std::string mapping = "sequential";  // or "cyclic": neighbouring ranks on different nodes
    bool in_place = false;               // allgather(v): MPI_IN_PLACE
    std::string memory = "host";         // alltoall(v): "device" puts the buffers on the GPU (CUDA builds)
    bool persistent = false;             // alltoallv: tucoll_alltoallv_init once per spec and size, then start/wait
};

// The communicator a run uses: MPI_COMM_WORLD renumbered by `mapping`, with the nodes of the
// world ranks (from --ppn, TUCOLL_PPN or the machine) declared on it, so that hierarchical and
// locality-aware algorithms see where ranks really are. The caller frees it unless it is
// MPI_COMM_WORLD (sequential mapping).
int bench_communicator(const BenchOptions &options, MPI_Comm *out);

struct Row {
    std::string collective, algorithm, params, dist, type, path;
    std::string chosen;  // the spec that ran: the requested one, or a meta-algorithm's (auto) choice
    int nprocs = 0, ppn = 0, iters = 0;
    int64_t size = 0;
    double median_us = 0, min_us = 0, max_us = 0, mean_us = 0;
    std::string mapping = "sequential";
    int64_t rounds = 0, messages = 0, scratch_bytes = 0, bytes_sent = 0, temp_bytes = 0, staging_bytes = 0;
    int64_t inter_region_msgs = 0;  // reported for the sparse exchanges (last CSV column)
    int ok = -1;  // 1 / 0 when checked, -1 when not
    std::vector<std::pair<std::string, std::string>> extra;  // collective-specific columns, in order
    std::vector<double> calls_us;  // every timed iteration, the slowest rank's time (--format calls)
};

// nccl-tests' bandwidth columns (PERFORMANCE.md there): algbw_GBps, the bytes one rank sends
// (its own block included) over the median time, and busbw_GBps = algbw (P-1)/P, what crosses
// the network per rank.
void add_bandwidth_columns(Row &row, double bytes_per_rank, int nprocs);

// One collective as the runner sees it. Implementations hold inputs for the current size.
class Exchange {
  public:
    virtual ~Exchange() = default;
    virtual const char *collective() const = 0;
    virtual std::string prepare(int64_t size) = 0;     // "" or why the inputs cannot be built
    virtual int run(const std::string &spec) = 0;      // one tucoll call (MPI error code)
    // The program's own MPI call, not through tucoll (`--alg mpi`: the baseline of tucoll's
    // per-call overhead); MPI_ERR_OTHER where MPI has no such collective.
    virtual int run_plain() { return MPI_ERR_OTHER; }
    virtual int run_reference() = 0;                   // the vendor MPI, into the reference
    // Takes the output of the last run as the reference (the `vendor` candidate's); false when
    // this collective has no `vendor` algorithm.
    virtual bool can_capture_reference() const { return false; }
    virtual void capture_reference() {}
    virtual void reset_output() = 0;                   // sentinel bytes into the output
    virtual int64_t compare_with_reference() const = 0;  // first differing byte (or message), or -1
    virtual std::string workload() const { return ""; }  // dist column, when not --dist
    // Columns this collective appends to its CSV rows (after the common ones), for the current
    // inputs and a finished row; the names must not depend on the inputs.
    virtual void add_columns(Row &) const {}
};


// Runs every size and candidate; returns the rows (identical on every rank). Exits the job
// with a message when a call fails.
std::vector<Row> run_benchmark(Exchange &exchange, const BenchOptions &options, MPI_Comm comm);

// The candidates: the given specs, or every registered algorithm of `collective`.
std::vector<std::string> candidates(const char *collective, const BenchOptions &options);

}  // namespace tucoll::bench
