// nbx (seed 004 Algorithm 2, Hoefler et al.'s NBX): synchronous sends; a rank probes and receives
// until its own sends have been matched, then enters a non-blocking barrier and keeps receiving
// until the barrier completes — when it does, every message of the exchange has been received.
// With a known recv_nnz: plain sends and exactly that many receives, no barrier.
#include "sparse/sparse.h"

namespace tucoll::sparse {
namespace {

int run(Context &ctx, const Outgoing &out, Inbox &inbox, const Known &known, CallStats &stats) {
    return nbx_exchange(ctx, ctx.comm(), out, known.recv_nnz, inbox, stats, true);
}

}  // namespace

Algorithm nbx_algorithm() {
    Algorithm a;
    a.name = "nbx";
    a.summary = "non-blocking consensus: synchronous sends, probing, non-blocking barrier";
    a.constraints = "none; a known recv_nnz replaces the barrier by counting";
    a.flows_per_rank = flows_unknown;
    a.run = run;
    return a;
}

}  // namespace tucoll::sparse
