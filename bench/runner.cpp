#include "runner.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>

#include "node_rank.h"
#include "tucoll.h"

#define TUCOLL_BENCH_TRY(call)                  \
    do {                                        \
        const int rc_ = (call);                 \
        if (rc_ != MPI_SUCCESS) return rc_;     \
    } while (0)

namespace tucoll::bench {
namespace {

[[noreturn]] void abort_job(MPI_Comm comm, const std::string &message) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    std::fprintf(stderr, "tucoll-bench: rank %d: %s\n", rank, message.c_str());
    std::fflush(stderr);
    MPI_Abort(comm, 2);
    std::abort();
}

// For errors every rank knows about (agreed by an allreduce): a clean exit, not MPI_Abort,
// under which some launchers (MPICH's hydra) drop the message still in flight to stderr.
[[noreturn]] void exit_together(MPI_Comm comm, const std::string &message, bool mine) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    if (mine || rank == 0) {
        std::fprintf(stderr, "tucoll-bench: rank %d: %s\n", rank, message.c_str());
        std::fflush(stderr);
    }
    MPI_Finalize();
    std::exit(2);
}

void call_or_abort(MPI_Comm comm, int rc, const std::string &what) {
    if (rc != MPI_SUCCESS) abort_job(comm, what + ": " + tucoll_error_string(rc));
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The clock calls are timed on, in seconds, and whether all ranks read the same one (shared):
// MPI_Wtime where the MPI says it is one clock for all (MPI_WTIME_IS_GLOBAL: SMPI's simulated
// clock); else, with every rank on one node, the node's monotonic clock (Open MPI 4.1 counts
// MPI_Wtime from each process's own start), from the earliest rank's reading here so that a
// double keeps its nanoseconds; else each rank's own MPI_Wtime.
class CallClock {
  public:
    explicit CallClock(MPI_Comm comm) {
        int *global = nullptr, flag = 0;
        MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &global, &flag);
        if (flag && *global) {
            shared_ = true;
        } else if (on_one_node(comm)) {
            shared_ = monotonic_ = true;
            const int64_t mine = monotonic_ns();
            MPI_Allreduce(&mine, &base_, 1, MPI_INT64_T, MPI_MIN, comm);
        }
    }
    double now() const { return monotonic_ ? 1e-9 * static_cast<double>(monotonic_ns() - base_) : MPI_Wtime(); }
    bool shared() const { return shared_; }

  private:
    bool shared_ = false, monotonic_ = false;
    int64_t base_ = 0;
};

// Largest value over ranks of each statistic of the last call of `requested`.
void reduce_stats(MPI_Comm comm, const std::string &requested, Row *row) {
    tucoll_stats_t s;
    if (tucoll_get_stats(comm, &s) != MPI_SUCCESS) return;
    int64_t local[7] = {s.rounds,     s.messages,      s.scratch_bytes,          s.bytes_sent,
                        s.temp_bytes, s.staging_bytes, s.inter_region_messages},
            global[7];
    MPI_Allreduce(local, global, 7, MPI_INT64_T, MPI_MAX, comm);
    row->rounds = global[0];
    row->messages = global[1];
    row->scratch_bytes = global[2];
    row->bytes_sent = global[3];
    row->temp_bytes = global[4];
    row->staging_bytes = global[5];
    row->inter_region_msgs = global[6];
    // The row is named after what ran, parameters resolved; a meta-algorithm (auto) keeps its own
    // name and reports its choice in `chosen`.
    row->chosen = s.algorithm;
    const std::string &spec = requested.substr(0, requested.find(':')) == row->chosen.substr(0, row->chosen.find(':'))
                                  ? row->chosen
                                  : requested;
    const size_t colon = spec.find(':');
    row->algorithm = spec.substr(0, colon);
    row->params = colon == std::string::npos ? "" : spec.substr(colon + 1);
    row->path = s.path;
}

}  // namespace

std::vector<std::string> candidates(const char *collective, const BenchOptions &options) {
    if (!options.algs.empty()) return options.algs;
    std::vector<std::string> all;
    const int n = tucoll_num_algorithms(collective);
    for (int i = 0; i < n; ++i) all.emplace_back(tucoll_algorithm_name(collective, i));
    return all;
}

