// The windowed exchange behind the direct (one message per block) alltoallv algorithms: linear,
// pairwise, spreadout, scattered and xor are each a peer order and a window over it, as UCC
// builds linear from pairwise.
#pragma once

#include <algorithm>

#include "alltoallv/alltoallv.h"
#include "core/copy.h"
#include "core/p2p.h"

namespace tucoll::alltoallv {

// The peers of one step: this rank sends its block for `to` and receives the block from `from`
// (-1: nothing that way in this step).
struct StepPeers {
    int to = -1;
    int from = -1;
};

// Runs `steps` steps of `peers(step)` (step = 1..steps), `window` steps at a time: the window's
// receives are posted, then its sends, then all of them are completed before the next window
// starts (window 1: one step at a time; window >= steps: everything at once): one round of the
// schedule per window. The block a rank sends itself is copied locally first. Zero-size blocks are skipped on both sides: the
// receiver knows the size from recvcounts and the sender from sendcounts, and MPI's signature
// rules make the two agree. `peers` is kept by the schedule, which outlives the caller's frame:
// it captures by value.
template <class Peers>
Task windowed_exchange(Context &ctx, const Call &call, int steps, int window, Peers peers, CallStats &stats) {
    const int me = ctx.rank();
    local_copy(call.rbuf + call.rdispls[me], call.sbuf + call.sdispls[me], call.rcounts[me]);
    Requests &reqs = ctx.requests();
    const MPI_Comm comm = ctx.comm();
    window = std::max(1, std::min(window, steps));
    for (int first = 1; first <= steps; first += window) {
        const int last = std::min(steps, first + window - 1);
        for (int s = first; s <= last; ++s) {
            const int from = peers(s).from;
            if (from >= 0 && call.rcounts[from] > 0) {
                reqs.recv(call.rbuf + call.rdispls[from], call.rcounts[from], from, kTagData, comm);
            }
        }
        for (int s = first; s <= last; ++s) {
            const StepPeers step = peers(s);
            if (step.to >= 0 || step.from >= 0) ++stats.rounds;
            if (step.to >= 0 && call.scounts[step.to] > 0) {
                stats.count_send(call.scounts[step.to]);
                reqs.send(call.sbuf + call.sdispls[step.to], call.scounts[step.to], step.to, kTagData, comm);
            }
        }
        co_await reqs.completion();
    }
    co_return MPI_SUCCESS;
}

// Steps whose partner is `distance` ranks up (send) and down (receive) the ring, or the reverse.
inline StepPeers send_up(int me, int p, int distance) { return {(me + distance) % p, (me - distance + p) % p}; }
inline StepPeers send_down(int me, int p, int distance) { return {(me - distance + p) % p, (me + distance) % p}; }

// The `window` a block_count parameter asks for: 0 (or more than there are steps) = all at once.
inline int window_of(long block_count, int steps) {
    return block_count <= 0 || block_count >= steps ? std::max(1, steps) : static_cast<int>(block_count);
}

}  // namespace tucoll::alltoallv
