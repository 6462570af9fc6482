#include "alltoallv/hierarchical.h"

#include <algorithm>
#include <string>

#include "alltoallv/flat_layout.h"
#include "alltoallv/tuna_engine.h"
#include "core/errors.h"

namespace tucoll::alltoallv {
namespace {

constexpr int64_t kFirstChunk = 64 << 10;

struct HierarchicalWorkspace {
    InterNodeArena arena;
    std::vector<char *> at;
    std::vector<int64_t> bytes;
};

// The intra-node ring is the node's ranks in local order; slot i of group j is this rank's block
// for local rank (g + i) mod Q of node j. A block that arrives for good came from local rank
// (g - i) mod Q: it is final when it targets this node, else it waits for the inter-node phase.
class NodeLayout final : public TunaLayout {
  public:
    NodeLayout(Context &ctx, const Call &call, InterNodeBlocks &inter, InterNodeArena &arena, int64_t max_block)
        : reqs_(ctx.requests()), call_(call), inter_(inter), arena_(arena), topo_(inter.topo), max_block_(max_block) {}
    int ring_size() const override { return topo_.ppn; }
    int ring_index() const override { return topo_.local_rank; }
    int ring_rank(int index) const override { return topo_.rank_of(topo_.node, index); }
    int groups() const override { return topo_.num_nodes; }
    const char *source(int slot, int node, int64_t *bytes) const override {
        const int dest = topo_.rank_of(node, (topo_.local_rank + slot) % topo_.ppn);
        *bytes = call_.scounts[dest];
        return call_.sbuf + call_.sdispls[dest];
    }
    char *destination(int slot, int node, int64_t bytes) const override {
        if (node == topo_.node) return call_.rbuf + call_.rdispls[topo_.rank_of(node, from(slot))];
        const size_t pos = inter_.position(node, from(slot));
        char *place = arena_.place(bytes);
        if (place == nullptr && bytes > 0) {
            reqs_.fault(failf(MPI_ERR_NO_MEM, "cannot allocate %lld bytes for the inter-node phase",
                              static_cast<long long>(bytes)));
        }
        inter_.at[pos] = place;
        return place;
    }
    int64_t destination_bytes(int slot, int node) const override {
        return node == topo_.node ? call_.rcounts[topo_.rank_of(node, from(slot))] : -1;
    }
    int64_t destination_capacity(int, int) const override { return max_block_; }
    void arrived(int slot, int node, int64_t bytes) const override {
        if (node == topo_.node) return;
        const size_t pos = inter_.position(node, from(slot));
        inter_.bytes[pos] = inter_.at[pos] != nullptr ? bytes : 0;
    }

