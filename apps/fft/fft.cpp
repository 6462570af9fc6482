// A distributed 3-D complex FFT on the two non-uniform problem sizes of seed 000 §VI-A, with the
// data laid out by FFTW's MPI interface (slabs of the first dimension, fftw_mpi_local_size_3d):
//
//   N1: n0 = ceil(0.625 P), n1 = ceil(0.78125 P), n2 = 8 — only the first n0 ranks hold data and
//       each sends n2 values to the first n1 ranks (the `fft1` pattern);
//   N2: n0 = 4P - 3, n1 = P, n2 = 8 — every rank sends 4 rows to every rank, the last one 1 row
//       (`fft2`).
//
// Two ways to transform (both checked against a serial FFTW transform gathered on rank 0):
//   --transpose alltoallv (default): local 2-D FFTs of each n0 plane, the n0 <-> n1 transpose as one
//       non-uniform alltoallv (the transpose FFTW's own `mpi-transpose-alltoall` solver performs),
//       then the 1-D FFTs along n0; output transposed (n1 distributed), as FFTW_MPI_TRANSPOSED_OUT.
//       --alg SPEC selects tucoll's algorithm; `mpi` calls MPI_Alltoallv itself, which the
//       interposer (libtucoll_preload) routes through tucoll.
//   --transpose fftw: fftw_mpi_plan_dft_3d (FFTW_MEASURE) plans everything itself; it chooses among
//       its pairwise and all-to-all transposes (the latter through the interposer, if preloaded)
//       and the program reports which it took.
#include <fftw3-mpi.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "app_common.h"
#include "tucoll.h"

namespace {

struct Shape {
    std::string name;
    ptrdiff_t n0, n1, n2;
};

Shape problem(const std::string &name, int p) {
    if (name == "N1") return {name, static_cast<ptrdiff_t>(std::ceil(0.625 * p)), static_cast<ptrdiff_t>(std::ceil(0.78125 * p)), 8};
    return {name, 4 * static_cast<ptrdiff_t>(p) - 3, p, 8};
}

// Deterministic input value of global element (i0, i1, i2).
std::complex<double> input(ptrdiff_t i0, ptrdiff_t i1, ptrdiff_t i2) {
    const double x = static_cast<double>((i0 * 7919 + i1 * 104729 + i2 * 1299709) % 1000003) / 1000003.0;
    return {std::sin(6.0 * x) + 0.25, std::cos(11.0 * x) - 0.5 * x};
}

fftw_complex *as_fftw(std::complex<double> *p) { return reinterpret_cast<fftw_complex *>(p); }

// The block distribution of FFTW's MPI interface along a dimension of n: block b = ceil(n / P),
// rank r holds [r b, min(n, (r + 1) b)).
struct Blocks {
    ptrdiff_t n, b;
    int p;
    ptrdiff_t first(int r) const { return std::min(n, r * b); }
    ptrdiff_t count(int r) const { return std::min(n, (r + 1) * b) - first(r); }
};

struct Result {
    double seconds = 0, comm_seconds = 0;  // slowest rank
    std::string ran;
    double max_error = 0;  // on rank 0, against the serial transform
    bool planned = true;   // false when FFTW could not plan the transform (nothing was run)
};

// Gathers the output — each rank's [local n1][n0][n2] slab (transposed layout) — on rank 0 and
// compares it with a serial 3-D FFT of the whole input.
double max_error(const Shape &s, const Blocks &cols, const std::vector<std::complex<double>> &out, MPI_Comm comm) {
    int me = 0, p = 1;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &p);
    const int mine = static_cast<int>(cols.count(me) * s.n0 * s.n2 * 2);
    std::vector<int> counts(p), displs(p);
    for (int r = 0; r < p; ++r) {
        counts[r] = static_cast<int>(cols.count(r) * s.n0 * s.n2 * 2);
        displs[r] = static_cast<int>(cols.first(r) * s.n0 * s.n2 * 2);
    }
    std::vector<std::complex<double>> all(me == 0 ? s.n0 * s.n1 * s.n2 : 1);
    MPI_Gatherv(out.data(), mine, MPI_DOUBLE, all.data(), counts.data(), displs.data(), MPI_DOUBLE, 0, comm);
    if (me != 0) return 0;
    std::vector<std::complex<double>> in(s.n0 * s.n1 * s.n2), ref(in.size());
    for (ptrdiff_t i0 = 0; i0 < s.n0; ++i0)
        for (ptrdiff_t i1 = 0; i1 < s.n1; ++i1)
            for (ptrdiff_t i2 = 0; i2 < s.n2; ++i2) in[(i0 * s.n1 + i1) * s.n2 + i2] = input(i0, i1, i2);
    fftw_plan plan = fftw_plan_dft_3d(static_cast<int>(s.n0), static_cast<int>(s.n1), static_cast<int>(s.n2),
                                      as_fftw(in.data()), as_fftw(ref.data()), FFTW_FORWARD, FFTW_ESTIMATE);
    fftw_execute(plan);
    fftw_destroy_plan(plan);
    double worst = 0, scale = 0;
    for (ptrdiff_t i1 = 0; i1 < s.n1; ++i1)
        for (ptrdiff_t i0 = 0; i0 < s.n0; ++i0)
            for (ptrdiff_t i2 = 0; i2 < s.n2; ++i2) {
                const auto want = ref[(i0 * s.n1 + i1) * s.n2 + i2];
                worst = std::max(worst, std::abs(all[(i1 * s.n0 + i0) * s.n2 + i2] - want));
                scale = std::max(scale, std::abs(want));
            }
    return worst / std::max(scale, 1e-300);
}