int bench_communicator(const BenchOptions &options, MPI_Comm *out) {
    if (options.ppn > 0) TUCOLL_BENCH_TRY(tucoll_comm_set_ppn(MPI_COMM_WORLD, options.ppn));
    tucoll_topology_t world;
    TUCOLL_BENCH_TRY(tucoll_comm_get_topology(MPI_COMM_WORLD, &world));
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (options.mapping != "cyclic") {
        // Sequential is the world's own order (creating communicators is costly in simulation).
        *out = MPI_COMM_WORLD;
        return MPI_SUCCESS;
    }
    // Cyclic orders ranks by local index first, so rank r+1 sits on the next node; the new
    // communicator is told where its ranks really are.
    const int key = world.local_rank * world.num_nodes + world.node;
    TUCOLL_BENCH_TRY(MPI_Comm_split(MPI_COMM_WORLD, 0, key, out));
    return tucoll_comm_set_node(*out, world.node);
}

std::vector<Row> run_benchmark(Exchange &exchange, const BenchOptions &options, MPI_Comm comm) {
    int rank = 0, nprocs = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &nprocs);
    const std::vector<std::string> specs = candidates(exchange.collective(), options);
    for (const std::string &spec : specs) {
        if (spec == kPlainMpi) continue;
        // Every rank checks the same spec against the same registry: all know, so all exit cleanly
        // (under MPI_Abort MPICH's hydra can drop the message; seen in a CI run).
        const int rc = tucoll_check_spec(exchange.collective(), spec.c_str(), nprocs);
        if (rc != MPI_SUCCESS) exit_together(comm, "--alg " + spec + ": " + tucoll_error_string(rc), false);
    }
    tucoll_topology_t topo;
    call_or_abort(comm, tucoll_comm_get_topology(comm, &topo), "topology");
    // Each rank's clock starts as it leaves the barrier, and a call's time is the slowest rank's:
    // it holds how far apart the ranks left the barrier. Where the ranks read one clock, a call
    // is also timed from the last rank's exit (from_last_exit_us), free of that skew.
    const CallClock clock(comm);

    std::vector<int64_t> sizes = options.sizes.empty() ? std::vector<int64_t>{options.size} : options.sizes;
    std::vector<Row> rows;
    for (int64_t size : sizes) {
        std::string err = exchange.prepare(size);
        int bad = !err.empty(), any_bad = 0;
        MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, comm);
        if (any_bad) exit_together(comm, err.empty() ? "another rank could not build its inputs" : err, bad != 0);

        std::vector<Row> batch(specs.size());
        for (size_t a = 0; a < specs.size(); ++a) {
            Row &row = batch[a];
            row.collective = exchange.collective();
            row.nprocs = nprocs;
            row.ppn = topo.ppn > 0 ? topo.ppn : topo.max_local_size;
            row.dist = exchange.workload().empty() ? options.dist : exchange.workload();
            row.size = size;
            row.type = options.type;
            row.iters = options.iters;
            row.mapping = options.mapping;
        }
        // Results are checked on each candidate's last timed call. The reference is the `vendor`
        // candidate's own result when it is among them (it runs first), else one extra exchange
        // through the MPI library before the timed loop (its collective; for the sparse
        // exchanges, which have none, its MPI_Alltoall of counts and point-to-point messages).
        size_t vendor = specs.size();
        for (size_t a = 0; a < specs.size(); ++a) {
            if (specs[a] == "vendor") vendor = a;
        }
        const bool vendor_is_reference = options.check && vendor < specs.size() && exchange.can_capture_reference();
        if (options.check && !vendor_is_reference) call_or_abort(comm, exchange.run_reference(), "vendor reference");
        std::vector<size_t> order;
        if (vendor_is_reference) order.push_back(vendor);
        for (size_t a = 0; a < specs.size(); ++a) {
            if (!vendor_is_reference || a != vendor) order.push_back(a);
        }
        // Interleaved: every iteration runs every candidate once, so machine noise hits all alike.
        std::vector<std::vector<double>> starts(specs.size(), std::vector<double>(options.iters)),
            ends = starts;  // each rank's own clock.now()
        // auto's own cost at this shape, timed beside the candidates: the reduction it adds to a
        // call where its table entry depends on the workload and every feature is a maximum
        // (two doubles, MPI_MAX; see auto.cpp). A table keyed by mean_block makes auto reduce an
        // 8-double record with a user operation instead, which this does not time. `tucoll
        // table` charges it to every choice that needs it.
        const bool time_reduction = std::string(exchange.collective()) == "alltoallv";
        std::vector<double> reduction(options.iters);
        for (int it = -options.warmup; it < options.iters; ++it) {
            const bool last = it == options.iters - 1;
            // The order turns by one each iteration, so that no candidate always runs first (just
            // after the previous iteration's last one) or last; the last iteration keeps the
            // original order, so the vendor's result is the reference before the others run.
            const size_t turn = static_cast<size_t>(options.iters - 1 - it) % order.size();
            std::vector<size_t> turned(order.begin() + static_cast<std::ptrdiff_t>(turn), order.end());
            turned.insert(turned.end(), order.begin(), order.begin() + static_cast<std::ptrdiff_t>(turn));
            for (size_t a : turned) {
                if (last && options.check) exchange.reset_output();
                MPI_Barrier(comm);
                const double t0 = clock.now();
                const bool plain = specs[a] == kPlainMpi;
                const int rc = plain ? exchange.run_plain() : exchange.run(specs[a]);
                const double t1 = clock.now();
                call_or_abort(comm, rc, plain ? "--alg mpi (the plain MPI call)" : specs[a]);
                if (it >= 0) {
                    starts[a][it] = t0;
                    ends[a][it] = t1;
                }
                if (!last) continue;
                if (plain) {
                    batch[a].algorithm = batch[a].chosen = kPlainMpi;
                    batch[a].path = "the plain MPI call, not through tucoll";
                } else {
                    reduce_stats(comm, specs[a], &batch[a]);
                }
                if (!options.check) continue;
                if (vendor_is_reference && a == vendor) {
                    exchange.capture_reference();
                    batch[a].ok = 1;
                    continue;
                }
                const int64_t diff = exchange.compare_with_reference();
                if (diff >= 0) {
                    std::fprintf(stderr, "tucoll-bench: rank %d: %s differs from the vendor result at %lld\n", rank,
                                 specs[a].c_str(), static_cast<long long>(diff));
                }
                int ok = diff < 0, all_ok = 0;
                MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, comm);
                batch[a].ok = all_ok;
            }
            if (time_reduction) {
                double features[2] = {static_cast<double>(rank), static_cast<double>(it)}, agreed[2];
                MPI_Barrier(comm);
                const double t0 = MPI_Wtime();
                MPI_Allreduce(features, agreed, 2, MPI_DOUBLE, MPI_MAX, comm);
                if (it >= 0) reduction[it] = MPI_Wtime() - t0;
            }
        }
        std::string reduction_us;
        if (time_reduction) {
            std::vector<double> slowest(options.iters);
            MPI_Allreduce(reduction.data(), slowest.data(), options.iters, MPI_DOUBLE, MPI_MAX, comm);
            char text[32];
            std::snprintf(text, sizeof text, "%.3f", median(slowest) * 1e6);
            reduction_us = text;
        }
        for (size_t a = 0; a < specs.size(); ++a) {
            Row &row = batch[a];
            std::vector<double> local(options.iters), slowest(options.iters);
            for (int it = 0; it < options.iters; ++it) local[it] = ends[a][it] - starts[a][it];
            MPI_Allreduce(local.data(), slowest.data(), options.iters, MPI_DOUBLE, MPI_MAX, comm);
            row.median_us = median(slowest) * 1e6;
            row.min_us = *std::min_element(slowest.begin(), slowest.end()) * 1e6;
            row.max_us = *std::max_element(slowest.begin(), slowest.end()) * 1e6;
            row.mean_us = std::accumulate(slowest.begin(), slowest.end(), 0.0) / slowest.size() * 1e6;
            for (double t : slowest) row.calls_us.push_back(t * 1e6);
            exchange.add_columns(row);  // after the times: the bandwidth columns are computed from them
            if (time_reduction) row.extra.emplace_back("auto_reduction_us", reduction_us);
            if (clock.shared()) {
                std::vector<double> last_start(options.iters), from_last(options.iters);
                MPI_Allreduce(starts[a].data(), last_start.data(), options.iters, MPI_DOUBLE, MPI_MAX, comm);
                MPI_Allreduce(ends[a].data(), from_last.data(), options.iters, MPI_DOUBLE, MPI_MAX, comm);
                for (int it = 0; it < options.iters; ++it) from_last[it] -= last_start[it];
                char text[32];
                std::snprintf(text, sizeof text, "%.3f", median(from_last) * 1e6);
                row.extra.emplace_back("from_last_exit_us", text);
            }
            rows.push_back(row);
        }
    }
    return rows;
}

void add_bandwidth_columns(Row &row, double bytes_per_rank, int nprocs) {
    const double seconds = row.median_us * 1e-6;
    const double algbw = seconds > 0 ? bytes_per_rank / seconds / 1e9 : 0.0;
    char text[32];
    std::snprintf(text, sizeof text, "%.4g", algbw);
    row.extra.emplace_back("algbw_GBps", text);
    std::snprintf(text, sizeof text, "%.4g", nprocs > 0 ? algbw * (nprocs - 1) / nprocs : 0.0);
    row.extra.emplace_back("busbw_GBps", text);
}

}  // namespace tucoll::bench
