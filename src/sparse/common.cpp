#include <algorithm>
#include <numeric>

#include "core/copy.h"
#include "core/errors.h"
#include "core/p2p.h"
#include "core/platform.h"
#include "sparse/sparse.h"

namespace tucoll::sparse {

void Inbox::clear() {
    entries_.clear();
    order_.clear();
    storage_.clear();
}

char *Inbox::add(int source, int64_t bytes) {
    const int64_t offset = static_cast<int64_t>(storage_.size());
    storage_.resize(static_cast<size_t>(offset + bytes));
    order_.push_back(entries_.size());
    entries_.push_back({source, bytes, offset});
    return storage_.data() + offset;
}

void Inbox::sort_by_source() {
    std::iota(order_.begin(), order_.end(), 0);
    std::stable_sort(order_.begin(), order_.end(),
                     [&](size_t a, size_t b) { return entries_[a].source < entries_[b].source; });
}

namespace {

struct DestinationCounts {
    std::vector<int> counts;
};

// Per-communicator counter of exchanges, for tags.
struct ExchangeCounter {
    uint64_t calls = 0;
    int tag_span = 0;
};

}  // namespace

int exchange_tag(Context &ctx) {
    ExchangeCounter &c = ctx.workspace<ExchangeCounter>();
    if (c.tag_span == 0) {
        int *ub = nullptr, found = 0;
        MPI_Comm_get_attr(ctx.comm(), MPI_TAG_UB, &ub, &found);
        // Tags 100 and up; the MPI standard guarantees an upper bound of at least 32767.
        c.tag_span = (found && ub != nullptr ? std::min(*ub, 1 << 30) : 32767) - 100;
    }
    return 100 + static_cast<int>(c.calls++ % static_cast<uint64_t>(c.tag_span));
}

int receive_probed(Context &ctx, MPI_Status status, int tag, MPI_Comm comm, Inbox &inbox, int source_override) {
    int64_t bytes = 0;
    TUCOLL_MPI(platform::probed_bytes(&status, &bytes));
    char *dst = inbox.add(source_override >= 0 ? source_override : status.MPI_SOURCE, bytes);
    MPI_Request req;
    TUCOLL_TRY(irecv_bytes(dst, bytes, status.MPI_SOURCE, tag, comm, &req));
    TUCOLL_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    return MPI_SUCCESS;
}

int64_t inter_region(const Context &ctx, int dest) {
    const Topology &t = ctx.topology();
    return t.node_of[dest] != t.node ? 1 : 0;
}

namespace {

// Posts every message except those to this rank, which go straight to the inbox.
int post_sends(Context &ctx, MPI_Comm comm, const Outgoing &out, int tag, bool synchronous, Requests &reqs,
               Inbox &inbox, CallStats &stats, bool count_inter_region, int *local) {
    int me = 0;
    MPI_Comm_rank(comm, &me);
    *local = 0;
    for (int i = 0; i < out.count; ++i) {
        if (out.dest[i] == me) {
            local_copy(inbox.add(me, out.bytes[i]), out.data[i], out.bytes[i]);
            ++*local;
            continue;
        }
        stats.count_send(out.bytes[i]);
        if (count_inter_region) stats.inter_region_messages += inter_region(ctx, out.dest[i]);
        if (synchronous) {
            TUCOLL_TRY(reqs.ssend(out.data[i], out.bytes[i], out.dest[i], tag, comm));
        } else {
            TUCOLL_TRY(reqs.send(out.data[i], out.bytes[i], out.dest[i], tag, comm));
        }
    }
    return MPI_SUCCESS;
}

}  // namespace

int personalized_exchange(Context &ctx, MPI_Comm comm, const Outgoing &out, int known_count, int tag, Inbox &inbox,
                          CallStats &stats, bool count_inter_region) {
    int p = 1, me = 0;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &me);
    Requests reqs(static_cast<size_t>(out.count));
    int local = 0;
    TUCOLL_TRY(post_sends(ctx, comm, out, tag, false, reqs, inbox, stats, count_inter_region, &local));
    int expected = known_count;
    if (expected < 0) {
        // Each rank needs only its own entry of the summed per-destination counts.
        std::vector<int> &counts = ctx.workspace<DestinationCounts>().counts;
        counts.assign(p, 0);
        for (int i = 0; i < out.count; ++i) {
            if (out.dest[i] != me) ++counts[out.dest[i]];
        }
        TUCOLL_MPI(MPI_Reduce_scatter_block(counts.data(), &expected, 1, MPI_INT, MPI_SUM, comm));
        ++stats.rounds;
    } else {
        expected -= local;
    }
    for (int k = 0; k < expected; ++k) {
        MPI_Status status;
        TUCOLL_MPI(MPI_Probe(MPI_ANY_SOURCE, tag, comm, &status));
        TUCOLL_TRY(receive_probed(ctx, status, tag, comm, inbox));
    }
    ++stats.rounds;
    return reqs.wait_all();
}

int nbx_exchange(Context &ctx, MPI_Comm comm, const Outgoing &out, int known_count, int tag, Inbox &inbox,
                 CallStats &stats, bool count_inter_region) {
    Requests reqs(static_cast<size_t>(out.count));
    int local = 0;
    const bool known = known_count >= 0;
    TUCOLL_TRY(post_sends(ctx, comm, out, tag, !known, reqs, inbox, stats, count_inter_region, &local));
    ++stats.rounds;
    if (known) {
        for (int k = local; k < known_count; ++k) {
            MPI_Status status;
            TUCOLL_MPI(MPI_Probe(MPI_ANY_SOURCE, tag, comm, &status));
            TUCOLL_TRY(receive_probed(ctx, status, tag, comm, inbox));
        }
        return reqs.wait_all();
    }
    platform::NonblockingBarrier barrier;
    bool barrier_started = false;
    while (true) {
        int flag = 0;
        MPI_Status status;
        TUCOLL_MPI(MPI_Iprobe(MPI_ANY_SOURCE, tag, comm, &flag, &status));
        if (flag) {
            TUCOLL_TRY(receive_probed(ctx, status, tag, comm, inbox));
            continue;
        }
        if (!barrier_started) {
            int done = 0;
            TUCOLL_TRY(reqs.test_all(&done));
            if (done) {
                TUCOLL_MPI(barrier.start(comm, kTagBarrier));
                barrier_started = true;
            }
        } else {
            bool done = false;
            TUCOLL_MPI(barrier.test(&done));
            if (done) break;
        }
    }
    return MPI_SUCCESS;
}

}  // namespace tucoll::sparse
