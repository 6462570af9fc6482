// tuna: tunable-radix non-uniform all-to-all (seed 000 §III, Algorithm 1). K <= w (r-1) rounds of
// metadata + data to rank distance z * r^x; blocks not yet home wait in T, which holds at most
// B = P - K - 1 blocks of M bytes between rounds, direct blocks never entering it (more while a
// pass-through block arrives: radix_schedule.h). Receives land in their final place in the
// receive buffer, so there is no rotation. With r >= P-1 every block is direct and the exchange
// is the spread-out one, without T.
#include <algorithm>

#include "alltoallv/flat_layout.h"
#include "core/errors.h"
#include "core/mpi_step.h"
#include "core/p2p.h"

namespace tucoll::alltoallv {

int64_t largest_send_block(const TypedArgs &args, int p, int64_t type_size) {
    const int *counts = args.sendbuf == MPI_IN_PLACE ? args.recvcounts : args.sendcounts;
    return static_cast<int64_t>(*std::max_element(counts, counts + p)) * type_size;
}

int64_t largest_send_block(const Call &call, int p) { return *std::max_element(call.scounts, call.scounts + p); }

int reduce_max_block(Context &ctx, int64_t mine, int64_t *m) {
    return allreduce_now(ctx, &mine, m, 1, MPI_INT64_T, MPI_MAX);
}

Task global_max_block(Context &ctx, const Call &call, int64_t *out) {
    if (call.known_max_block >= 0) {
        *out = call.known_max_block;
        co_return MPI_SUCCESS;
    }
    const int64_t mine = largest_send_block(call, ctx.size());
    co_return co_await allreduce_step(ctx, &mine, out, 1, MPI_INT64_T, MPI_MAX);
}

namespace {

Task run(Context &ctx, const Call &call, const Params &params, CallStats &stats) {
    TunaConfig config;
    config.radix = static_cast<int>(params.get("radix"));
    if (needs_temp(ctx.size(), config)) TUCOLL_CO_TRY(co_await global_max_block(ctx, call, &config.max_block));
    const FlatLayout layout(call, ctx.size(), ctx.rank());
    co_return co_await run_tuna_rounds(ctx, layout, config, stats);
}

}  // namespace

Algorithm tuna_algorithm() {
    Algorithm a;
    a.name = "tuna";
    a.flows_per_rank = [](const Params &params, const Scope &scope) -> int64_t {
        // Every block direct: all rounds are posted at once (the spread-out exchange).
        return every_block_direct(scope.nprocs, static_cast<int>(params.get("radix"))) ? scope.nprocs - 1 : 1;
    };
    a.uses_max_block = [](const Params &params, const Scope &scope) {
        return !every_block_direct(scope.nprocs, static_cast<int>(params.get("radix")));
    };
    a.summary = "TuNA: radix-r rounds (metadata + data) to distance z*r^x, T of exactly P-K-1 blocks";
    a.params = {{"radix", Bound::constant(2), Bound::procs(), 2,
                 "base of the digit rounds: small favours latency (few rounds), large bandwidth; >= P-1 is "
                 "spread-out",
                 Grid::kRadix}};
    a.constraints = "none; while a pass-through block (3+ non-zero digits, radix < sqrt(P)) arrives its "
                    "predecessor is still being sent, so T then holds more than P-K-1 blocks (staging_bytes)";
    a.run = run;
    return a;
}

}  // namespace tucoll::alltoallv
