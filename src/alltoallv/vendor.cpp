// vendor: the MPI library's own MPI_Alltoallv, called through its PMPI entry point so that the
// tucoll interposer never routes it back into tucoll.
#include "alltoallv/alltoallv.h"
#include "core/errors.h"
#include "core/p2p.h"
#include "core/platform.h"

namespace tucoll::alltoallv {
namespace {

int64_t elements(const int *counts, int p) {
    int64_t n = 0;
    for (int i = 0; i < p; ++i) n += counts[i];
    return n;
}

// After the exchange: the MPI unpacks what it received; the vendor's schedule is not visible,
// so the statistics report the messages any exchange needs at least.
void account(Context &ctx, const TypedArgs &a, CallStats &stats) {
    platform::charge_packing(a.recvtype, elements(a.recvcounts, ctx.size()));
    if (a.sendbuf == MPI_IN_PLACE) return;
    MPI_Count size = 0;
    MPI_Type_size_x(a.sendtype, &size);
    for (int i = 0; i < ctx.size(); ++i) {
        if (i != ctx.rank() && a.sendcounts[i] > 0) stats.count_send(static_cast<int64_t>(a.sendcounts[i]) * size);
    }
}

// A nonblocking call runs the MPI's MPI_Ialltoallv, whose progress is the MPI's own.
Task run_nonblocking(Context &ctx, const TypedArgs &a, CallStats &stats) {
    MPI_Request req = MPI_REQUEST_NULL;
    TUCOLL_CO_MPI(PMPI_Ialltoallv(a.sendbuf, a.sendcounts, a.sdispls, a.sendtype, a.recvbuf, a.recvcounts,
                                  a.rdispls, a.recvtype, ctx.comm(), &req));
    ctx.requests().adopt(req);
    co_await ctx.requests().completion();
    account(ctx, a, stats);
    co_return MPI_SUCCESS;
}

// A blocking call finishes on the spot: no coroutine.
Task run(Context &ctx, const Call &call, const Params &, CallStats &stats) {
    const TypedArgs &a = call.typed;
    // The MPI packs non-contiguous blocks as it sends them and unpacks those it receives.
    if (a.sendbuf != MPI_IN_PLACE) platform::charge_packing(a.sendtype, elements(a.sendcounts, ctx.size()));
    if (ctx.requests().deferred()) return run_nonblocking(ctx, a, stats);
    const int rc = PMPI_Alltoallv(a.sendbuf, a.sendcounts, a.sdispls, a.sendtype, a.recvbuf, a.recvcounts, a.rdispls,
                                  a.recvtype, ctx.comm());
    if (rc != MPI_SUCCESS) return Task::finished(mpi_fail(rc, "PMPI_Alltoallv"));
    account(ctx, a, stats);
    return Task::finished(MPI_SUCCESS);
}

}  // namespace

Algorithm vendor_algorithm() {
    Algorithm a;
    a.name = "vendor";
    a.summary = "the MPI library's MPI_Alltoallv (via PMPI)";
    a.constraints = "none; rounds are reported as 0 because the vendor's schedule is not visible";
    a.flows_per_rank = flows_unknown;
    a.skips_empty_blocks = true;
    a.run = run;
    a.typed = true;
    return a;
}

}  // namespace tucoll::alltoallv
