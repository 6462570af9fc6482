#include "alltoallv/hierarchical.h"

#include <algorithm>
#include <string>

#include "alltoallv/flat_layout.h"
#include "alltoallv/tuna_engine.h"
#include "core/errors.h"

namespace tucoll::alltoallv {
namespace {

// The intra-node ring is the node's ranks in local order; slot i of group j is this rank's block
// for local rank (g + i) mod Q of node j. A block that arrives for good came from local rank
// (g - i) mod Q: it is final when it targets this node, else it waits for the inter-node phase.
class NodeLayout final : public TunaLayout {
  public:
    NodeLayout(const Call &call, InterNodeBlocks &inter) : call_(call), inter_(inter), topo_(inter.topo) {}
    int ring_size() const override { return topo_.ppn; }
    int ring_index() const override { return topo_.local_rank; }
    int ring_rank(int index) const override { return topo_.rank_of(topo_.node, index); }
    int groups() const override { return topo_.num_nodes; }
    const char *source(int slot, int node, int64_t *bytes) const override {
        const int dest = topo_.rank_of(node, (topo_.local_rank + slot) % topo_.ppn);
        *bytes = call_.scounts[dest];
        return call_.sbuf + call_.sdispls[dest];
    }
    char *destination(int slot, int node) const override {
        if (node == topo_.node) return call_.rbuf + call_.rdispls[topo_.rank_of(node, from(slot))];
        return inter_.at(inter_.position(node, from(slot)));
    }
    int64_t destination_bytes(int slot, int node) const override {
        return node == topo_.node ? call_.rcounts[topo_.rank_of(node, from(slot))] : -1;
    }
    void arrived(int slot, int node, int64_t bytes) const override {
        if (node != topo_.node) inter_.bytes[inter_.position(node, from(slot))] = bytes;
    }

  private:
    int from(int slot) const { return (topo_.local_rank - slot + topo_.ppn) % topo_.ppn; }
    const Call &call_;
    InterNodeBlocks &inter_;
    const Topology &topo_;
};

int run_flat_instead(Context &ctx, const Call &call, int radix, const std::string &why, CallStats &stats) {
    TunaConfig config;
    config.radix = std::min(radix, std::max(2, ctx.size()));
    if (tuna_temp_positions(ctx, ctx.size(), config) > 0) TUCOLL_TRY(global_max_block(ctx, call, &config.max_block));
    stats.path += "; fallback to tuna:radix=" + std::to_string(config.radix) + " (" + why + ")";
    const FlatLayout layout(call, ctx.size(), ctx.rank());
    return run_tuna_rounds(ctx, layout, config, stats);
}

}  // namespace

int run_hierarchical(Context &ctx, const Call &call, const Params &params, InterNodePhase inter, CallStats &stats) {
    const Topology &topo = ctx.topology();
    const int radix = static_cast<int>(params.get("radix"));
    if (topo.ppn == 0) {
        return run_flat_instead(ctx, call, radix, "nodes hold different numbers of ranks", stats);
    }
    const int q = topo.ppn, nodes = topo.num_nodes;
    TunaConfig config;
    config.radix = std::min(radix, std::max(2, q));
    const int64_t positions = tuna_temp_positions(ctx, q, config);
    if (positions > 0 || nodes > 1) TUCOLL_TRY(global_max_block(ctx, call, &config.max_block));

    const int64_t inter_positions = static_cast<int64_t>(nodes - 1) * q;
    const int64_t inter_bytes = inter_positions * config.max_block;
    char *buffer = ctx.scratch(Slot::kInter, static_cast<size_t>(inter_bytes));
    if (buffer == nullptr && inter_bytes > 0) {
        return failf(MPI_ERR_NO_MEM, "cannot allocate the inter-node buffer (%lld bytes)", static_cast<long long>(inter_bytes));
    }
    stats.scratch_bytes += inter_bytes;
    InterNodeBlocks blocks{topo, buffer, config.max_block, ctx.index(IndexSlot::kInter, static_cast<size_t>(inter_positions))};
    stats.path += "; " + std::to_string(nodes) + " nodes x " + std::to_string(q) + " ranks";

    const NodeLayout layout(call, blocks);
    TUCOLL_TRY(run_tuna_rounds(ctx, layout, config, stats));
    for (int64_t b : blocks.bytes) stats.temp_bytes += b;
    if (nodes == 1) return MPI_SUCCESS;
    return inter(ctx, call, blocks, params.get("block_count"), stats);
}

}  // namespace tucoll::alltoallv
