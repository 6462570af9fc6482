// tuna_coalesced: hierarchical TuNA whose inter-node phase sends, to each other node, the Q
// blocks this node's ranks have for the counterpart there in ONE message: N-1 rounds of the
// scattered pattern, block_count nodes per batch (seed 000 §IV-B, Algorithm 3). The message is a
// block list over the blocks where the intra-node phase left them: nothing is rearranged.
#include "alltoallv/hierarchical.h"
#include "core/errors.h"
#include "core/p2p.h"

namespace tucoll::alltoallv {
namespace {

struct CoalescedWorkspace {
    std::vector<BlockList> incoming, outgoing;
};

Task inter_coalesced(Context &ctx, const Call &call, InterNodeBlocks &blocks, long block_count, CallStats &stats) {
    const Topology &t = blocks.topo;
    const int q = t.ppn, nodes = t.num_nodes, me = t.node, local = t.local_rank;
    const int batch = window_of(block_count, nodes - 1);
    CoalescedWorkspace &ws = ctx.workspace<CoalescedWorkspace>();
    ws.incoming.resize(batch);
    ws.outgoing.resize(batch);
    Requests &reqs = ctx.requests();
    for (int first = 1; first < nodes; first += batch) {
        const int n = std::min(batch, nodes - first);
        for (int i = 0; i < n; ++i) {
            const int from = (me + first + i) % nodes;
            BlockList &in = ws.incoming[i];
            in.clear();
            for (int s = 0; s < q; ++s) {
                const int source = t.rank_of(from, s);
                in.add(call.rbuf + call.rdispls[source], call.rcounts[source]);
            }
            reqs.recv(in, t.rank_of(from, local), kTagInter, ctx.comm());
        }
        for (int i = 0; i < n; ++i) {
            const int to = (me - first - i + nodes) % nodes;
            BlockList &out = ws.outgoing[i];
            out.clear();
            for (int s = 0; s < q; ++s) {
                const size_t pos = blocks.position(to, s);
                out.add(blocks.at[pos], blocks.bytes[pos]);
            }
            if (!out.empty()) stats.count_send(out.bytes());
            reqs.send(out, t.rank_of(to, local), kTagInter, ctx.comm());
        }
        co_await reqs.completion();
    }
    stats.rounds += nodes - 1;
    co_return MPI_SUCCESS;
}

Task run(Context &ctx, const Call &call, const Params &params, CallStats &stats) {
    return run_hierarchical(ctx, call, params, inter_coalesced, stats);
}

}  // namespace

Algorithm tuna_coalesced_algorithm() {
    Algorithm a = hierarchical_algorithm("nodes per inter-node batch; 0 (or >= N-1) = all at once", Bound::nodes(-1));
    a.name = "tuna_coalesced";
    a.summary = "hierarchical TuNA: intra-node TuNA, then one message of Q blocks per other node (N-1 rounds)";
    a.flows_per_rank = [](const Params &params, const Scope &scope) {
        return hierarchical_flows(params, scope, scope.nodes() - 1);
    };
    a.run = run;
    return a;
}

}  // namespace tucoll::alltoallv
