// spreadout: the spread-out schedule — in round i a rank sends to rank+i and receives from
// rank-i, so every rank has a distinct destination per round; all rounds posted at once.
#include "alltoallv/common.h"

namespace tucoll::alltoallv {
namespace {

Task run(Context &ctx, const Call &call, const Params &, CallStats &stats) {
    const int p = ctx.size(), me = ctx.rank();
    return windowed_exchange(ctx, call, p - 1, p - 1, [me, p](int i) { return send_up(me, p, i); }, stats);
}

}  // namespace

Algorithm spreadout_algorithm() {
    Algorithm a;
    a.name = "spreadout";
    a.summary = "spread-out: round-robin by rank distance (send rank+i, receive rank-i), all posted at once";
    a.constraints = "none";
    a.flows_per_rank = flows_to_all_peers;
    a.skips_empty_blocks = true;
    a.run = run;
    return a;
}

}  // namespace tucoll::alltoallv
