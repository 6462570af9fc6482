// Distributed sparse matrix-vector products y = A x (seed 004 §V). Rows of A and entries of x are
// split contiguously over the ranks. Forming the communication package — which entries of x each
// rank must send to whom — is a sparse dynamic data exchange: a rank knows which columns it needs
// from which owners, but no owner knows who needs its entries. tucoll_alltoallv_crs delivers each
// rank's list of needed columns to their owners (with the algorithm --crs-alg names); then every
// iteration exchanges exactly those entries with nonblocking point-to-point messages and multiplies.
// x is scaled by its largest entry after each product (a power iteration), and the final x is
// checked against the same iterations done serially on rank 0.
//
//   mpirun -np P spmv MATRIX.mtx [--crs-alg SPEC]... [--iterations N] [--format table|csv]
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "app_common.h"
#include "matrix.h"
#include "tucoll.h"

namespace {

using tucoll::bench::Partition;
using tucoll::bench::SparseMatrix;

// Who sends which entries of x to whom, from this rank's point of view.
struct Package {
    std::vector<int> recv_from;                 // owners this rank needs entries from, ascending
    std::vector<std::vector<int64_t>> recv_cols;  // their global columns, ascending
    std::vector<int> send_to;                   // ranks that need entries of this rank
    std::vector<std::vector<int64_t>> send_cols;  // which (global indices owned here)
};

// The package via the sparse exchange: each rank sends its needed columns to their owners.
int form_package(const SparseMatrix &a, const std::string &spec, MPI_Comm comm, Package *out) {
    int me = 0, p = 1;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &p);
    tucoll::bench::ColumnNeeds needs = tucoll::bench::needed_columns(a, me, p);
    std::vector<int> counts, displs;
    std::vector<long long> columns;
    for (const auto &list : needs.columns) {
        displs.push_back(static_cast<int>(columns.size()));
        counts.push_back(static_cast<int>(list.size()));
        columns.insert(columns.end(), list.begin(), list.end());
    }
    int recv_nnz = -1, recv_size = -1;
    int *src = nullptr, *rcounts = nullptr, *rdispls = nullptr;
    void *rvals = nullptr;
    const int rc = tucoll_alltoallv_crs_with(spec.c_str(), static_cast<int>(needs.owners.size()),
                                             static_cast<int>(columns.size()), needs.owners.data(), counts.data(),
                                             displs.data(), MPI_LONG_LONG, columns.data(), &recv_nnz, &recv_size, &src,
                                             &rcounts, &rdispls, MPI_LONG_LONG, &rvals, comm);
    if (rc != MPI_SUCCESS) return rc;
    out->recv_from = needs.owners;
    out->recv_cols = needs.columns;
    out->send_to.clear();
    out->send_cols.clear();
    const long long *values = static_cast<const long long *>(rvals);
    for (int i = 0; i < recv_nnz; ++i) {
        out->send_to.push_back(src[i]);
        out->send_cols.emplace_back(values + rdispls[i], values + rdispls[i] + rcounts[i]);
    }
    tucoll_free(src);
    tucoll_free(rcounts);
    tucoll_free(rdispls);
    tucoll_free(rvals);
    return MPI_SUCCESS;
}

// The halo exchange of one product: x's entries each needing rank gets, into recvbufs. By
// point-to-point messages to the package's neighbours, or — as codes that keep one collective per
// exchange do — by one MPI_Alltoallv whose counts are zero outside the package (which an
// interposer takes, and TUCOLL_RECORD records).
struct Halo {
    bool alltoallv = false;
    std::vector<int> scounts, sdispls, rcounts, rdispls;
    std::vector<double> packed_send, packed_recv;
    std::vector<MPI_Request> requests;

