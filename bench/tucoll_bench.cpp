// tucoll-bench: times tucoll's algorithms side by side in one MPI job.
//
//   mpirun -np P tucoll-bench alltoallv [--alg SPEC ...] --dist D --size S [--check] [--format F]
#include <mpi.h>

// Under SMPI, smpi_helpers.h (force-included by smpicxx) makes exit() a macro, which would break
// CLI11's App::exit(); tucoll-bench never calls exit() itself.
#ifdef exit
#undef exit
#endif
#include <CLI/CLI.hpp>
#include <cstdio>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>

#include "allgather_exchange.h"
#include "alltoall_exchange.h"
#include "alltoallv_exchange.h"
#include "crs_exchange.h"
#include "machine_probe.h"
#include "report.h"
#include "runner.h"
#include "tucoll.h"
#include "typed_buffers.h"
#include "workload.h"

namespace {

using tucoll::bench::BenchOptions;

void add_common_options(CLI::App *cmd, BenchOptions &o) {
    cmd->add_option("--alg", o.algs,
                    "algorithm spec, e.g. scattered:block_count=8, or mpi for the program's own MPI call "
                    "(repeatable; default: every registered algorithm with default parameters)");
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
    cmd->add_option("--format", o.format,
                    "output: table (comparison), csv, osu, or calls (CSV, one row per timed iteration and algorithm: "
                    "the slowest rank's time of each call)")
        ->check(CLI::IsMember({"table", "csv", "osu", "calls"}))
        ->capture_default_str();
    cmd->add_option("--ppn", o.ppn, "declare this many ranks per node (tucoll_comm_set_ppn); 0 = TUCOLL_PPN or detect")
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--mapping", o.mapping,
                    "rank numbering over the nodes: sequential (node by node) or cyclic (rank r+1 on the next node)")
        ->check(CLI::IsMember({"sequential", "cyclic"}))
        ->capture_default_str();
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

// Runs one collective's benchmark on the communicator --mapping asks for; returns the exit code.
int run_collective(const BenchOptions &o, int rank,
                   const std::function<std::unique_ptr<tucoll::bench::Exchange>(MPI_Comm)> &make) {
    MPI_Comm comm = MPI_COMM_NULL;
    const int rc = tucoll::bench::bench_communicator(o, &comm);
    if (rc != MPI_SUCCESS) {
        if (rank == 0) std::fprintf(stderr, "tucoll-bench: %s\n", tucoll_error_string(rc));
        return 2;
    }
    int code = 0;
    {
        std::unique_ptr<tucoll::bench::Exchange> exchange = make(comm);
        code = finish(tucoll::bench::run_benchmark(*exchange, o, comm), o, rank);
    }
    if (comm != MPI_COMM_WORLD) MPI_Comm_free(&comm);
    return code;
}

// What the command line asked for. The parser is gone by the time the run starts: its option
// objects cost some 80 KB per rank, which a simulation of thousands of ranks pays per rank.
struct Command {
    enum class What { kHelp, kList, kListJson, kAlltoallv, kAlltoall, kAllgather, kAllgatherv, kCrs, kCrsV, kMachine };
    What what = What::kHelp;
    BenchOptions options;
    std::string crs_source;  // kCrs, kCrsV: --matrix or --dist
    std::string help;        // kHelp
};

// The command, or the exit code when parsing ended the program (--help, --version, an error).
std::variant<Command, int> parse_command_line(int argc, char **argv, int rank) {
    CLI::App app{"tucoll-bench: time tucoll collectives side by side in one MPI job (run it under mpirun).\n"
                 "Algorithms are interleaved per iteration with a barrier before each call; the time of an\n"
                 "iteration is that of the slowest rank, reported as median/min/max over iterations."};
    app.set_version_flag("--version", std::to_string(TUCOLL_VERSION_MAJOR) + "." +
                                          std::to_string(TUCOLL_VERSION_MINOR) + "." +
                                          std::to_string(TUCOLL_VERSION_PATCH));
    bool list = false, list_json = false;
    app.add_flag("--list", list, "list the registered algorithms and their parameters");
    app.add_flag("--list-json", list_json, "print the registry as JSON");

    std::string type_help = "element type:";
    for (const auto &n : tucoll::bench::type_pair_names()) type_help += " " + n;
    auto add_type = [&](CLI::App *cmd, BenchOptions &o) {
        cmd->add_option("--type", o.type, type_help)
            ->check(CLI::IsMember(tucoll::bench::type_pair_names()))
            ->capture_default_str();
    };
    auto add_dist = [&](CLI::App *cmd, BenchOptions &o, const std::string &what) {
        cmd->add_option("--dist", o.dist, what + ":\n" + tucoll::bench::distribution_help())->capture_default_str();
    };

    BenchOptions alltoallv_opts, alltoall_opts, allgather_opts, allgatherv_opts;
    CLI::App *alltoallv = app.add_subcommand("alltoallv", "non-uniform all-to-all (MPI_Alltoallv arguments)");
    add_common_options(alltoallv, alltoallv_opts);
    add_dist(alltoallv, alltoallv_opts, "block-size distribution (block i -> j)");
    add_type(alltoallv, alltoallv_opts);
    auto add_memory = [](CLI::App *cmd, BenchOptions &o) {
        cmd->add_option("--memory", o.memory,
                        "where the buffers live: host, or device (GPU memory; CUDA builds, one rank per GPU)")
            ->check(CLI::IsMember({"host", "device"}))
            ->capture_default_str();
    };
    add_memory(alltoallv, alltoallv_opts);
    alltoallv->add_flag("--persistent", alltoallv_opts.persistent,
                        "time persistent requests: tucoll_alltoallv_init once per algorithm and size (on its first, "
                        "untimed warm-up call), then tucoll_start + tucoll_wait per call (--alg mpi stays the plain call)");

    CLI::App *alltoall = app.add_subcommand("alltoall", "all-to-all of --size bytes per block (MPI_Alltoall arguments)");
    add_common_options(alltoall, alltoall_opts);
    add_type(alltoall, alltoall_opts);
    add_memory(alltoall, alltoall_opts);

    CLI::App *allgather = app.add_subcommand("allgather", "allgather of --size bytes per rank (MPI_Allgather arguments)");
    add_common_options(allgather, allgather_opts);
    add_type(allgather, allgather_opts);
    allgather->add_flag("--in-place", allgather_opts.in_place, "pass MPI_IN_PLACE as sendbuf");

    CLI::App *allgatherv = app.add_subcommand("allgatherv", "allgather of varying block sizes (MPI_Allgatherv arguments)");
    add_common_options(allgatherv, allgatherv_opts);
    add_dist(allgatherv, allgatherv_opts, "block size of rank j: what rank 0 sends j under this distribution");
    add_type(allgatherv, allgatherv_opts);
    allgatherv->add_flag("--in-place", allgatherv_opts.in_place, "pass MPI_IN_PLACE as sendbuf");

    BenchOptions crs_opts[2];
    std::string crs_matrix[2];
    CLI::App *crs[2];
    for (int v = 0; v < 2; ++v) {
        BenchOptions &o = crs_opts[v];
        o.type = "int";
        o.size = 4;
        o.dist = "random:8";
        crs[v] = app.add_subcommand(v ? "alltoallv_crs" : "alltoall_crs",
                                    v ? "sparse dynamic data exchange, variable-size messages (tucoll_alltoallv_crs)"
                                      : "sparse dynamic data exchange, constant-size messages (tucoll_alltoall_crs)");
        add_common_options(crs[v], o);
        add_type(crs[v], o);
        crs[v]->add_option("--matrix", crs_matrix[v],
                           "Matrix Market file: rows and vector split contiguously over the ranks; the exchange "
                           "that builds the SpMV communication package (overrides --dist)");
        crs[v]->add_option("--dist", o.dist, "random:DEG: every rank sends to DEG distinct random ranks, "
                                             "--size bytes per message (alltoallv_crs: uniform in [0, size])")
            ->capture_default_str();
    }

    int probe_iters = 11;
    CLI::App *machine = app.add_subcommand(
        "machine", "point-to-point microbenchmarks between ranks 0 and 1 for `tucoll calibrate --here` (CSV)");
    machine->add_option("--iters", probe_iters, "samples per test (the median is printed)")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError &e) {
        return rank == 0 ? app.exit(e) : e.get_exit_code();
    }

