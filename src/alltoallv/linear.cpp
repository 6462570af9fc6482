// linear: Open MPI's basic linear alltoallv — every receive, then every send, posted at once in
// ascending rank order, completed by one wait.
#include "alltoallv/common.h"

namespace tucoll::alltoallv {
namespace {

int run(Context &ctx, const Call &call, const Params &, CallStats &stats) {
    const int p = ctx.size(), me = ctx.rank();
    copy_self_block(call, me);
    Requests reqs(2 * static_cast<size_t>(p));
    for (int i = 0; i < p; ++i) {
        if (i != me) TUCOLL_TRY(post_block_recv(reqs, call, i, ctx.comm()));
    }
    for (int i = 0; i < p; ++i) {
        if (i != me) TUCOLL_TRY(post_block_send(reqs, call, i, ctx.comm(), stats));
    }
    stats.rounds = p - 1;
    return reqs.wait_all();
}

}  // namespace

Algorithm linear_algorithm() {
    Algorithm a;
    a.name = "linear";
    a.summary = "Open MPI basic linear: all Irecv then all Isend in ascending rank order, one Waitall";
    a.constraints = "none";
    a.at_once = "P-1";
    a.run = run;
    return a;
}

}  // namespace tucoll::alltoallv
