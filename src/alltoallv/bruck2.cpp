// bruck2: two-phase non-uniform Bruck (Fan et al., HPDC 2022; seed 000 §II-b): radix 2, every
// round a metadata exchange of the sizes of all blocks sent, then the data; no initial or final
// rotation. Its temporary buffer has an M-byte position per block (P-1; more when pass-through
// blocks need them at once), the sizing TuNA tightens to its peak, P-K-1 when no block passes
// through.
#include "alltoallv/flat_layout.h"
#include "core/errors.h"

namespace tucoll::alltoallv {
namespace {

TunaConfig bruck2_config() {
    TunaConfig c;
    c.radix = 2;
    c.tight_temp = false;
    c.metadata_every_round = true;
    return c;
}

Task run(Context &ctx, const Call &call, const Params &, CallStats &stats) {
    TunaConfig config = bruck2_config();
    if (needs_temp(ctx.size(), config)) TUCOLL_CO_TRY(co_await global_max_block(ctx, call, &config.max_block));
    const FlatLayout layout(call, ctx.size(), ctx.rank());
    co_return co_await run_tuna_rounds(ctx, layout, config, stats);
}

}  // namespace

Algorithm bruck2_algorithm() {
    Algorithm a;
    a.name = "bruck2";
    a.uses_max_block = [](const Params &, const Scope &scope) { return needs_temp(scope.nprocs, bruck2_config()); };
    a.summary = "two-phase non-uniform Bruck: radix 2, sizes of all blocks then data every round, T of P-1 blocks";
    a.constraints = "none";
    a.run = run;
    return a;
}

}  // namespace tucoll::alltoallv
