// Distributed transitive closure of a graph: the semi-naive fixed point of a relational join, as in
// seed 000 §VI-B. Relations are hash-partitioned over the ranks; each iteration joins the new paths
// Δ(x, y) with the edges G(y, z) where both live (on the owner of y) and shuffles the results
// (x, z) to the owner of z with one alltoallv, where they are deduplicated against T, the paths
// known so far; the new ones are the next Δ. The fixed point is reached when no rank finds a
// new path.
//
//   mpirun -np P transitive_closure GRAPH.mtx [--alg SPEC]... [--repeat R] [--check] [--format table|csv]
//
// Each --alg runs the whole closure with that alltoallv (a tucoll spec, or `mpi` for a plain
// MPI_Alltoallv call, which an interposer may take); --repeat alternates them R times and reports
// the median. --check compares the closure with a serial computation on rank 0 (small graphs).
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <unordered_set>
#include <vector>

#include "app_common.h"
#include "matrix.h"
#include "tucoll.h"
#include "workload.h"  // mix()

namespace {

using Path = uint64_t;  // (x << 32) | y
constexpr Path make_path(uint32_t x, uint32_t y) { return static_cast<Path>(x) << 32 | y; }
constexpr uint32_t source(Path p) { return static_cast<uint32_t>(p >> 32); }
constexpr uint32_t target(Path p) { return static_cast<uint32_t>(p); }

int owner(uint32_t vertex, int nprocs) { return static_cast<int>(tucoll::bench::mix(vertex) % nprocs); }

// Order-independent fingerprint of a set of paths, summed over ranks.
uint64_t fingerprint(Path p) { return tucoll::bench::mix(p ^ 0x5bd1e995ULL); }

struct Graph {
    int64_t vertices = 0;
    std::vector<std::pair<uint32_t, uint32_t>> edges;  // off-diagonal entries, symmetric ones both ways
};

std::string read_graph(const std::string &path, Graph *g) {
    tucoll::bench::SparseMatrix a;
    std::string err = tucoll::bench::read_matrix_market(path, &a);
    if (!err.empty()) return err;
    if (a.rows != a.cols) return path + " is not square (" + std::to_string(a.rows) + " x " + std::to_string(a.cols) + ")";
    if (a.rows >= (int64_t{1} << 32)) return path + " has too many vertices";
    g->vertices = a.rows;
    for (int64_t i = 0; i < a.rows; ++i) {
        for (int64_t k = a.rowptr[i]; k < a.rowptr[i + 1]; ++k) {
            if (a.colind[k] != i) g->edges.emplace_back(static_cast<uint32_t>(i), static_cast<uint32_t>(a.colind[k]));
        }
    }
    return "";
}

struct Outcome {
    int iterations = 0;
    uint64_t paths = 0, print = 0;  // global size and fingerprint of T
    double total_s = 0, comm_s = 0;  // slowest rank
    std::string chosen;  // what the alltoallv ran on the last iteration (rank 0)
};

// One closure; `spec` is a tucoll spec or "mpi".
Outcome closure(const Graph &g, const std::string &spec, MPI_Comm comm) {
    int me = 0, p = 1;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &p);
    MPI_Barrier(comm);
    const double start = MPI_Wtime();
    double comm_time = 0;

