// tuna_coalesced: hierarchical TuNA whose inter-node phase sends, to each other node, the Q
// blocks this node's ranks have for the counterpart there in ONE message: N-1 rounds of the
// scattered pattern, block_count nodes per batch (seed 000 §IV-B, Algorithm 3). T is rearranged
// first so that each node's blocks are contiguous.
#include "alltoallv/hierarchical.h"
#include "core/copy.h"
#include "core/errors.h"
#include "core/p2p.h"

namespace tucoll::alltoallv {
namespace {

int inter_coalesced(Context &ctx, const Call &call, InterNodeBlocks &blocks, long block_count, CallStats &stats) {
    const Topology &t = blocks.topo;
    const int q = t.ppn, nodes = t.num_nodes, me = t.node, local = t.local_rank;
    // Rearrangement: pack the blocks for each node back to back (moves only go left).
    std::vector<int64_t> &offset = ctx.index(IndexSlot::kMeta0, static_cast<size_t>(nodes));
    int64_t packed = 0;
    for (int k = 1; k < nodes; ++k) {
        const int node = (me + k) % nodes;
        offset[k] = packed;
        for (int s = 0; s < q; ++s) {
            const int64_t pos = blocks.position(node, s);
            local_move(blocks.buffer + packed, blocks.at(pos), blocks.bytes[pos]);
            packed += blocks.bytes[pos];
        }
    }
    offset[0] = packed;  // end of the last node's run
    auto run_of = [&](int node, int64_t *bytes) {
        const int k = (node - me + nodes) % nodes;
        const int64_t end = k + 1 < nodes ? offset[k + 1] : offset[0];
        *bytes = end - offset[k];
        return blocks.buffer + offset[k];
    };

    const int batch = batch_size(block_count, nodes - 1);
    Requests reqs(2 * static_cast<size_t>(batch));
    std::vector<BlockList> incoming(batch);
    for (int first = 1; first < nodes; first += batch) {
        const int n = std::min(batch, nodes - first);
        for (int i = 0; i < n; ++i) {
            const int from = (me + first + i) % nodes;
            BlockList &in = incoming[i];
            in.clear();
            for (int s = 0; s < q; ++s) {
                const int source = t.rank_of(from, s);
                in.add(call.rbuf + call.rdispls[source], call.rcounts[source]);
            }
            TUCOLL_TRY(reqs.recv(in, t.rank_of(from, local), kTagInter, ctx.comm()));
        }
        for (int i = 0; i < n; ++i) {
            const int to = (me - first - i + nodes) % nodes;
            int64_t bytes = 0;
            char *run = run_of(to, &bytes);
            if (bytes > 0) {
                stats.count_send(bytes);
                TUCOLL_TRY(reqs.send(run, bytes, t.rank_of(to, local), kTagInter, ctx.comm()));
            }
        }
        TUCOLL_TRY(reqs.wait_all());
    }
    stats.rounds += nodes - 1;
    return MPI_SUCCESS;
}

int run(Context &ctx, const Call &call, const Params &params, CallStats &stats) {
    return run_hierarchical(ctx, call, params, inter_coalesced, stats);
}

}  // namespace

Algorithm tuna_coalesced_algorithm() {
    Algorithm a;
    a.name = "tuna_coalesced";
    a.reduces_max_block = true;
    a.summary = "hierarchical TuNA: intra-node TuNA, then one message of Q blocks per other node (N-1 rounds)";
    a.params = {{"radix", Bound::constant(2), Bound::local_procs(), 2, "radix of the intra-node TuNA"},
                {"block_count", Bound::constant(0), Bound::unbounded(), 32,
                 "nodes per inter-node batch; 0 (or >= N-1) = all at once"}};
    a.constraints = "nodes of equal size (any placement); otherwise runs flat tuna and says so in the path";
    a.at_once = "param:block_count<=N-1";
    a.run = run;
    return a;
}

}  // namespace tucoll::alltoallv