// 2-D FFTs of the local planes, one alltoallv transpose, 1-D FFTs along n0.
Result transform_alltoallv(const Shape &s, const std::string &spec, int repeat, MPI_Comm comm) {
    int me = 0, p = 1;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &p);
    ptrdiff_t local_n0, start0, local_n1, start1;
    const ptrdiff_t alloc = fftw_mpi_local_size_3d_transposed(s.n0, s.n1, s.n2, comm, &local_n0, &start0, &local_n1,
                                                              &start1);
    const Blocks rows{s.n0, (s.n0 + p - 1) / p, p}, cols{s.n1, (s.n1 + p - 1) / p, p};
    std::vector<std::complex<double>> data(std::max<ptrdiff_t>(alloc, 1)), send(data.size()), out(data.size());
    std::vector<int> scounts(p), sdispls(p), rcounts(p), rdispls(p);
    for (int j = 0; j < p; ++j) {
        scounts[j] = static_cast<int>(local_n0 * cols.count(j) * s.n2 * 2);  // doubles
        sdispls[j] = static_cast<int>(local_n0 * cols.first(j) * s.n2 * 2);
        rcounts[j] = static_cast<int>(rows.count(j) * local_n1 * s.n2 * 2);
        rdispls[j] = static_cast<int>(rows.first(j) * local_n1 * s.n2 * 2);
    }
    // Plans: 2-D (n1, n2) over the local planes; 1-D along n0 (stride n2) for each of local_n1 * n2 lines.
    const int n12[2] = {static_cast<int>(s.n1), static_cast<int>(s.n2)}, n0 = static_cast<int>(s.n0);
    fftw_plan planes = nullptr, lines = nullptr;
    if (local_n0 > 0) {
        planes = fftw_plan_many_dft(2, n12, static_cast<int>(local_n0), as_fftw(data.data()), nullptr, 1,
                                    static_cast<int>(s.n1 * s.n2), as_fftw(data.data()), nullptr, 1,
                                    static_cast<int>(s.n1 * s.n2), FFTW_FORWARD, FFTW_ESTIMATE);
    }
    if (local_n1 > 0) {
        lines = fftw_plan_many_dft(1, &n0, static_cast<int>(s.n2), as_fftw(out.data()), nullptr, static_cast<int>(s.n2),
                                   1, as_fftw(out.data()), nullptr, static_cast<int>(s.n2), 1, FFTW_FORWARD,
                                   FFTW_ESTIMATE);
    }
    Result result;
    std::vector<double> times, comm_times;
    for (int r = 0; r < repeat; ++r) {
        for (ptrdiff_t i0 = 0; i0 < local_n0; ++i0)
            for (ptrdiff_t i1 = 0; i1 < s.n1; ++i1)
                for (ptrdiff_t i2 = 0; i2 < s.n2; ++i2) data[(i0 * s.n1 + i1) * s.n2 + i2] = input(start0 + i0, i1, i2);
        MPI_Barrier(comm);
        const double t0 = MPI_Wtime();
        if (planes) fftw_execute(planes);
        // Pack: the block for rank j is [local_n0][its n1 columns][n2], contiguous.
        for (int j = 0; j < p; ++j) {
            std::complex<double> *dst = send.data() + sdispls[j] / 2;
            for (ptrdiff_t i0 = 0; i0 < local_n0; ++i0) {
                const std::complex<double> *src = data.data() + (i0 * s.n1 + cols.first(j)) * s.n2;
                dst = std::copy(src, src + cols.count(j) * s.n2, dst);
            }
        }
        std::vector<std::complex<double>> &recv = data;  // reused: the input is no longer needed
        const double t1 = MPI_Wtime();
        const int rc = spec == "mpi" ? MPI_Alltoallv(send.data(), scounts.data(), sdispls.data(), MPI_DOUBLE, recv.data(),
                                                     rcounts.data(), rdispls.data(), MPI_DOUBLE, comm)
                                     : tucoll_alltoallv_with(spec.c_str(), send.data(), scounts.data(), sdispls.data(),
                                                             MPI_DOUBLE, recv.data(), rcounts.data(), rdispls.data(),
                                                             MPI_DOUBLE, comm);
        const double t2 = MPI_Wtime();
        if (rc != MPI_SUCCESS) {
            std::fprintf(stderr, "fft: rank %d: %s: %s\n", me, spec.c_str(), tucoll_error_string(rc));
            MPI_Abort(comm, 2);
        }
        // Unpack: from rank i, [its n0 rows][local_n1][n2] into out[local_n1][n0][n2].
        for (int i = 0; i < p; ++i) {
            const std::complex<double> *src = recv.data() + rdispls[i] / 2;
            for (ptrdiff_t a = 0; a < rows.count(i); ++a)
                for (ptrdiff_t c = 0; c < local_n1; ++c, src += s.n2)
                    std::copy(src, src + s.n2, out.data() + (c * s.n0 + rows.first(i) + a) * s.n2);
        }
        for (ptrdiff_t c = 0; c < local_n1; ++c) {
            fftw_execute_dft(lines, as_fftw(out.data() + c * s.n0 * s.n2), as_fftw(out.data() + c * s.n0 * s.n2));
        }
        const double t3 = MPI_Wtime();
        times.push_back(t3 - t0);
        comm_times.push_back(t2 - t1);
    }
    if (planes) fftw_destroy_plan(planes);
    if (lines) fftw_destroy_plan(lines);
    const double mine[2] = {tucoll::apps::median(times), tucoll::apps::median(comm_times)};
    double slowest[2];
    MPI_Allreduce(mine, slowest, 2, MPI_DOUBLE, MPI_MAX, comm);
    result.seconds = slowest[0];
    result.comm_seconds = slowest[1];
    tucoll_stats_t stats;
    result.ran = spec == "mpi" ? "MPI_Alltoallv" : tucoll_get_stats(comm, &stats) == MPI_SUCCESS ? stats.algorithm : spec;
    result.max_error = max_error(s, cols, out, comm);
    return result;
}

