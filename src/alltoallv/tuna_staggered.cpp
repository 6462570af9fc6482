// tuna_staggered: hierarchical TuNA whose inter-node phase sends every block as its own message:
// (N-1) * Q rounds, block_count messages per batch (seed 000 §IV-B, Algorithm 2). Blocks are
// sent straight from where the intra-node phase left them. Every message is posted, empty blocks
// too: whether one is sent then depends on nothing the two sides could see differently.
#include "alltoallv/hierarchical.h"
#include "core/errors.h"
#include "core/p2p.h"

namespace tucoll::alltoallv {
namespace {

Task inter_staggered(Context &ctx, const Call &call, InterNodeBlocks &blocks, long block_count, CallStats &stats) {
    const Topology &t = blocks.topo;
    const int q = t.ppn, nodes = t.num_nodes, me = t.node, local = t.local_rank;
    const int messages = (nodes - 1) * q;
    const int batch = window_of(block_count, messages);
    Requests &reqs = ctx.requests();
    // Message m carries the block of local rank m % Q, between nodes m / Q + 1 apart. Messages
    // between the same two ranks are posted in the same order on both sides.
    for (int first = 0; first < messages; first += batch) {
        const int n = std::min(batch, messages - first);
        for (int m = first; m < first + n; ++m) {
            const int from = (me + m / q + 1) % nodes, s = m % q;
            const int source = t.rank_of(from, s);
            reqs.recv(call.rbuf + call.rdispls[source], call.rcounts[source], t.rank_of(from, local), kTagInter,
                      ctx.comm());
        }
        for (int m = first; m < first + n; ++m) {
            const int to = (me - m / q - 1 + nodes) % nodes, s = m % q;
            const size_t pos = blocks.position(to, s);
            if (blocks.bytes[pos] > 0) stats.count_send(blocks.bytes[pos]);
            reqs.send(blocks.at[pos], blocks.bytes[pos], t.rank_of(to, local), kTagInter, ctx.comm());
        }
        co_await reqs.completion();
    }
    stats.rounds += messages;
    co_return MPI_SUCCESS;
}

Task run(Context &ctx, const Call &call, const Params &params, CallStats &stats) {
    return run_hierarchical(ctx, call, params, inter_staggered, stats);
}

}  // namespace

Algorithm tuna_staggered_algorithm() {
    Algorithm a = hierarchical_algorithm("messages per inter-node batch; 0 (or >= (N-1)*Q) = all at once",
                                         Bound::remote_procs());
    a.name = "tuna_staggered";
    a.summary = "hierarchical TuNA: intra-node TuNA, then one message per block to other nodes ((N-1)*Q rounds)";
    a.flows_per_rank = [](const Params &params, const Scope &scope) {
        return hierarchical_flows(params, scope, static_cast<int64_t>(scope.nodes() - 1) * scope.ppn);
    };
    a.run = run;
    return a;
}

}  // namespace tucoll::alltoallv
