// scattered: MPICH's scattered alltoallv — the spread-out schedule cut into batches of
// block_count rounds, each batch completed before the next starts, to limit congestion.
#include <algorithm>

#include "alltoallv/common.h"

namespace tucoll::alltoallv {
namespace {

int run(Context &ctx, const Call &call, const Params &params, CallStats &stats) {
    const int p = ctx.size(), me = ctx.rank();
    const long requested = params.get("block_count");
    const int batch = (requested == 0 || requested >= p - 1) ? std::max(1, p - 1) : static_cast<int>(requested);
    copy_self_block(call, me);
    Requests reqs(2 * static_cast<size_t>(batch));
    for (int first = 1; first < p; first += batch) {
        const int n = std::min(batch, p - first);
        // As MPICH: receive from rank+i, send to rank-i.
        for (int i = 0; i < n; ++i) TUCOLL_TRY(post_block_recv(reqs, call, (me + first + i) % p, ctx.comm()));
        for (int i = 0; i < n; ++i) {
            TUCOLL_TRY(post_block_send(reqs, call, ((me - first - i) % p + p) % p, ctx.comm(), stats));
        }
        TUCOLL_TRY(reqs.wait_all());
    }
    stats.rounds = p - 1;
    return MPI_SUCCESS;
}

}  // namespace

Algorithm scattered_algorithm() {
    Algorithm a;
    a.name = "scattered";
    a.summary = "MPICH scattered: spread-out rounds in batches of block_count, each batch waited for";
    a.params = {{"block_count", Bound::constant(0), Bound::unbounded(), 32,
                 "rounds per batch; 0 (or >= P-1) posts all rounds at once; default as MPICH's throttle"}};
    a.constraints = "none";
    a.at_once = "param:block_count";
    a.run = run;
    return a;
}

}  // namespace tucoll::alltoallv
