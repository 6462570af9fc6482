// linear: Open MPI's basic linear alltoallv — every receive, then every send, posted at once in
// ascending rank order, completed by one wait.
#include "alltoallv/common.h"

namespace tucoll::alltoallv {
namespace {

Task run(Context &ctx, const Call &call, const Params &, CallStats &stats) {
    const int p = ctx.size(), me = ctx.rank();
    auto ascending = [me](int step) {
        const int peer = step - 1 < me ? step - 1 : step;  // the step-th rank other than this one
        return StepPeers{peer, peer};
    };
    return windowed_exchange(ctx, call, p - 1, p - 1, ascending, stats);
}

}  // namespace

Algorithm linear_algorithm() {
    Algorithm a;
    a.name = "linear";
    a.summary = "Open MPI basic linear: all Irecv then all Isend in ascending rank order, one Waitall";
    a.constraints = "none";
    a.flows_per_rank = flows_to_all_peers;
    a.skips_empty_blocks = true;
    a.run = run;
    return a;
}

}  // namespace tucoll::alltoallv
