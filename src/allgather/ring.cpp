// ring: in step s = 0..P-2 every rank sends block (rank - s) to rank + 1 and receives block
// (rank - s - 1) from rank - 1, forwarding what it received the step before (seed 001 §II-A).
// Works for allgather and allgatherv alike: every rank knows every block's size.
#include "allgather/allgather.h"
#include "core/errors.h"
#include "core/p2p.h"

namespace tucoll::allgather {

Task ring_exchange(Context &ctx, const Call &call, CallStats &stats) {
    const int p = ctx.size(), me = ctx.rank();
    const int right = (me + 1) % p, left = (me - 1 + p) % p;
    Requests &reqs = ctx.requests();
    for (int s = 0; s < p - 1; ++s) {
        const int out = (me - s + p) % p, in = (me - s - 1 + p) % p;
        // Posted even when empty: each rank sizes the blocks from its own receive counts, and
        // whether a message exists must not depend on them agreeing.
        reqs.recv(call.base + call.displs[in], call.counts[in], left, kTagData, ctx.comm());
        if (call.counts[out] > 0) stats.count_send(call.counts[out]);
        reqs.send(call.base + call.displs[out], call.counts[out], right, kTagData, ctx.comm());
        co_await reqs.completion();
    }
    stats.rounds += p - 1;
    co_return MPI_SUCCESS;
}

namespace {

Task run(Context &ctx, const Call &call, const Params &, CallStats &stats) { return ring_exchange(ctx, call, stats); }

}  // namespace

Algorithm ring_algorithm() {
    Algorithm a;
    a.name = "ring";
    a.summary = "ring: P-1 steps, forward the block received last step to rank+1";
    a.constraints = "none";
    a.run = run;
    return a;
}

}  // namespace tucoll::allgather
