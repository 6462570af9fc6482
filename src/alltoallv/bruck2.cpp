// bruck2: two-phase non-uniform Bruck (Fan et al., HPDC 2022; seed 000 §II-b): radix 2, every
// round a metadata exchange of the sizes of all blocks sent, then the data; no initial or final
// rotation. Its temporary buffer has one M-byte position per block (P-1), the sizing TuNA
// tightens to P-K-1.
#include "alltoallv/flat_layout.h"
#include "core/errors.h"

namespace tucoll::alltoallv {
namespace {

int run(Context &ctx, const Call &call, const Params &, CallStats &stats) {
    TunaConfig config;
    config.radix = 2;
    config.tight_temp = false;
    config.metadata_every_round = true;
    if (tuna_needs_temp(ctx, ctx.size(), config)) TUCOLL_TRY(global_max_block(ctx, call, &config.max_block));
    const FlatLayout layout(call, ctx.size(), ctx.rank());
    return run_tuna_rounds(ctx, layout, config, stats);
}

}  // namespace

Algorithm bruck2_algorithm() {
    Algorithm a;
    a.name = "bruck2";
    a.reduces_max_block = true;
    a.summary = "two-phase non-uniform Bruck: radix 2, sizes of all blocks then data every round, T of P-1 blocks";
    a.constraints = "none";
    a.run = run;
    return a;
}

}  // namespace tucoll::alltoallv
