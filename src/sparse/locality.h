// The locality-aware exchange shared by personalized_loc and nbx_loc (seed 004 §IV-D,
// Algorithms 4 and 5). Messages for another node are concatenated into one message to the rank
// of that node with this rank's local index (modulo the node's size); messages for this node go
// straight to the redistribution. The receiver then redistributes inside its node: one
// personalized exchange over the node's communicator, one message per local destination.
#pragma once

#include "sparse/sparse.h"

namespace tucoll::sparse {

using InterRegionExchange = int (*)(Context &ctx, MPI_Comm comm, const Outgoing &out, int known_count, Inbox &inbox,
                                    CallStats &stats, bool count_inter_region);

int locality_aware_exchange(Context &ctx, const Outgoing &out, InterRegionExchange inter, Inbox &inbox,
                            CallStats &stats);

}  // namespace tucoll::sparse
