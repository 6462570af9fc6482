// personalized (seed 004 Algorithm 1): non-blocking sends, a reduction that tells every rank how
// many messages it will receive (a reduce-scatter of per-destination counts: each rank needs only
// its own entry of the allreduce), then that many probed receives. Skipped when the caller
// passes the number of receives.
#include "sparse/sparse.h"

namespace tucoll::sparse {
namespace {

int run(Context &ctx, const Outgoing &out, Inbox &inbox, const Known &known, CallStats &stats) {
    return personalized_exchange(ctx, ctx.comm(), out, known.recv_nnz, inbox, stats, true);
}

}  // namespace

Algorithm personalized_algorithm() {
    Algorithm a;
    a.name = "personalized";
    a.summary = "sends, reduce-scatter of per-destination counts, then probed receives";
    a.constraints = "none; a known recv_nnz skips the reduction";
    a.flows_per_rank = flows_unknown;
    a.run = run;
    return a;
}

}  // namespace tucoll::sparse