  private:
    int from(int slot) const { return (topo_.local_rank - slot + topo_.ppn) % topo_.ppn; }
    Requests &reqs_;
    const Call &call_;
    InterNodeBlocks &inter_;
    InterNodeArena &arena_;
    const Topology &topo_;
    const int64_t max_block_;
};

Task run_flat_instead(Context &ctx, const Call &call, int radix, const char *why, CallStats &stats) {
    TunaConfig config;
    config.radix = std::min(radix, std::max(2, ctx.size()));
    if (needs_temp(ctx.size(), config)) TUCOLL_CO_TRY(co_await global_max_block(ctx, call, &config.max_block));
    stats.add_path({"fallback to tuna:radix=", std::to_string(config.radix), " (", why, ")"});
    const FlatLayout layout(call, ctx.size(), ctx.rank());
    co_return co_await run_tuna_rounds(ctx, layout, config, stats);
}

}  // namespace

int64_t hierarchical_flows(const Params &params, const Scope &scope, int64_t inter_messages) {
    const int q = scope.ppn, radix = static_cast<int>(params.get("radix"));
    const int64_t intra = every_block_direct(q, std::min(radix, std::max(2, q))) ? q - 1 : 1;
    const int64_t inter = inter_messages > 0 ? window_of(params.get("block_count"), static_cast<int>(inter_messages)) : 0;
    return std::max<int64_t>({1, intra, inter});
}

Algorithm hierarchical_algorithm(const char *batch_doc, Bound batch_span) {
    Algorithm a;
    a.params = {{"radix", Bound::constant(2), Bound::local_procs(), 2, "radix of the intra-node TuNA", Grid::kRadix},
                {"block_count", Bound::constant(0), Bound::unbounded(), 32, batch_doc, Grid::kNodeBatch, batch_span}};
    a.constraints = "nodes of equal size (any placement); otherwise runs flat tuna and says so in the path";
    // M for the blocks waiting for other nodes, or for T on the node.
    a.uses_max_block = [](const Params &params, const Scope &scope) {
        const int q = scope.ppn, radix = static_cast<int>(params.get("radix"));
        return scope.nodes() > 1 || !every_block_direct(q, std::min(radix, std::max(2, q)));
    };
    return a;
}

void InterNodeArena::reset(int64_t worst_case) {
    current_ = 0;
    used_ = 0;
    in_use_ = 0;
    placed_ = 0;
    worst_case_ = worst_case;
}

char *InterNodeArena::place(int64_t bytes) {
    if (bytes <= 0) return nullptr;
    const int64_t need = (bytes + 7) / 8 * 8;  // blocks stay 8-byte aligned, never straddle chunks
    while (current_ < chunks_.size() && used_ + need > static_cast<int64_t>(chunks_[current_]->capacity())) {
        ++current_;  // the rest of this chunk stays unused in this call
        used_ = 0;
    }
    if (current_ == chunks_.size()) {
        // Grow geometrically, never beyond what the rest of the call can need.
        const int64_t rest = std::max(need, worst_case_ - placed_);
        const int64_t size = std::max(need, std::min(rest, std::max(kFirstChunk, in_use_)));
        auto chunk = std::make_unique<ScratchBuffer>();
        if (chunk->get(static_cast<size_t>(size)) == nullptr) return nullptr;
        chunks_.push_back(std::move(chunk));
    }
    ScratchBuffer &chunk = *chunks_[current_];
    if (used_ == 0) in_use_ += static_cast<int64_t>(chunk.capacity());  // first block in it this call
    char *at = chunk.get(0) + used_;
    used_ += need;
    placed_ += need;
    return at;
}

Task run_hierarchical(Context &ctx, const Call &call, const Params &params, InterNodePhase inter, CallStats &stats) {
    const Topology &topo = ctx.topology();
    const int radix = static_cast<int>(params.get("radix"));
    if (topo.ppn == 0) {
        co_return co_await run_flat_instead(ctx, call, radix, "nodes hold different numbers of ranks", stats);
    }
    const int q = topo.ppn, nodes = topo.num_nodes;
    TunaConfig config;
    config.radix = std::min(radix, std::max(2, q));
    if (needs_temp(q, config) || nodes > 1) TUCOLL_CO_TRY(co_await global_max_block(ctx, call, &config.max_block));

    HierarchicalWorkspace &ws = ctx.workspace<HierarchicalWorkspace>();
    const size_t inter_positions = static_cast<size_t>(nodes - 1) * q;
    ws.at.assign(inter_positions, nullptr);
    ws.bytes.assign(inter_positions, 0);
    ws.arena.reset(static_cast<int64_t>(inter_positions) * ((config.max_block + 7) / 8 * 8));
    InterNodeBlocks blocks{topo, ws.at, ws.bytes};
    stats.add_path({std::to_string(nodes), " nodes x ", std::to_string(q), " ranks"});

    const NodeLayout layout(ctx, call, blocks, ws.arena, config.max_block);
    TUCOLL_CO_TRY(co_await run_tuna_rounds(ctx, layout, config, stats));
    stats.scratch_bytes += ws.arena.bytes_in_use();
    for (int64_t b : blocks.bytes) stats.temp_bytes += b;
    if (nodes == 1) co_return MPI_SUCCESS;
    co_return co_await inter(ctx, call, blocks, params.get("block_count"), stats);
}

}  // namespace tucoll::alltoallv
