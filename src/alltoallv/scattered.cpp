// scattered: MPICH's scattered alltoallv — the spread-out schedule cut into batches of
// block_count rounds, each batch completed before the next starts, to limit congestion.
#include "alltoallv/common.h"

namespace tucoll::alltoallv {
namespace {

Task run(Context &ctx, const Call &call, const Params &params, CallStats &stats) {
    const int p = ctx.size(), me = ctx.rank();
    // As MPICH: receive from rank+i, send to rank-i.
    return windowed_exchange(ctx, call, p - 1, window_of(params.get("block_count"), p - 1),
                             [me, p](int i) { return send_down(me, p, i); }, stats);
}

}  // namespace

Algorithm scattered_algorithm() {
    Algorithm a;
    a.name = "scattered";
    a.summary = "MPICH scattered: spread-out rounds in batches of block_count, each batch waited for";
    a.params = {{"block_count", Bound::constant(0), Bound::unbounded(), 32,
                 "rounds per batch; 0 (or >= P-1) posts all rounds at once; default as MPICH's throttle", Grid::kBatch,
                 Bound::procs(-1)}};
    a.constraints = "none";
    a.flows_per_rank = [](const Params &params, const Scope &scope) -> int64_t {
        return window_of(params.get("block_count"), scope.nprocs - 1);
    };
    a.skips_empty_blocks = true;
    a.run = run;
    return a;
}

}  // namespace tucoll::alltoallv
