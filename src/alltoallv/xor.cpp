// xor: exclusive-or pairing — in step s rank r exchanges with r XOR s. Steps run over the next
// power of two above P; a partner outside the communicator means the rank idles that step, so
// every pair still meets exactly once for any P.
#include "alltoallv/common.h"

namespace tucoll::alltoallv {
namespace {

Task run(Context &ctx, const Call &call, const Params &, CallStats &stats) {
    const int p = ctx.size(), me = ctx.rank();
    int steps = 1;
    while (steps < p) steps <<= 1;
    auto partner = [me, p](int s) {
        const int peer = me ^ s;
        return peer < p ? StepPeers{peer, peer} : StepPeers{};
    };
    return windowed_exchange(ctx, call, steps - 1, 1, partner, stats);
}

}  // namespace

Algorithm xor_algorithm() {
    Algorithm a;
    a.name = "xor";
    a.summary = "exclusive-or pairing: step s exchanges with rank XOR s (idle when that rank does not exist)";
    a.constraints = "none; non-powers of two idle on missing partners";
    a.skips_empty_blocks = true;
    a.run = run;
    return a;
}

}  // namespace tucoll::alltoallv
