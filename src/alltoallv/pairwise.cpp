// pairwise: Open MPI's pairwise exchange — in step s a rank sends to rank+s and receives from
// rank-s, completing each step before the next.
#include "alltoallv/common.h"

namespace tucoll::alltoallv {
namespace {

Task run(Context &ctx, const Call &call, const Params &, CallStats &stats) {
    const int p = ctx.size(), me = ctx.rank();
    return windowed_exchange(ctx, call, p - 1, 1, [me, p](int s) { return send_up(me, p, s); }, stats);
}

}  // namespace

Algorithm pairwise_algorithm() {
    Algorithm a;
    a.name = "pairwise";
    a.summary = "Open MPI pairwise: P-1 steps, send to rank+s and receive from rank-s, one step at a time";
    a.constraints = "none";
    a.skips_empty_blocks = true;
    a.run = run;
    return a;
}

}  // namespace tucoll::alltoallv
