// personalized_loc (seed 004 Algorithm 4): the locality-aware exchange with a personalized
// inter-node step (reduce-scatter of aggregated per-destination counts, probed receives).
#include "sparse/locality.h"

namespace tucoll::sparse {
namespace {

int run(Context &ctx, const Outgoing &out, Inbox &inbox, const Known &, CallStats &stats) {
    return locality_aware_exchange(ctx, out, personalized_exchange, inbox, stats);
}

}  // namespace

Algorithm personalized_loc_algorithm() {
    Algorithm a;
    a.name = "personalized_loc";
    a.summary = "locality-aware: one personalized message per node, then redistribution inside the node";
    a.constraints = "nodes from the communicator's topology (TUCOLL_PPN, tucoll_comm_set_ppn/_node); a known "
                    "recv_nnz is not used (the aggregated counts still have to be found)";
    a.flows_per_rank = flows_unknown;
    a.run = run;
    return a;
}

}  // namespace tucoll::sparse
