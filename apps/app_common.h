// What the applications share: an MPI-aware command line, spec checks, medians.
#pragma once

#include <mpi.h>

#ifdef exit  // SMPI's helpers make exit() a macro, which would break CLI11's App::exit()
#undef exit
#endif
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "tucoll.h"

namespace tucoll::apps {

// Parses the command line on every rank. Returns -1 to go on, else the exit code the program
// should finish with (--help, or a bad option: rank 0 prints it).
inline int parse_arguments(CLI::App &app, int argc, char **argv) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError &e) {
        return rank == 0 ? app.exit(e) : e.get_exit_code();
    }
    return -1;
}

// True when every spec (other than the program's own keywords, such as `mpi`) is valid for
// `collective` at this P; otherwise rank 0 says which is not.
inline bool valid_specs(const char *program, const char *collective, const std::vector<std::string> &specs,
                        const std::vector<std::string> &keywords = {}) {
    int rank = 0, nprocs = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    for (const std::string &spec : specs) {
        if (spec.empty() || std::find(keywords.begin(), keywords.end(), spec) != keywords.end()) continue;
        if (tucoll_check_spec(collective, spec.c_str(), nprocs) != MPI_SUCCESS) {
            if (rank == 0) std::fprintf(stderr, "%s: %s: %s\n", program, spec.c_str(), tucoll_error_string(MPI_ERR_ARG));
            return false;
        }
    }
    return true;
}

// The lowest rank for which `ok` is false, or -1 when it holds everywhere: ranks agree on
// whether to go on (a file only some ranks can read must not leave the others waiting in a
// collective), and exactly one rank reports the problem.
inline int first_failing_rank(bool ok) {
    int rank = 0, nprocs = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    int first = ok ? nprocs : rank;
    MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return first == nprocs ? -1 : first;
}

inline double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace tucoll::apps
