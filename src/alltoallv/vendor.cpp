// vendor: the MPI library's own MPI_Alltoallv, called through its PMPI entry point so that the
// tucoll interposer never routes it back into tucoll.
#include "alltoallv/alltoallv.h"
#include "core/errors.h"
#include "core/mpi_step.h"
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

Task run(Context &ctx, const Call &call, const Params &, CallStats &stats) {
    const TypedArgs &a = call.typed;
    // The MPI packs non-contiguous blocks as it sends them and unpacks those it receives.
    if (a.sendbuf != MPI_IN_PLACE) platform::charge_packing(a.sendtype, elements(a.sendcounts, ctx.size()));
    return mpi_step(
        ctx,
        [&ctx, &a](MPI_Request *req) {
            const int rc = req ? PMPI_Ialltoallv(a.sendbuf, a.sendcounts, a.sdispls, a.sendtype, a.recvbuf,
                                                 a.recvcounts, a.rdispls, a.recvtype, ctx.comm(), req)
                               : PMPI_Alltoallv(a.sendbuf, a.sendcounts, a.sdispls, a.sendtype, a.recvbuf,
                                                a.recvcounts, a.rdispls, a.recvtype, ctx.comm());
            return rc == MPI_SUCCESS ? rc : mpi_fail(rc, req ? "PMPI_Ialltoallv" : "PMPI_Alltoallv");
        },
        [&ctx, &a, &stats] { account(ctx, a, stats); });
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
