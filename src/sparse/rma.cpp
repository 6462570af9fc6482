// rma (seed 004 Algorithm 3, as in CELLAR): one-sided puts. Every rank owns a window with one
// arrival flag per rank followed by one message slot per rank; a sender puts its message into
// slot `rank` of the destination and sets flag `rank` there; two fences delimit the exchange. Arrival
// is read from the flags, never inferred from the payload, so empty and all-zero messages count.
// Constant-size messages only. The window is created once and kept on the communicator.
#include <climits>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/copy.h"
#include "core/errors.h"
#include "sparse/sparse.h"

namespace tucoll::sparse {
namespace {

const char kArrived = 1;

struct ListedDestinations {
    std::vector<char> seen;
};

int run(Context &ctx, const Outgoing &out, Inbox &inbox, const Known &, CallStats &stats) {
    const int p = ctx.size(), me = ctx.rank();
    // One slot per source: a destination listed twice would overwrite its first message.
    std::vector<char> &listed = ctx.workspace<ListedDestinations>().seen;
    listed.assign(p, 0);
    int64_t twice = -1;
    for (int i = 0; i < out.count; ++i) {
        if (listed[out.dest[i]]++) twice = out.dest[i];
    }
    // The window is collective and origins put at offsets computed from the message size, so
    // every rank must use one size: the ranks that send agree on it (their sendcount), the others
    // follow. Agreed in one reduction together with the other verdicts, so that a rank's error
    // never leaves the others in a fence: {largest size, -smallest size, a duplicate destination}.
    int64_t local[3] = {out.count > 0 ? out.constant_bytes : INT64_MIN, out.count > 0 ? -out.constant_bytes : INT64_MIN,
                        twice}, global[3];
    TUCOLL_MPI(MPI_Allreduce(local, global, 3, MPI_INT64_T, MPI_MAX, ctx.comm()));
    if (global[2] >= 0) {
        return failf(MPI_ERR_ARG, "rma: a rank lists dest %lld twice; rma carries one message per destination",
                     static_cast<long long>(global[2]));
    }
    const int64_t bytes = global[0] == INT64_MIN ? 0 : global[0];
    if (global[0] != INT64_MIN && global[0] != -global[1]) {
        return failf(MPI_ERR_ARG, "rma: the ranks send messages of %lld to %lld bytes; rma needs one size everywhere",
                     static_cast<long long>(-global[1]), static_cast<long long>(global[0]));
    }
    if (bytes > INT_MAX) {
        return failf(MPI_ERR_COUNT, "rma: messages of %lld bytes exceed what one MPI_Put carries", static_cast<long long>(bytes));
    }
    // Flags first: their place does not move when the message size (and the window) changes.
    const int64_t slots_at = p;
    MPI_Win win;
    char *base = nullptr;
    TUCOLL_TRY(ctx.window(static_cast<size_t>(slots_at + static_cast<int64_t>(p) * bytes), &win, &base));
    stats.scratch_bytes += slots_at + static_cast<int64_t>(p) * bytes;
    // The flags are all zero here: the window starts zeroed and every call clears them after
    // reading. No MPI_MODE_NOPRECEDE: with it MPICH's fence need not wait for the targets, and
    // a fast origin's puts of this call could land while a target still reads the last one's.
    TUCOLL_MPI(MPI_Win_fence(0, win));
    for (int i = 0; i < out.count; ++i) {
        const int dest = out.dest[i];
        if (bytes > 0) {
            TUCOLL_MPI(MPI_Put(out.data[i], static_cast<int>(bytes), MPI_BYTE, dest, static_cast<MPI_Aint>(slots_at + static_cast<int64_t>(me) * bytes),
                               static_cast<int>(bytes), MPI_BYTE, win));
        }
        TUCOLL_MPI(MPI_Put(&kArrived, 1, MPI_BYTE, dest, static_cast<MPI_Aint>(me), 1, MPI_BYTE, win));
        if (dest != me) {
            stats.count_send(bytes);
            stats.inter_region_messages += inter_region(ctx, dest);
        }
    }
    TUCOLL_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    for (int s = 0; s < p; ++s) {
        if (base[s] == kArrived) local_copy(inbox.add(s, bytes), base + slots_at + static_cast<int64_t>(s) * bytes, bytes);
    }
    std::memset(base, 0, static_cast<size_t>(p));  // ready for the next call's fence
    stats.rounds += 1;
    return MPI_SUCCESS;
}

}  // namespace

Algorithm rma_algorithm() {
    Algorithm a;
    a.name = "rma";
    a.summary = "one-sided puts into a window of P slots, arrival flagged explicitly, two fences";
    a.constraints = "constant-size messages only (alltoall_crs), the same size on every rank, one message per "
                    "destination";
    a.flows_per_rank = flows_unknown;
    a.run = run;
    a.constant_only = true;
    return a;
}

}  // namespace tucoll::sparse
