// Hierarchical TuNA (seed 000 §IV): an intra-node phase in which the Q ranks of every node run
// TuNA on all N destination groups at once (the implicit strategy of Figure 4b), after which a
// rank holds, for every other node, the Q blocks its node's ranks send to its counterpart there;
// then an inter-node phase between ranks of equal local index. The two variants differ in the
// inter-node phase only (coalesced: one message per node; staggered: one per block).
#pragma once

#include <vector>

#include "alltoallv/alltoallv.h"

namespace tucoll::alltoallv {

// What the intra-node phase leaves for the inter-node phase on one rank.
struct InterNodeBlocks {
    const Topology &topo;
    char *buffer;                  // (N-1) * Q positions of `block` bytes
    int64_t block;                 // M
    std::vector<int64_t> &bytes;   // size of the block at each position

    // Position of the block from local rank `source_local` of this node to this rank's
    // counterpart on `node` (node != topo.node). Nodes are ordered by distance n+1, n+2, ...
    int64_t position(int node, int source_local) const {
        const int n = topo.num_nodes;
        return static_cast<int64_t>((node - topo.node - 1 + n) % n) * topo.ppn + source_local;
    }
    char *at(int64_t pos) const { return buffer + pos * block; }
};

using InterNodePhase = int (*)(Context &ctx, const Call &call, InterNodeBlocks &blocks, long block_count,
                               CallStats &stats);

// Runs the whole hierarchical exchange with `inter` as its inter-node phase. When the nodes hold
// different numbers of ranks it runs flat tuna instead and says so in stats.path.
int run_hierarchical(Context &ctx, const Call &call, const Params &params, InterNodePhase inter, CallStats &stats);

// Batch size of the inter-node phase: `block_count` messages (0, or more than there are, = all).
inline int batch_size(long block_count, int messages) {
    if (messages <= 0) return 1;
    return (block_count <= 0 || block_count >= messages) ? messages : static_cast<int>(block_count);
}

}  // namespace tucoll::alltoallv
