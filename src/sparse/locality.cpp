#include "sparse/locality.h"

#include <cstring>

#include "core/copy.h"
#include "core/errors.h"

namespace tucoll::sparse {
namespace {

// Entries of an aggregated message: {int64 rank, int64 bytes, payload}, back to back. The rank
// is the final destination in the inter-node step and the origin in the redistribution.
struct Aggregates {
    std::vector<std::vector<char>> buffers;  // per node, then per local rank
    std::vector<int> targets;
    std::vector<std::vector<char>> local;    // per local rank of this node
    Inbox staged;                            // what this node's ranks receive, by origin
    std::vector<int> staged_dest_local;
};

void append(std::vector<char> &buf, int64_t rank, const char *data, int64_t bytes) {
    const size_t at = buf.size();
    buf.resize(at + 2 * sizeof(int64_t) + static_cast<size_t>(bytes));
    std::memcpy(buf.data() + at, &rank, sizeof rank);
    std::memcpy(buf.data() + at + sizeof rank, &bytes, sizeof bytes);
    local_copy(buf.data() + at + 2 * sizeof(int64_t), data, bytes);
}

template <class F>
int for_each_entry(const char *data, int64_t bytes, F f) {
    int64_t at = 0;
    while (at < bytes) {
        int64_t rank = 0, size = 0;
        if (bytes - at < static_cast<int64_t>(2 * sizeof(int64_t))) break;
        std::memcpy(&rank, data + at, sizeof rank);
        std::memcpy(&size, data + at + sizeof rank, sizeof size);
        at += 2 * sizeof(int64_t);
        if (size < 0 || size > bytes - at) break;
        f(static_cast<int>(rank), data + at, size);
        at += size;
    }
    if (at != bytes) return fail(MPI_ERR_INTERN, "malformed aggregated message");
    return MPI_SUCCESS;
}

Outgoing view_of(const std::vector<std::vector<char>> &buffers, const std::vector<int> &targets,
                 std::vector<int> &dests) {
    Outgoing o;
    dests.clear();
    for (size_t k = 0; k < buffers.size(); ++k) {
        if (targets[k] < 0) continue;
        dests.push_back(targets[k]);
        o.bytes.push_back(static_cast<int64_t>(buffers[k].size()));
        o.data.push_back(buffers[k].data());
    }
    o.count = static_cast<int>(dests.size());
    o.dest = dests.data();
    return o;
}

}  // namespace

int locality_aware_exchange(Context &ctx, const Outgoing &out, InterRegionExchange inter, Inbox &inbox,
                            CallStats &stats) {
    const Topology &t = ctx.topology();
    Aggregates &agg = ctx.workspace<Aggregates>();

    // Step 1: one message per other node, to the rank of equal local index there.
    agg.buffers.resize(t.num_nodes);
    agg.targets.assign(t.num_nodes, -1);
    for (auto &b : agg.buffers) b.clear();
    std::vector<std::vector<char>> &local = agg.local;
    local.resize(t.local_size);
    for (auto &b : local) b.clear();
    for (int i = 0; i < out.count; ++i) {
        const int dest = out.dest[i], node = t.node_of[dest];
        if (node == t.node) {
            append(local[t.local_rank_of[dest]], ctx.rank(), out.data[i], out.bytes[i]);
        } else {
            append(agg.buffers[node], dest, out.data[i], out.bytes[i]);
            agg.targets[node] = t.rank_of(node, t.local_rank % t.node_size(node));
        }
    }
    std::vector<int> dests;
    const Outgoing step1 = view_of(agg.buffers, agg.targets, dests);
    agg.staged.clear();
    TUCOLL_TRY(inter(ctx, ctx.comm(), step1, -1, agg.staged, stats, true));
    for (size_t k = 0; k < agg.staged.size(); ++k) {
        const int origin = agg.staged.source(k);
        TUCOLL_TRY(for_each_entry(agg.staged.data(k), agg.staged.bytes(k), [&](int dest, const char *data, int64_t n) {
            append(local[t.local_rank_of[dest]], origin, data, n);
        }));
    }

    // Step 2: redistribute inside the node, one message per local destination.
    MPI_Comm node;
    TUCOLL_TRY(ctx.node_comm(&node));
    std::vector<int> local_targets(t.local_size);
    for (int l = 0; l < t.local_size; ++l) local_targets[l] = local[l].empty() ? -1 : l;
    std::vector<int> local_dests;
    const Outgoing step2 = view_of(local, local_targets, local_dests);
    Inbox &received = agg.staged;
    received.clear();
    TUCOLL_TRY(personalized_exchange(ctx, node, step2, -1, received, stats, false));
    for (size_t k = 0; k < received.size(); ++k) {
        TUCOLL_TRY(for_each_entry(received.data(k), received.bytes(k), [&](int origin, const char *data, int64_t n) {
            local_copy(inbox.add(origin, n), data, n);
        }));
    }
    return MPI_SUCCESS;
}

}  // namespace tucoll::sparse
