// xor: exclusive-or pairing — in step s rank r exchanges with r XOR s. Steps run over the next
// power of two above P; a partner outside the communicator means the rank idles that step, so
// every pair still meets exactly once for any P.
#include "alltoallv/common.h"

namespace tucoll::alltoallv {
namespace {

int run(Context &ctx, const Call &call, const Params &, CallStats &stats) {
    const int p = ctx.size(), me = ctx.rank();
    int steps = 1;
    while (steps < p) steps <<= 1;
    copy_self_block(call, me);
    Requests reqs(2);
    for (int s = 1; s < steps; ++s) {
        const int peer = me ^ s;
        if (peer >= p) continue;
        TUCOLL_TRY(post_block_recv(reqs, call, peer, ctx.comm()));
        TUCOLL_TRY(post_block_send(reqs, call, peer, ctx.comm(), stats));
        TUCOLL_TRY(reqs.wait_all());
        ++stats.rounds;
    }
    return MPI_SUCCESS;
}

}  // namespace

Algorithm xor_algorithm() {
    Algorithm a;
    a.name = "xor";
    a.summary = "exclusive-or pairing: step s exchanges with rank XOR s (idle when that rank does not exist)";
    a.constraints = "none; non-powers of two idle on missing partners";
    a.run = run;
    return a;
}

}  // namespace tucoll::alltoallv
