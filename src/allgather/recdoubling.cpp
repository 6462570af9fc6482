// recdoubling: recursive doubling (seed 001 §II-A): in step s a rank exchanges everything it has
// with rank XOR 2^s, doubling its blocks. For P not a power of two, the P - 2^k ranks above the
// largest power of two 2^k first hand their block to rank - 2^k, which carries it through the
// 2^k-rank exchange, and finally receive the whole result from it: two extra steps.
#include "allgather/allgather.h"
#include "core/errors.h"
#include "core/p2p.h"

namespace tucoll::allgather {
namespace {

Task run(Context &ctx, const Call &call, const Params &, CallStats &stats) {
    const int p = ctx.size(), me = ctx.rank();
    int p2 = 1;
    while (p2 * 2 <= p) p2 *= 2;
    const int extra = p - p2;
    const MPI_Comm comm = ctx.comm();
    auto block = [&](int r, BlockList *list) { list->add(call.base + call.displs[r], call.counts[r]); };
    Requests &reqs = ctx.requests();
    BlockList &out = ctx.workspace<StepLists>().out, &in = ctx.workspace<StepLists>().in;
    out.clear();
    in.clear();

    if (me >= p2) {
        // An extra rank: hand over its block, then receive every other block.
        const int host = me - p2;
        if (call.counts[me] > 0) stats.count_send(call.counts[me]);
        reqs.send(call.base + call.displs[me], call.counts[me], host, kTagData, comm);
        for (int r = 0; r < p; ++r) {
            if (r != me) block(r, &in);
        }
        reqs.recv(in, host, kTagData, comm);
        co_await reqs.completion();
        stats.rounds += 2;
        co_return MPI_SUCCESS;
    }
    if (me < extra) {
        const int guest = me + p2;
        reqs.recv(call.base + call.displs[guest], call.counts[guest], guest, kTagData, comm);
        co_await reqs.completion();
    }
    // The blocks a rank of the power-of-two group speaks for: its own and its guest's.
    auto owned = [&](int v, BlockList *list) {
        block(v, list);
        if (v < extra) block(v + p2, list);
    };
    for (int mask = 1; mask < p2; mask <<= 1) {
        const int peer = me ^ mask;
        const int mine_first = me & ~(mask - 1), theirs_first = peer & ~(mask - 1);
        out.clear();
        in.clear();
        for (int v = mine_first; v < mine_first + mask; ++v) owned(v, &out);
        for (int v = theirs_first; v < theirs_first + mask; ++v) owned(v, &in);
        reqs.recv(in, peer, kTagData, comm);
        if (!out.empty()) stats.count_send(out.bytes());
        reqs.send(out, peer, kTagData, comm);
        co_await reqs.completion();
        ++stats.rounds;
    }
    if (me < extra) {
        const int guest = me + p2;
        out.clear();
        for (int r = 0; r < p; ++r) {
            if (r != guest) block(r, &out);
        }
        if (!out.empty()) stats.count_send(out.bytes());
        reqs.send(out, guest, kTagData, comm);
        co_await reqs.completion();
    }
    if (extra > 0) stats.rounds += 2;
    co_return MPI_SUCCESS;
}

}  // namespace

Algorithm recdoubling_algorithm() {
    Algorithm a;
    a.name = "recdoubling";
    a.summary = "recursive doubling: log2 P pairwise exchanges with rank XOR 2^s, doubling the data";
    a.constraints = "none; P not a power of two adds a step before and after for the P-2^k extra ranks";
    a.run = run;
    return a;
}

}  // namespace tucoll::allgather
