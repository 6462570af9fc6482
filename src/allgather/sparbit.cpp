// sparbit: Stripe Parallel Binomial Trees (seed 001 Algorithm 1). Every rank is the root of a
// binomial tree shifted to it; distances halve from 2^(ceil(log2 P) - 1) to 1 while the data
// doubles, so the largest transfers travel the shortest distances. For P not a power of two a
// rank ignores, in the steps flagged by the binary form of P, the block it received through a
// tree in which it is a leaf. Blocks are received straight into their final place: no rotation,
// no shifts. All blocks of a step travel as one message each way; block sizes may differ per
// rank (allgatherv), since every rank knows them all.
#include "allgather/allgather.h"
#include "core/errors.h"
#include "core/p2p.h"

namespace tucoll::allgather {

namespace {

Task run(Context &ctx, const Call &call, const Params &, CallStats &stats) {
    const int p = ctx.size(), me = ctx.rank();
    if (p == 1) co_return MPI_SUCCESS;
    int steps = 0;
    while ((1 << steps) < p) ++steps;
    const unsigned last_ignore = static_cast<unsigned>(__builtin_ctz(static_cast<unsigned>(p)));
    const unsigned ignore_steps = (~(static_cast<unsigned>(p) >> last_ignore) | 1u) << last_ignore;
    int data = 1;
    int distance = 1 << (steps - 1);
    Requests &reqs = ctx.requests();
    BlockList &out = ctx.workspace<StepLists>().out, &in = ctx.workspace<StepLists>().in;
    for (int i = 0; i < steps; ++i) {
        const int ignore = (static_cast<unsigned>(distance) & ignore_steps) ? 1 : 0;
        out.clear();
        in.clear();
        for (int j = 0; j < data - ignore; ++j) {
            const int send_block = static_cast<int>((me - 2LL * j * distance) % p + p) % p;
            const int recv_block = static_cast<int>((me - (2LL * j + 1) * distance) % p + p) % p;
            out.add(call.base + call.displs[send_block], call.counts[send_block]);
            in.add(call.base + call.displs[recv_block], call.counts[recv_block]);
        }
        reqs.recv(in, (me - distance + p) % p, kTagData, ctx.comm());
        if (!out.empty()) stats.count_send(out.bytes());
        reqs.send(out, (me + distance) % p, kTagData, ctx.comm());
        co_await reqs.completion();
        distance >>= 1;
        data = 2 * data - ignore;
    }
    stats.rounds += steps;
    co_return MPI_SUCCESS;
}

}  // namespace

Algorithm sparbit_algorithm() {
    Algorithm a;
    a.name = "sparbit";
    a.summary = "Sparbit: parallel binomial trees, distance halving from 2^(ceil(log2 P)-1), no rotation";
    a.constraints = "none";
    a.run = run;
    return a;
}

}  // namespace tucoll::allgather