    // G by source, adjacency lists of the vertices this rank owns; T and Δ by target.
    std::vector<std::vector<uint32_t>> adjacency(g.vertices);
    std::unordered_set<Path> known;
    std::vector<Path> delta;
    for (auto [x, y] : g.edges) {
        if (owner(x, p) == me) adjacency[x].push_back(y);
        if (owner(y, p) == me && known.insert(make_path(x, y)).second) delta.push_back(make_path(x, y));
    }
    std::vector<int> scounts(p), sdispls(p), rcounts(p), rdispls(p);
    std::vector<std::vector<Path>> outbox(p);
    std::vector<Path> sendbuf, recvbuf;
    Outcome out;
    for (;;) {
        // Join Δ(x, y) with G(y, z): the owner of y holds both.
        for (auto &box : outbox) box.clear();
        for (Path d : delta) {
            for (uint32_t z : adjacency[target(d)]) outbox[owner(z, p)].push_back(make_path(source(d), z));
        }
        sendbuf.clear();
        for (int j = 0; j < p; ++j) {
            sdispls[j] = static_cast<int>(sendbuf.size());
            scounts[j] = static_cast<int>(outbox[j].size());
            sendbuf.insert(sendbuf.end(), outbox[j].begin(), outbox[j].end());
        }
        const double t0 = MPI_Wtime();
        MPI_Alltoall(scounts.data(), 1, MPI_INT, rcounts.data(), 1, MPI_INT, comm);
        int total = 0;
        for (int j = 0; j < p; ++j) {
            rdispls[j] = total;
            total += rcounts[j];
        }
        recvbuf.resize(static_cast<size_t>(total) + 1);
        const int rc = spec == "mpi"
                           ? MPI_Alltoallv(sendbuf.data(), scounts.data(), sdispls.data(), MPI_UINT64_T, recvbuf.data(),
                                           rcounts.data(), rdispls.data(), MPI_UINT64_T, comm)
                           : tucoll_alltoallv_with(spec.c_str(), sendbuf.data(), scounts.data(), sdispls.data(),
                                                   MPI_UINT64_T, recvbuf.data(), rcounts.data(), rdispls.data(),
                                                   MPI_UINT64_T, comm);
        comm_time += MPI_Wtime() - t0;
        if (rc != MPI_SUCCESS) {
            std::fprintf(stderr, "transitive_closure: rank %d: %s: %s\n", me, spec.c_str(), tucoll_error_string(rc));
            MPI_Abort(comm, 2);
        }
        ++out.iterations;
        // New paths end on this rank's vertices: deduplicate against T.
        delta.clear();
        for (int k = 0; k < total; ++k) {
            if (known.insert(recvbuf[k]).second) delta.push_back(recvbuf[k]);
        }
        int64_t found = static_cast<int64_t>(delta.size()), any = 0;
        MPI_Allreduce(&found, &any, 1, MPI_INT64_T, MPI_SUM, comm);
        if (any == 0) break;
    }
    const double local[2] = {MPI_Wtime() - start, comm_time};
    double slowest[2];
    MPI_Reduce(local, slowest, 2, MPI_DOUBLE, MPI_MAX, 0, comm);
    uint64_t mine[2] = {known.size(), 0}, all[2];
    for (Path t : known) mine[1] += fingerprint(t);
    MPI_Reduce(mine, all, 2, MPI_UINT64_T, MPI_SUM, 0, comm);
    out.total_s = slowest[0];
    out.comm_s = slowest[1];
    out.paths = all[0];
    out.print = all[1];
    tucoll_stats_t stats;
    out.chosen = spec == "mpi" ? "MPI_Alltoallv"
                 : tucoll_get_stats(comm, &stats) == MPI_SUCCESS ? stats.algorithm
                                                                  : spec;
    return out;
}

// The closure by breadth-first search from every vertex (rank 0, for --check).
std::pair<uint64_t, uint64_t> serial_closure(const Graph &g) {
    std::vector<std::vector<uint32_t>> adjacency(g.vertices);
    for (auto [x, y] : g.edges) adjacency[x].push_back(y);
    uint64_t count = 0, print = 0;
    std::vector<int64_t> seen(g.vertices, -1);
    std::vector<uint32_t> frontier;
    for (uint32_t x = 0; x < g.vertices; ++x) {
        frontier.assign(adjacency[x].begin(), adjacency[x].end());
        while (!frontier.empty()) {
            const uint32_t y = frontier.back();
            frontier.pop_back();
            if (seen[y] == x) continue;
            seen[y] = x;
            ++count;
            print += fingerprint(make_path(x, y));
            for (uint32_t z : adjacency[y]) {
                if (seen[z] != x) frontier.push_back(z);
            }
        }
    }
    return {count, print};
}