    using What = Command::What;
    Command c;
    auto pick = [&c](What what, const BenchOptions &options) {
        c.what = what;
        c.options = options;
    };
    if (list_json) {
        c.what = What::kListJson;
    } else if (list) {
        c.what = What::kList;
    } else if (alltoallv->parsed()) {
        pick(What::kAlltoallv, alltoallv_opts);
    } else if (alltoall->parsed()) {
        pick(What::kAlltoall, alltoall_opts);
        c.options.dist = "-";  // every block --size bytes
    } else if (allgather->parsed()) {
        pick(What::kAllgather, allgather_opts);
        c.options.dist = "-";  // every rank contributes --size bytes
    } else if (allgatherv->parsed()) {
        pick(What::kAllgatherv, allgatherv_opts);
    } else if (crs[0]->parsed() || crs[1]->parsed()) {
        const int v = crs[1]->parsed() ? 1 : 0;
        pick(v ? What::kCrsV : What::kCrs, crs_opts[v]);
        c.crs_source = crs_matrix[v].empty() ? crs_opts[v].dist : "matrix:" + crs_matrix[v];
    } else if (machine->parsed()) {
        c.what = What::kMachine;
        c.options.iters = probe_iters;
    } else {
        c.help = app.help();
    }
    return c;
}

}  // namespace

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    auto parsed = parse_command_line(argc, argv, rank);
    if (const int *exit_code = std::get_if<int>(&parsed)) {
        MPI_Finalize();
        return *exit_code;
    }
    const Command &c = std::get<Command>(parsed);
    const BenchOptions &o = c.options;

    int rc = 0;
    using tucoll::bench::Exchange;
    using What = Command::What;
    switch (c.what) {
        case What::kListJson:
            if (rank == 0) std::printf("%s\n", tucoll_registry_json());
            break;
        case What::kList:
            if (rank == 0) print_registry();
            break;
        case What::kAlltoallv:
            rc = run_collective(o, rank, [&](MPI_Comm comm) -> std::unique_ptr<Exchange> {
                return std::make_unique<tucoll::bench::AlltoallvExchange>(o, comm);
            });
            break;
        case What::kAlltoall:
            rc = run_collective(o, rank, [&](MPI_Comm comm) -> std::unique_ptr<Exchange> {
                return std::make_unique<tucoll::bench::AlltoallExchange>(o, comm);
            });
            break;
        case What::kAllgather:
        case What::kAllgatherv:
            rc = run_collective(o, rank, [&](MPI_Comm comm) -> std::unique_ptr<Exchange> {
                return std::make_unique<tucoll::bench::AllgatherExchange>(o, comm, c.what == What::kAllgatherv,
                                                                          o.in_place);
            });
            break;
        case What::kCrs:
        case What::kCrsV:
            rc = run_collective(o, rank, [&](MPI_Comm comm) -> std::unique_ptr<Exchange> {
                return std::make_unique<tucoll::bench::CrsExchange>(o, comm, c.what == What::kCrsV, c.crs_source);
            });
            break;
        case What::kMachine:
            rc = tucoll::bench::run_machine_probe(MPI_COMM_WORLD, o.iters);
            break;
        case What::kHelp:
            if (rank == 0) std::printf("%s", c.help.c_str());
            break;
    }
    MPI_Finalize();
    return rc;
}
