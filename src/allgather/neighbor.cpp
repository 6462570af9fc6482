// neighbor: neighbor exchange (Chen et al.; seed 001 §II-A). Ranks pair up (2g, 2g+1) and swap
// blocks; then for P/2 - 1 steps every rank exchanges, alternately with its left and right
// neighbour, the pair of blocks it received in the previous step. P/2 steps in all, two blocks
// per message after the first. Defined for even P only: with odd P it runs the ring, as Open MPI
// does, and says so in the statistics' path.
#include "allgather/allgather.h"
#include "core/errors.h"
#include "core/p2p.h"

namespace tucoll::allgather {
namespace {

// The pair (blocks 2g and 2g+1) that rank `rank` receives in step k >= 1: from its left
// neighbour in odd steps for even ranks (right for odd ranks), alternating after that.
int pair_received(int rank, int k, int pairs) {
    const int g = rank / 2;
    const bool even = rank % 2 == 0;
    const int shift = (k % 2 == 1) ? (k + 1) / 2 : k / 2;
    const bool from_left = even == (k % 2 == 1);
    return ((from_left ? g - shift : g + shift) % pairs + pairs) % pairs;
}

void add_pair(const Call &call, int pair, BlockList *list) {
    list->add(call.base + call.displs[2 * pair], call.counts[2 * pair]);
    list->add(call.base + call.displs[2 * pair + 1], call.counts[2 * pair + 1]);
}

Task run(Context &ctx, const Call &call, const Params &, CallStats &stats) {
    const int p = ctx.size(), me = ctx.rank();
    if (p % 2 != 0) {
        stats.add_path("odd P: ring");
        co_return co_await ring_exchange(ctx, call, stats);
    }
    const int pairs = p / 2;
    const bool even = me % 2 == 0;
    const int left = (me - 1 + p) % p, right = (me + 1) % p;
    Requests &reqs = ctx.requests();
    // Step 0: swap own blocks within the pair.
    const int partner = even ? right : left;
    reqs.recv(call.base + call.displs[partner], call.counts[partner], partner, kTagData, ctx.comm());
    if (call.counts[me] > 0) stats.count_send(call.counts[me]);
    reqs.send(call.base + call.displs[me], call.counts[me], partner, kTagData, ctx.comm());
    co_await reqs.completion();
    int last = me / 2;  // the pair this rank forwards next
    BlockList &out = ctx.workspace<StepLists>().out, &in = ctx.workspace<StepLists>().in;
    for (int k = 1; k < pairs; ++k) {
        const bool to_left = even == (k % 2 == 1);
        const int peer = to_left ? left : right;
        const int incoming = pair_received(me, k, pairs);
        out.clear();
        in.clear();
        add_pair(call, last, &out);
        add_pair(call, incoming, &in);
        reqs.recv(in, peer, kTagData, ctx.comm());
        if (!out.empty()) stats.count_send(out.bytes());
        reqs.send(out, peer, kTagData, ctx.comm());
        co_await reqs.completion();
        last = incoming;
    }
    stats.rounds += pairs;
    co_return MPI_SUCCESS;
}

}  // namespace

Algorithm neighbor_algorithm() {
    Algorithm a;
    a.name = "neighbor";
    a.summary = "neighbor exchange: pairs swap, then P/2-1 steps forwarding block pairs left/right";
    a.constraints = "even P; odd P runs the ring (stats path says so)";
    a.run = run;
    return a;
}

}  // namespace tucoll::allgather