// FFTW plans the whole distributed transform (transposed output, like the other path).
Result transform_fftw(const Shape &s, int repeat, MPI_Comm comm) {
    ptrdiff_t local_n0, start0, local_n1, start1;
    const ptrdiff_t alloc = fftw_mpi_local_size_3d_transposed(s.n0, s.n1, s.n2, comm, &local_n0, &start0, &local_n1,
                                                              &start1);
    std::vector<std::complex<double>> in(std::max<ptrdiff_t>(alloc, 1)), out(in.size());
    fftw_plan plan = fftw_mpi_plan_dft_3d(s.n0, s.n1, s.n2, as_fftw(in.data()), as_fftw(out.data()), comm,
                                          FFTW_FORWARD, FFTW_MEASURE | FFTW_DESTROY_INPUT | FFTW_MPI_TRANSPOSED_OUT);
    Result result;
    if (plan == nullptr) {  // FFTW's MPI planner has no plan for degenerate shapes such as 1 x 1 x n2
        result.ran = "FFTW: no MPI plan for this shape";
        result.planned = false;
        return result;
    }
    std::vector<double> times;
    for (int r = 0; r < repeat; ++r) {
        for (ptrdiff_t i0 = 0; i0 < local_n0; ++i0)
            for (ptrdiff_t i1 = 0; i1 < s.n1; ++i1)
                for (ptrdiff_t i2 = 0; i2 < s.n2; ++i2) in[(i0 * s.n1 + i1) * s.n2 + i2] = input(start0 + i0, i1, i2);
        MPI_Barrier(comm);
        const double t0 = MPI_Wtime();
        fftw_execute(plan);
        times.push_back(MPI_Wtime() - t0);
    }
    double mine = tucoll::apps::median(times);
    MPI_Allreduce(&mine, &result.seconds, 1, MPI_DOUBLE, MPI_MAX, comm);
    char *text = fftw_sprint_plan(plan);
    const std::string printed = text;
    free(text);
    result.ran = printed.find("mpi-transpose-alltoall") != std::string::npos ? "FFTW: all-to-all transposes" :
                 printed.find("mpi-transpose-pairwise") != std::string::npos ? "FFTW: pairwise transposes" :
                                                                                 "FFTW: other transposes";
    result.comm_seconds = -1;
    fftw_destroy_plan(plan);
    int p = 1;
    MPI_Comm_size(comm, &p);
    result.max_error = max_error(s, Blocks{s.n1, (s.n1 + p - 1) / p, p}, out, comm);
    return result;
}

}  // namespace

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    fftw_mpi_init();
    int me = 0, p = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    CLI::App app{"Distributed 3-D FFT of seed 000's non-uniform problem sizes N1 and N2 (FFTW's MPI data layout), "
                 "timed per alltoallv algorithm and checked against a serial FFTW transform."};
    std::vector<std::string> algs, problems = {"N1", "N2"};
    std::string transpose = "alltoallv", format = "table";
    int repeat = 5;
    double tolerance = 1e-10;
    app.add_option("--alg", algs, "alltoallv for the transpose: a tucoll spec, or `mpi` (MPI_Alltoallv, which an "
                                  "interposer may take); repeatable; default: mpi; not with --transpose fftw");
    app.add_option("--problem", problems, "N1 and/or N2 (default both)")->check(CLI::IsMember({"N1", "N2"}));
    app.add_option("--transpose", transpose, "alltoallv (this program's transpose) or fftw (FFTW plans everything)")
        ->check(CLI::IsMember({"alltoallv", "fftw"}));
    app.add_option("--repeat", repeat, "transforms per algorithm; the median is reported")->check(CLI::PositiveNumber);
    app.add_option("--format", format, "table or csv")->check(CLI::IsMember({"table", "csv"}));
    if (const int rc = tucoll::apps::parse_arguments(app, argc, argv); rc >= 0) {
        MPI_Finalize();
        return rc;
    }
    if (transpose == "fftw" && !algs.empty()) {
        // FFTW calls MPI_Alltoall(v) itself: only the interposer (TUCOLL_ALLTOALLV) chooses there.
        if (me == 0) std::fprintf(stderr, "fft: --alg applies to --transpose alltoallv; with fftw, preload "
                                          "libtucoll_preload.so and choose with TUCOLL_ALLTOALLV\n");
        MPI_Finalize();
        return 2;
    }
    if (algs.empty()) algs = {transpose == "fftw" ? "fftw" : "mpi"};
    if (!tucoll::apps::valid_specs("fft", "alltoallv", algs, {"mpi", "fftw"})) {
        MPI_Finalize();
        return 2;
    }
    if (me == 0) {
        if (format == "csv") std::printf("problem,n0,n1,n2,nprocs,algorithm,ran,repeats,seconds,comm_seconds,rel_error,ok\n");
        else std::printf("%-8s %-18s %-34s %-36s %12s %12s %10s %3s\n", "problem", "n0 x n1 x n2", "alltoallv", "ran",
                         "median_s", "transpose_s", "rel_error", "ok");
    }
    int all_ok = 1;
    for (const std::string &name : problems) {
        const Shape s = problem(name, p);
        for (const std::string &spec : algs) {
            const Result res = transpose == "fftw" ? transform_fftw(s, repeat, MPI_COMM_WORLD)
                                                   : transform_alltoallv(s, spec, repeat, MPI_COMM_WORLD);
            int ok = res.max_error <= tolerance;
            MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
            all_ok &= ok;
            if (me != 0) continue;
            if (!res.planned) {
                std::printf("%-8s %td x %td x %td: %s\n", name.c_str(), s.n0, s.n1, s.n2, res.ran.c_str());
                continue;
            }
            const std::string dims = std::to_string(s.n0) + "x" + std::to_string(s.n1) + "x" + std::to_string(s.n2);
            if (format == "csv") {
                std::printf("%s,%td,%td,%td,%d,\"%s\",\"%s\",%d,%.6e,%.6e,%.3e,%d\n", name.c_str(), s.n0, s.n1, s.n2, p,
                            spec.c_str(), res.ran.c_str(), repeat, res.seconds, res.comm_seconds, res.max_error, ok);
            } else {
                std::printf("%-8s %-18s %-34s %-36s %12.6f %12s %10.2e %3d\n", name.c_str(), dims.c_str(), spec.c_str(),
                            res.ran.c_str(), res.seconds,
                            res.comm_seconds < 0 ? "-" : std::to_string(res.comm_seconds).substr(0, 8).c_str(),
                            res.max_error, ok);
            }
        }
    }
    fftw_mpi_cleanup();
    MPI_Finalize();
    return all_ok ? 0 : 1;
}