    void exchange(const Package &pkg, std::vector<std::vector<double>> &sendbufs,
                  std::vector<std::vector<double>> &recvbufs, MPI_Comm comm) {
        if (!alltoallv) {
            requests.clear();
            for (size_t k = 0; k < pkg.recv_from.size(); ++k) {
                requests.emplace_back();
                MPI_Irecv(recvbufs[k].data(), static_cast<int>(recvbufs[k].size()), MPI_DOUBLE, pkg.recv_from[k], 7,
                          comm, &requests.back());
            }
            for (size_t k = 0; k < pkg.send_to.size(); ++k) {
                requests.emplace_back();
                MPI_Isend(sendbufs[k].data(), static_cast<int>(sendbufs[k].size()), MPI_DOUBLE, pkg.send_to[k], 7,
                          comm, &requests.back());
            }
            MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
            return;
        }
        int p = 1;
        MPI_Comm_size(comm, &p);
        scounts.assign(p, 0);
        rcounts.assign(p, 0);
        sdispls.assign(p, 0);
        rdispls.assign(p, 0);
        packed_send.clear();
        for (size_t k = 0; k < pkg.send_to.size(); ++k) {
            scounts[pkg.send_to[k]] = static_cast<int>(sendbufs[k].size());
            sdispls[pkg.send_to[k]] = static_cast<int>(packed_send.size());
            packed_send.insert(packed_send.end(), sendbufs[k].begin(), sendbufs[k].end());
        }
        int received = 0;
        for (size_t k = 0; k < pkg.recv_from.size(); ++k) {
            rcounts[pkg.recv_from[k]] = static_cast<int>(recvbufs[k].size());
            rdispls[pkg.recv_from[k]] = received;
            received += static_cast<int>(recvbufs[k].size());
        }
        packed_recv.resize(static_cast<size_t>(received) + 1);
        packed_send.push_back(0.0);  // never an empty vector's null data()
        MPI_Alltoallv(packed_send.data(), scounts.data(), sdispls.data(), MPI_DOUBLE, packed_recv.data(),
                      rcounts.data(), rdispls.data(), MPI_DOUBLE, comm);
        for (size_t k = 0; k < pkg.recv_from.size(); ++k) {
            std::copy_n(packed_recv.begin() + rdispls[pkg.recv_from[k]], recvbufs[k].size(), recvbufs[k].begin());
        }
    }
};

// `iterations` products with the package; returns this rank's part of the final x.
std::vector<double> iterate(const SparseMatrix &a, const Package &pkg, int iterations, Halo &halo, MPI_Comm comm) {
    int me = 0, p = 1;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &p);
    const Partition rows{a.rows, p}, cols{a.cols, p};
    const int64_t first = cols.first(me), n = cols.count(me);
    std::vector<double> x(n), full(a.cols, 0.0);
    for (int64_t i = 0; i < n; ++i) x[i] = 1.0 + static_cast<double>((first + i) % 7) / 7.0;
    std::vector<std::vector<double>> sendbufs(pkg.send_to.size()), recvbufs(pkg.recv_from.size());
    for (int it = 0; it < iterations; ++it) {
        for (size_t k = 0; k < pkg.recv_from.size(); ++k) recvbufs[k].resize(pkg.recv_cols[k].size());
        for (size_t k = 0; k < pkg.send_to.size(); ++k) {
            sendbufs[k].clear();
            for (int64_t c : pkg.send_cols[k]) sendbufs[k].push_back(x[c - first]);
        }
        halo.exchange(pkg, sendbufs, recvbufs, comm);
        std::copy(x.begin(), x.end(), full.begin() + first);
        for (size_t k = 0; k < pkg.recv_from.size(); ++k) {
            for (size_t j = 0; j < pkg.recv_cols[k].size(); ++j) full[pkg.recv_cols[k][j]] = recvbufs[k][j];
        }
        std::vector<double> y(rows.count(me), 0.0);
        for (int64_t r = rows.first(me); r < rows.first(me + 1); ++r) {
            for (int64_t k = a.rowptr[r]; k < a.rowptr[r + 1]; ++k) y[r - rows.first(me)] += a.values[k] * full[a.colind[k]];
        }
        double local = 0, global = 0;
        for (double v : y) local = std::max(local, std::fabs(v));
        MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_MAX, comm);
        // y has A's row partition and x the column partition; for a square A they are the same.
        for (int64_t i = 0; i < n; ++i) x[i] = global > 0 ? y[i] / global : y[i];
    }
    return x;
}

