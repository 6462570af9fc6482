// Hierarchical TuNA (seed 000 §IV): an intra-node phase in which the Q ranks of every node run
// TuNA on all N destination groups at once (the implicit strategy of Figure 4b), after which a
// rank holds, for every other node, the Q blocks its node's ranks send to its counterpart there;
// then an inter-node phase between ranks of equal local index. The two variants differ in the
// inter-node phase only (coalesced: one message per node; staggered: one per block).
#pragma once

#include <memory>
#include <vector>

#include "alltoallv/alltoallv.h"
#include "alltoallv/common.h"

namespace tucoll::alltoallv {

// Where blocks waiting for the inter-node phase are kept: back to back at their actual sizes,
// which the intra-node rounds announce before the data arrive, in chunks kept from call to call.
// It holds the bytes announced, not (N-1) * Q blocks of M bytes.
class InterNodeArena {
  public:
    // A new call whose blocks total at most `worst_case` bytes.
    void reset(int64_t worst_case);
    // Room for a block of `bytes` bytes; nullptr when memory runs out.
    char *place(int64_t bytes);
    // Bytes of the chunks this call has used.
    int64_t bytes_in_use() const { return in_use_; }

  private:
    std::vector<std::unique_ptr<ScratchBuffer>> chunks_;
    size_t current_ = 0;
    int64_t used_ = 0;  // bytes used in the current chunk
    int64_t in_use_ = 0, placed_ = 0, worst_case_ = 0;
};

// What the intra-node phase leaves for the inter-node phase on one rank.
struct InterNodeBlocks {
    const Topology &topo;
    std::vector<char *> &at;       // where the block of each position is (nullptr: not kept)
    std::vector<int64_t> &bytes;   // its size

    // Position of the block from local rank `source_local` of this node to this rank's
    // counterpart on `node` (node != topo.node). Nodes are ordered by distance n+1, n+2, ...
    size_t position(int node, int source_local) const {
        const int n = topo.num_nodes;
        return static_cast<size_t>((node - topo.node - 1 + n) % n) * topo.ppn + source_local;
    }
};

using InterNodePhase = Task (*)(Context &ctx, const Call &call, InterNodeBlocks &blocks, long block_count,
                               CallStats &stats);

// Runs the whole hierarchical exchange with `inter` as its inter-node phase. When the nodes hold
// different numbers of ranks it runs flat tuna instead and says so in stats.path.
Task run_hierarchical(Context &ctx, const Call &call, const Params &params, InterNodePhase inter, CallStats &stats);

// Registry properties of both variants, whose inter-node phase has `inter_messages` messages per
// rank in batches of block_count: flows at once (the larger of the two phases) and whether M is
// reduced (for the inter-node blocks, or for T on the node).
int64_t hierarchical_flows(const Params &params, const Scope &scope, int64_t inter_messages);

// The registry entry both variants share (parameters, constraints, use of M); each sets its
// name, summary, run function and flows.
Algorithm hierarchical_algorithm(const char *batch_doc, Bound batch_span);

}  // namespace tucoll::alltoallv
