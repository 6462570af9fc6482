// vendor: the MPI library's MPI_Allgather / MPI_Allgatherv through their PMPI entry points.
#include "allgather/allgather.h"
#include "core/errors.h"
#include "core/mpi_step.h"
#include "core/p2p.h"
#include "core/platform.h"

namespace tucoll::allgather {
namespace {

// The MPI unpacks what it received.
void account(Context &ctx, const TypedArgs &a) {
    int64_t received = 0;
    if (a.vector) {
        for (int i = 0; i < ctx.size(); ++i) received += a.recvcounts[i];
    } else {
        received = static_cast<int64_t>(ctx.size()) * *a.recvcounts;
    }
    platform::charge_packing(a.recvtype, received);
}

Task run(Context &ctx, const Call &call, const Params &, CallStats &) {
    const TypedArgs &a = call.typed;
    // The MPI packs a non-contiguous block as it sends it and unpacks those it receives.
    if (a.sendbuf != MPI_IN_PLACE) platform::charge_packing(a.sendtype, a.sendcount);
    return mpi_step(
        ctx,
        [&ctx, &a](MPI_Request *req) {
            int rc = MPI_SUCCESS;
            if (a.vector) {
                rc = req ? PMPI_Iallgatherv(a.sendbuf, a.sendcount, a.sendtype, a.recvbuf, a.recvcounts, a.rdispls,
                                            a.recvtype, ctx.comm(), req)
                         : PMPI_Allgatherv(a.sendbuf, a.sendcount, a.sendtype, a.recvbuf, a.recvcounts, a.rdispls,
                                           a.recvtype, ctx.comm());
            } else {
                rc = req ? PMPI_Iallgather(a.sendbuf, a.sendcount, a.sendtype, a.recvbuf, *a.recvcounts, a.recvtype,
                                           ctx.comm(), req)
                         : PMPI_Allgather(a.sendbuf, a.sendcount, a.sendtype, a.recvbuf, *a.recvcounts, a.recvtype,
                                          ctx.comm());
            }
            if (rc == MPI_SUCCESS) return rc;
            return mpi_fail(rc, a.vector ? (req ? "PMPI_Iallgatherv" : "PMPI_Allgatherv")
                                         : (req ? "PMPI_Iallgather" : "PMPI_Allgather"));
        },
        [&ctx, &a] { account(ctx, a); });
}

Algorithm make(const char *summary) {
    Algorithm a;
    a.name = "vendor";
    a.summary = summary;
    a.constraints = "none; rounds and messages are reported as 0 because the vendor's schedule is not visible";
    a.flows_per_rank = flows_unknown;
    a.run = run;
    a.typed = true;
    return a;
}

}  // namespace

Algorithm vendor_allgather() { return make("the MPI library's MPI_Allgather (via PMPI)"); }
Algorithm vendor_allgatherv() { return make("the MPI library's MPI_Allgatherv (via PMPI)"); }

}  // namespace tucoll::allgather