using tucoll::apps::median;

}  // namespace

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me = 0, p = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    CLI::App app{"Distributed transitive closure (semi-naive, one alltoallv shuffle per iteration) of a Matrix "
                 "Market graph, timed per alltoallv algorithm."};
    std::string graph_path, format = "table";
    std::vector<std::string> algs;
    int repeat = 1;
    bool check = false;
    app.add_option("graph", graph_path, "Matrix Market file: entry (i, j) is an edge i -> j (symmetric files both ways)")
        ->required();
    app.add_option("--alg", algs, "alltoallv to shuffle with: a tucoll spec, or `mpi` for MPI_Alltoallv itself "
                                  "(repeatable; default: auto)");
    app.add_option("--repeat", repeat, "run every algorithm this many times, alternating; report medians")
        ->check(CLI::PositiveNumber);
    app.add_flag("--check", check, "compare with a serial closure on rank 0 (exit 1 on a mismatch)");
    app.add_option("--format", format, "table or csv")->check(CLI::IsMember({"table", "csv"}));
    if (const int rc = tucoll::apps::parse_arguments(app, argc, argv); rc >= 0) {
        MPI_Finalize();
        return rc;
    }
    if (algs.empty()) algs = {"auto"};
    Graph g;
    const std::string err = read_graph(graph_path, &g);
    const int failing = tucoll::apps::first_failing_rank(err.empty());
    if (failing >= 0 || !tucoll::apps::valid_specs("transitive_closure", "alltoallv", algs, {"mpi"})) {
        if (me == failing) std::fprintf(stderr, "transitive_closure: %s\n", err.c_str());
        MPI_Finalize();
        return 2;
    }
    std::vector<std::vector<Outcome>> runs(algs.size());
    for (int r = 0; r < repeat; ++r) {
        for (size_t a = 0; a < algs.size(); ++a) runs[a].push_back(closure(g, algs[a], MPI_COMM_WORLD));
    }
    int ok = 1;
    std::pair<uint64_t, uint64_t> expected{0, 0};
    if (check && me == 0) expected = serial_closure(g);
    if (me == 0) {
        const std::string name = graph_path.substr(graph_path.rfind('/') + 1);
        if (format == "csv") {
            std::printf("graph,vertices,edges,nprocs,algorithm,chosen,iterations,paths,repeats,total_s,comm_s,ok\n");
        } else {
            std::printf("transitive closure of %s (%lld vertices, %zu edges), P=%d, median of %d run(s)\n", name.c_str(),
                        static_cast<long long>(g.vertices), g.edges.size(), p, repeat);
            std::printf("%-40s %-36s %10s %12s %11s %11s %5s\n", "alltoallv", "ran", "iterations", "paths",
                        "total_s", "comm_s", "ok");
        }
        for (size_t a = 0; a < algs.size(); ++a) {
            const Outcome &first = runs[a].front();
            std::vector<double> total, comm;
            int same = 1;
            for (const Outcome &o : runs[a]) {
                total.push_back(o.total_s);
                comm.push_back(o.comm_s);
                same &= o.paths == first.paths && o.print == first.print;
            }
            const int correct = !check || (first.paths == expected.first && first.print == expected.second);
            ok &= correct && same;
            const std::string ok_text = check ? (correct && same ? "1" : "0") : "-";
            if (format == "csv") {
                std::printf("%s,%lld,%zu,%d,\"%s\",\"%s\",%d,%llu,%d,%.6f,%.6f,%s\n", name.c_str(),
                            static_cast<long long>(g.vertices), g.edges.size(), p, algs[a].c_str(),
                            first.chosen.c_str(), first.iterations, static_cast<unsigned long long>(first.paths), repeat,
                            median(total), median(comm), ok_text.c_str());
            } else {
                std::printf("%-40s %-36s %10d %12llu %11.4f %11.4f %5s\n", algs[a].c_str(), first.chosen.c_str(),
                            first.iterations, static_cast<unsigned long long>(first.paths), median(total), median(comm),
                            ok_text.c_str());
            }
        }
        if (check && !ok) {
            std::fprintf(stderr, "transitive_closure: expected %llu paths (fingerprint %llx)\n",
                         static_cast<unsigned long long>(expected.first), static_cast<unsigned long long>(expected.second));
        }
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return ok ? 0 : 1;
}
