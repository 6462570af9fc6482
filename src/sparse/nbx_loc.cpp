// nbx_loc (seed 004 Algorithm 5): the locality-aware exchange with an NBX inter-node step.
#include "sparse/locality.h"

namespace tucoll::sparse {
namespace {

int run(Context &ctx, const Outgoing &out, Inbox &inbox, const Known &, CallStats &stats) {
    return locality_aware_exchange(ctx, out, nbx_exchange, inbox, stats);
}

}  // namespace

Algorithm nbx_loc_algorithm() {
    Algorithm a;
    a.name = "nbx_loc";
    a.summary = "locality-aware: one NBX message per node, then redistribution inside the node";
    a.constraints = "nodes from the communicator's topology; a known recv_nnz is not used";
    a.flows_per_rank = flows_unknown;
    a.run = run;
    return a;
}

}  // namespace tucoll::sparse
