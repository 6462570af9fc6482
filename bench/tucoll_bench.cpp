// tucoll-bench: times tucoll's algorithms side by side in one MPI job.
//
//   mpirun -np P tucoll-bench alltoallv [--alg SPEC ...] --dist D --size S [--check] [--format F]
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "alltoallv_exchange.h"
#include "report.h"
#include "runner.h"
#include "tucoll.h"
#include "typed_buffers.h"
#include "workload.h"

namespace {

using tucoll::bench::BenchOptions;

void add_common_options(CLI::App *cmd, BenchOptions &o) {
    cmd->add_option("--alg", o.algs,
                    "algorithm spec, e.g. scattered:block_count=8 (repeatable; default: every registered "
                    "algorithm with default parameters)");
    cmd->add_option("--size", o.size, "largest block in bytes, S (suffixes K, M)")
        ->transform(CLI::AsSizeValue(false))
        ->capture_default_str();
    cmd->add_option("--sizes", o.sizes, "several sizes, comma separated (e.g. 16,1K,64K); overrides --size")
        ->delimiter(',')
        ->transform(CLI::AsSizeValue(false));
    cmd->add_option("--iters", o.iters, "timed iterations")->check(CLI::PositiveNumber)->capture_default_str();
    cmd->add_option("--warmup", o.warmup, "untimed iterations first")->check(CLI::NonNegativeNumber)->capture_default_str();
    cmd->add_flag("--check", o.check, "compare every algorithm's result with the vendor MPI's; exit 1 on a mismatch");
    cmd->add_option("--seed", o.seed, "seed of the random distributions")->capture_default_str();
    cmd->add_option("--format", o.format, "output: table (comparison), csv, or osu")
        ->check(CLI::IsMember({"table", "csv", "osu"}))
        ->capture_default_str();
    cmd->add_option("--ppn", o.ppn, "declare this many ranks per node (tucoll_comm_set_ppn); 0 = TUCOLL_PPN or detect")
        ->check(CLI::NonNegativeNumber);
}

// Every collective's algorithms and parameters, read from the registry's JSON description.
void print_registry() {
    const nlohmann::json registry = nlohmann::json::parse(tucoll_registry_json());
    for (const auto &[collective, entry] : registry["collectives"].items()) {
        std::printf("%s (env %s, default %s)\n", collective.c_str(), entry["env"].get<std::string>().c_str(),
                    entry["default"].get<std::string>().c_str());
        for (const auto &alg : entry["algorithms"]) {
            std::printf("  %-16s %s\n", alg["name"].get<std::string>().c_str(), alg["summary"].get<std::string>().c_str());
            for (const auto &p : alg["params"]) {
                std::printf("  %-16s   %s in [%s, %s], default %lld: %s\n", "", p["name"].get<std::string>().c_str(),
                            p["min"].get<std::string>().c_str(), p["max"].get<std::string>().c_str(),
                            p["default"].get<long long>(), p["doc"].get<std::string>().c_str());
            }
        }
    }
}

int finish(const std::vector<tucoll::bench::Row> &rows, const BenchOptions &o, int rank) {
    if (rank == 0) tucoll::bench::print_rows(rows, o.format, stdout);
    for (const auto &r : rows) {
        if (r.ok == 0) return 1;
    }
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    CLI::App app{"tucoll-bench: time tucoll collectives side by side in one MPI job (run it under mpirun).\n"
                 "Algorithms are interleaved per iteration with a barrier before each call; the time of an\n"
                 "iteration is that of the slowest rank, reported as median/min/max over iterations."};
    app.set_version_flag("--version", std::to_string(TUCOLL_VERSION_MAJOR) + "." +
                                          std::to_string(TUCOLL_VERSION_MINOR) + "." +
                                          std::to_string(TUCOLL_VERSION_PATCH));
    bool list = false, list_json = false;
    app.add_flag("--list", list, "list the registered algorithms and their parameters");
    app.add_flag("--list-json", list_json, "print the registry as JSON");

    BenchOptions alltoallv_opts;
    std::string alltoallv_type_help = "element type:";
    for (const auto &n : tucoll::bench::type_pair_names()) alltoallv_type_help += " " + n;
    CLI::App *alltoallv = app.add_subcommand("alltoallv", "non-uniform all-to-all (MPI_Alltoallv arguments)");
    add_common_options(alltoallv, alltoallv_opts);
    alltoallv->add_option("--dist", alltoallv_opts.dist, "block-size distribution:\n" + tucoll::bench::distribution_help())
        ->capture_default_str();
    alltoallv->add_option("--type", alltoallv_opts.type, alltoallv_type_help)
        ->check(CLI::IsMember(tucoll::bench::type_pair_names()))
        ->capture_default_str();

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError &e) {
        int rc = rank == 0 ? app.exit(e) : e.get_exit_code();
        MPI_Finalize();
        return rc;
    }

    int rc = 0;
    if (list_json) {
        if (rank == 0) std::printf("%s\n", tucoll_registry_json());
    } else if (list) {
        if (rank == 0) print_registry();
    } else if (alltoallv->parsed()) {
        const int ppn_rc = alltoallv_opts.ppn > 0 ? tucoll_comm_set_ppn(MPI_COMM_WORLD, alltoallv_opts.ppn) : MPI_SUCCESS;
        if (ppn_rc != MPI_SUCCESS) {
            if (rank == 0) std::fprintf(stderr, "tucoll-bench: --ppn: %s\n", tucoll_error_string(ppn_rc));
            MPI_Finalize();
            return 2;
        }
        tucoll::bench::AlltoallvExchange exchange(alltoallv_opts, MPI_COMM_WORLD);
        rc = finish(tucoll::bench::run_benchmark(exchange, alltoallv_opts, MPI_COMM_WORLD), alltoallv_opts, rank);
    } else if (rank == 0) {
        std::printf("%s", app.help().c_str());
    }
    MPI_Finalize();
    return rc;
}
