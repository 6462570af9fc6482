// The round engine shared by tuna, bruck2 and the intra-node phase of the hierarchical variants:
// radix-r store-and-forward rounds, each a metadata exchange (sizes of the blocks whose size the
// receiver cannot know) followed by one data message. Blocks move between the user's buffers,
// the temporary buffer T and their destinations without being copied: each message is an
// hindexed datatype over the blocks' addresses.
#pragma once

#include <cstdint>

#include "alltoallv/radix_schedule.h"
#include "core/context.h"
#include "core/stats.h"
#include "core/task.h"

namespace tucoll::alltoallv {

// Where the engine finds and puts the blocks of one rank. A slot may carry several sub-blocks
// ("groups"): the hierarchical variants run one exchange per destination node at once.
class TunaLayout {
  public:
    virtual ~TunaLayout() = default;
    virtual int ring_size() const = 0;
    virtual int ring_index() const = 0;                 // this rank's position on the ring
    virtual int ring_rank(int index) const = 0;         // communicator rank at a ring position
    virtual int groups() const = 0;
    // The block this rank sends `slot` positions ahead, as it sits in the send buffer.
    virtual const char *source(int slot, int group, int64_t *bytes) const = 0;
    // Where a block that arrives for good goes (it travelled `slot` positions to get here), once
    // its size is known: the hierarchical layout places blocks for other nodes by their size.
    virtual char *destination(int slot, int group, int64_t bytes) const = 0;
    // Its size when this rank knows it (from recvcounts), else -1. Whether it is known must be
    // the same on every ring member.
    virtual int64_t destination_bytes(int slot, int group) const = 0;
    // The most bytes a block may have at its destination when its size is not known there.
    virtual int64_t destination_capacity(int slot, int group) const = 0;
    // Called for every block that reached its destination, with its size.
    virtual void arrived(int slot, int group, int64_t bytes) const {}
};

struct TunaConfig {
    int radix = 2;
    // true: T is sized by the schedule's peak (B = n-K-1 positions when no block passes through).
    // false: at least one position per slot, n-1, as the two-phase Bruck algorithm sizes it.
    bool tight_temp = true;
    // true: every round exchanges the size of every block (two-phase Bruck); false: only the
    // sizes the receiver cannot know, and no metadata message when there are none.
    bool metadata_every_round = false;
    int64_t max_block = 0;  // M, the largest block on any rank (bytes)
};

// The schedule of all rounds (two waits each: sizes, then data); afterwards every block has reached layout.destination(). Errors (an announced
// block larger than its place, no memory for T) are recorded on the context's traffic and the
// rounds go on (core/p2p.h). Accumulates rounds, messages, bytes through T and the peak of T
// into `stats`.
Task run_tuna_rounds(Context &ctx, const TunaLayout &layout, const TunaConfig &config, CallStats &stats);

// Whether a configuration needs T (and so M) on a ring of n ranks: false when every block goes
// straight to its destination (radix >= n-1).
inline bool needs_temp(int n, const TunaConfig &config) {
    return n > 1 && (!config.tight_temp || !every_block_direct(n, config.radix));
}

}  // namespace tucoll::alltoallv
