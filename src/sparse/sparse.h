// Sparse dynamic data exchange (seed 004): every rank knows what it sends to whom, nobody knows
// who sends to it. Algorithms work on byte messages; the API turns typed arguments into them and
// the received messages back into typed, source-sorted results.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "core/context.h"
#include "core/registry.h"
#include "core/stats.h"

namespace tucoll::sparse {

// The send side as bytes: message i goes to dest[i], bytes[i] bytes at data[i].
struct Outgoing {
    int count = 0;
    const int *dest = nullptr;
    std::vector<int64_t> bytes;
    std::vector<const char *> data;
    bool constant = false;     // every message the same size (alltoall_crs)
    int64_t constant_bytes = 0;
};

// Received messages with their bytes kept back to back; indexed in arrival order until
// sort_by_source() orders them by source.
class Inbox {
  public:
    void clear();
    // Space for a message of `bytes` bytes from `source`; valid until the next add().
    char *add(int source, int64_t bytes);
    size_t size() const { return entries_.size(); }
    // Message order after sort_by_source(): ascending source, arrival order within a source.
    void sort_by_source();
    int source(size_t i) const { return entries_[order_[i]].source; }
    int64_t bytes(size_t i) const { return entries_[order_[i]].bytes; }
    const char *data(size_t i) const { return storage_.data() + entries_[order_[i]].offset; }
    int64_t total_bytes() const { return static_cast<int64_t>(storage_.size()); }

  private:
    struct Entry {
        int source;
        int64_t bytes, offset;
    };
    std::vector<Entry> entries_;
    std::vector<size_t> order_;
    std::vector<char> storage_;
};

// What the caller already knows about its receive side (-1 = unknown).
struct Known {
    int recv_nnz = -1;
};

using RunFn = int (*)(Context &ctx, const Outgoing &out, Inbox &inbox, const Known &known, CallStats &stats);

struct Algorithm : AlgorithmInfo {
    RunFn run = nullptr;
    bool constant_only = false;  // needs messages of one size (rma)
};

const Registry<Algorithm> &alltoall_crs_registry();
const Registry<Algorithm> &alltoallv_crs_registry();

Algorithm personalized_algorithm();
Algorithm nbx_algorithm();
Algorithm rma_algorithm();
Algorithm personalized_loc_algorithm();
Algorithm nbx_loc_algorithm();

// ---- pieces the algorithms share ------------------------------------------------------------

// Receives the next message on `tag` from any rank into the inbox (matched probe, so that no
// other thread can take it in between); `source_override` >= 0 files it under that source.
int receive_next(MPI_Comm comm, int tag, Inbox &inbox, int source_override = -1);
// The same when one has arrived; *received says whether one had. Never blocks.
int receive_if_any(MPI_Comm comm, int tag, Inbox &inbox, bool *received);

// Messages of `out` that leave this rank's node (the locality-aware variants reduce them).
int64_t inter_region(const Context &ctx, int dest);

// Personalized exchange of `out` over `comm` (whose ranks the messages' dest refer to): sends,
// then receives as many messages as a reduce-scatter of per-destination counts announces (or
// `known_count` when >= 0). Messages to this rank itself are copied. Messages travel with the
// call's kTagDynamic tag, so an exchange never takes a message of the next one.
int personalized_exchange(Context &ctx, MPI_Comm comm, const Outgoing &out, int known_count, Inbox &inbox,
                          CallStats &stats, bool count_inter_region);

// NBX (Hoefler et al.): synchronous sends, receive while probing, non-blocking barrier once
// this rank's sends are matched; with `known_count` >= 0 plain sends and that many receives.
int nbx_exchange(Context &ctx, MPI_Comm comm, const Outgoing &out, int known_count, Inbox &inbox, CallStats &stats,
                 bool count_inter_region);

}  // namespace tucoll::sparse