std::vector<double> serial(const SparseMatrix &a, int iterations) {
    std::vector<double> x(a.cols);
    for (int64_t i = 0; i < a.cols; ++i) x[i] = 1.0 + static_cast<double>(i % 7) / 7.0;
    for (int it = 0; it < iterations; ++it) {
        std::vector<double> y(a.rows, 0.0);
        double top = 0;
        for (int64_t r = 0; r < a.rows; ++r) {
            for (int64_t k = a.rowptr[r]; k < a.rowptr[r + 1]; ++k) y[r] += a.values[k] * x[a.colind[k]];
            top = std::max(top, std::fabs(y[r]));
        }
        for (int64_t i = 0; i < a.rows; ++i) x[i] = top > 0 ? y[i] / top : y[i];
    }
    return x;
}

}  // namespace

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me = 0, p = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    CLI::App app{"Distributed SpMV: the communication package formed by tucoll's sparse dynamic data exchange, then "
                 "iterations checked against a serial computation."};
    std::string path, format = "table";
    std::vector<std::string> algs;
    int iterations = 10;
    std::string halo_by = "p2p";
    app.add_option("matrix", path, "square Matrix Market file")->required();
    app.add_option("--halo", halo_by, "the iterations' halo exchange: p2p (Isend/Irecv to the package's neighbours) "
                                      "or alltoallv (one MPI_Alltoallv, zero counts outside the package)")
        ->check(CLI::IsMember({"p2p", "alltoallv"}));
    app.add_option("--crs-alg", algs, "alltoallv_crs algorithm forming the package (repeatable; default: the default)");
    app.add_option("--iterations", iterations, "products y = A x")->check(CLI::PositiveNumber);
    app.add_option("--format", format, "table or csv")->check(CLI::IsMember({"table", "csv"}));
    if (const int rc = tucoll::apps::parse_arguments(app, argc, argv); rc >= 0) {
        MPI_Finalize();
        return rc;
    }
    if (algs.empty()) algs = {""};
    SparseMatrix a;
    std::string err = tucoll::bench::read_matrix_market(path, &a);
    if (err.empty() && a.rows != a.cols) err = path + " is not square";
    const int failing = tucoll::apps::first_failing_rank(err.empty());
    if (failing >= 0 || !tucoll::apps::valid_specs("spmv", "alltoallv_crs", algs)) {
        if (me == failing) std::fprintf(stderr, "spmv: %s\n", err.c_str());
        MPI_Finalize();
        return 2;
    }
    const std::vector<double> expected = me == 0 ? serial(a, iterations) : std::vector<double>();
    const Partition cols{a.cols, p};
    const std::string name = path.substr(path.rfind('/') + 1);
    if (me == 0) {
        if (format == "csv") std::printf("matrix,rows,nnz,nprocs,crs_algorithm,ran,messages,package_s,iterations,iterate_s,max_error,ok\n");
        else std::printf("%-16s %-18s %9s %12s %11s %12s %10s %3s\n", "matrix", "package by", "messages",
                         "package_s", "iterations", "iterate_s", "max_error", "ok");
    }
    int all_ok = 1;
    for (const std::string &spec : algs) {
        Package pkg;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        const int rc = form_package(a, spec, MPI_COMM_WORLD, &pkg);
        double package_s = MPI_Wtime() - t0;
        if (rc != MPI_SUCCESS) {
            std::fprintf(stderr, "spmv: rank %d: %s\n", me, tucoll_error_string(rc));
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        tucoll_stats_t stats;
        const std::string ran = tucoll_get_stats(MPI_COMM_WORLD, &stats) == MPI_SUCCESS ? stats.algorithm : spec;
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        Halo halo;
        halo.alltoallv = halo_by == "alltoallv";
        const std::vector<double> x = iterate(a, pkg, iterations, halo, MPI_COMM_WORLD);
        double iterate_s = MPI_Wtime() - t0;
        double times[2] = {package_s, iterate_s}, slowest[2];
        MPI_Reduce(times, slowest, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        int messages = static_cast<int>(pkg.recv_from.size()), total_messages = 0;
        MPI_Reduce(&messages, &total_messages, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
        std::vector<int> counts(p), displs(p);
        for (int r = 0; r < p; ++r) {
            counts[r] = static_cast<int>(cols.count(r));
            displs[r] = static_cast<int>(cols.first(r));
        }
        std::vector<double> gathered(me == 0 ? a.cols : 1);
        MPI_Gatherv(x.data(), static_cast<int>(x.size()), MPI_DOUBLE, gathered.data(), counts.data(), displs.data(),
                    MPI_DOUBLE, 0, MPI_COMM_WORLD);
        int ok = 1;
        if (me == 0) {
            double worst = 0;
            for (int64_t i = 0; i < a.cols; ++i) worst = std::max(worst, std::fabs(gathered[i] - expected[i]));
            ok = worst <= 1e-9;
            const std::string by = ran.empty() ? "default" : ran;
            if (format == "csv") {
                std::printf("%s,%lld,%zu,%d,\"%s\",\"%s\",%d,%.6e,%d,%.6e,%.3e,%d\n", name.c_str(), static_cast<long long>(a.rows),
                            a.colind.size(), p, spec.empty() ? "default" : spec.c_str(), by.c_str(), total_messages,
                            slowest[0], iterations, slowest[1], worst, ok);
            } else {
                std::printf("%-16s %-18s %9d %12.6f %11d %12.6f %10.2e %3d\n", name.c_str(), by.c_str(), total_messages,
                            slowest[0], iterations, slowest[1], worst, ok);
            }
        }
        MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
        all_ok &= ok;
    }
    MPI_Finalize();
    return all_ok ? 0 : 1;
}
