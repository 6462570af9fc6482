// pairwise: Open MPI's pairwise exchange — in step s a rank sends to rank+s and receives from
// rank-s, completing each step before the next.
#include "alltoallv/common.h"

namespace tucoll::alltoallv {
namespace {

int run(Context &ctx, const Call &call, const Params &, CallStats &stats) {
    const int p = ctx.size(), me = ctx.rank();
    copy_self_block(call, me);
    Requests reqs(2);
    for (int step = 1; step < p; ++step) {
        const int dest = (me + step) % p;
        const int source = (me - step + p) % p;
        TUCOLL_TRY(post_block_recv(reqs, call, source, ctx.comm()));
        TUCOLL_TRY(post_block_send(reqs, call, dest, ctx.comm(), stats));
        TUCOLL_TRY(reqs.wait_all());
    }
    stats.rounds = p - 1;
    return MPI_SUCCESS;
}

}  // namespace

Algorithm pairwise_algorithm() {
    Algorithm a;
    a.name = "pairwise";
    a.summary = "Open MPI pairwise: P-1 steps, send to rank+s and receive from rank-s, one step at a time";
    a.constraints = "none";
    a.run = run;
    return a;
}

}  // namespace tucoll::alltoallv
