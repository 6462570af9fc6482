// bruck: Bruck's allgather (seed 001 §II-A). The own block moves to the front of the receive
// buffer; in step s a rank sends its first min(2^s, P - 2^s) blocks to rank - 2^s and appends
// those of rank + 2^s; ceil(log2 P) steps for any P. Block i then belongs to rank + i, and a final
// rotation puts every block in its place — the memory shift Sparbit avoids.
#include <algorithm>

#include "allgather/allgather.h"
#include "core/copy.h"
#include "core/errors.h"
#include "core/p2p.h"

namespace tucoll::allgather {
namespace {

Task run(Context &ctx, const Call &call, const Params &, CallStats &stats) {
    const int p = ctx.size(), me = ctx.rank();
    const int64_t block = call.counts[0];
    char *buf = call.base;
    local_copy(buf, buf + call.displs[me], block);
    Requests &reqs = ctx.requests();
    for (int pof = 1; pof < p; pof *= 2) {
        const int64_t n = std::min(pof, p - pof);
        reqs.recv(buf + pof * block, n * block, (me + pof) % p, kTagData, ctx.comm());
        if (n * block > 0) stats.count_send(n * block);
        reqs.send(buf, n * block, (me - pof + p) % p, kTagData, ctx.comm());
        co_await reqs.completion();
        ++stats.rounds;
    }
    // Position i holds rank (me + i)'s block: rotate right by `me` blocks, in place.
    local_rotate(buf, static_cast<int64_t>(p) * block, static_cast<int64_t>(me) * block);
    co_return MPI_SUCCESS;
}

}  // namespace

Algorithm bruck_algorithm() {
    Algorithm a;
    a.name = "bruck";
    a.summary = "Bruck: ceil(log2 P) steps to rank-2^s doubling the data, then a final rotation";
    a.constraints = "none";
    a.run = run;
    return a;
}

}  // namespace tucoll::allgather
