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

int receive(platform::Probed &probed, Inbox &inbox, int source_override) {
    int64_t bytes = 0;
    TUCOLL_MPI(platform::message_bytes(&probed.status, &bytes));
    char *dst = inbox.add(source_override >= 0 ? source_override : probed.status.MPI_SOURCE, bytes);
    MPI_Datatype type = MPI_BYTE;
    int count = 0;
    TUCOLL_TRY(byte_type(bytes, &type, &count));
    const int rc = platform::receive(probed, dst, count, type);
    if (type != MPI_BYTE) MPI_Type_free(&type);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "receiving a probed message");
    return MPI_SUCCESS;
}

}  // namespace

int receive_next(MPI_Comm comm, int tag, Inbox &inbox, int source_override) {
    platform::Probed probed;
    bool found = false;
    TUCOLL_MPI(platform::probe(comm, tag, true, &found, &probed));
    return receive(probed, inbox, source_override);
}

int receive_if_any(MPI_Comm comm, int tag, Inbox &inbox, bool *received) {
    platform::Probed probed;
    TUCOLL_MPI(platform::probe(comm, tag, false, received, &probed));
    return *received ? receive(probed, inbox, -1) : MPI_SUCCESS;
}

int64_t inter_region(const Context &ctx, int dest) {
    const Topology &t = ctx.topology();
    return t.node_of[dest] != t.node ? 1 : 0;
}

namespace {

// Posts every message except those to this rank, which go straight to the inbox.
void post_sends(Context &ctx, MPI_Comm comm, const Outgoing &out, bool synchronous, Inbox &inbox, CallStats &stats,
                bool count_inter_region, int *local) {
    int me = 0;
    MPI_Comm_rank(comm, &me);
    Requests &reqs = ctx.requests();
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
            reqs.ssend(out.data[i], out.bytes[i], out.dest[i], kTagDynamic, comm);
        } else {
            reqs.send(out.data[i], out.bytes[i], out.dest[i], kTagDynamic, comm);
        }
    }
}

}  // namespace

int personalized_exchange(Context &ctx, MPI_Comm comm, const Outgoing &out, int known_count, Inbox &inbox,
                          CallStats &stats, bool count_inter_region) {
    int p = 1, me = 0;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &me);
    Requests &reqs = ctx.requests();
    int local = 0;
    post_sends(ctx, comm, out, false, inbox, stats, count_inter_region, &local);
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
    for (int k = 0; k < expected; ++k) TUCOLL_TRY(receive_next(comm, reqs.tag(kTagDynamic), inbox));
    ++stats.rounds;
    reqs.wait_all();
    return MPI_SUCCESS;
}

int nbx_exchange(Context &ctx, MPI_Comm comm, const Outgoing &out, int known_count, Inbox &inbox, CallStats &stats,
                 bool count_inter_region) {
    Requests &reqs = ctx.requests();
    const int tag = reqs.tag(kTagDynamic);
    int local = 0;
    const bool known = known_count >= 0;
    post_sends(ctx, comm, out, !known, inbox, stats, count_inter_region, &local);
    ++stats.rounds;
    if (known) {
        for (int k = local; k < known_count; ++k) TUCOLL_TRY(receive_next(comm, tag, inbox));
        reqs.wait_all();
        return MPI_SUCCESS;
    }
    platform::NonblockingBarrier barrier;
    bool barrier_started = false;
    while (true) {
        bool received = false;
        TUCOLL_TRY(receive_if_any(comm, tag, inbox, &received));
        if (received) continue;
        if (!barrier_started) {
            if (reqs.test_all()) {
                TUCOLL_MPI(barrier.start(comm, reqs.tag(kTagBarrier)));
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
