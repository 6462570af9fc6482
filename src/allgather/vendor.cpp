// vendor: the MPI library's MPI_Allgather / MPI_Allgatherv through their PMPI entry points.
#include "allgather/allgather.h"
#include "core/errors.h"
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

// A nonblocking call runs the MPI's nonblocking form, whose progress is the MPI's own.
Task run_nonblocking(Context &ctx, const TypedArgs &a) {
    MPI_Request req = MPI_REQUEST_NULL;
    if (a.vector) {
        TUCOLL_CO_MPI(PMPI_Iallgatherv(a.sendbuf, a.sendcount, a.sendtype, a.recvbuf, a.recvcounts, a.rdispls,
                                       a.recvtype, ctx.comm(), &req));
    } else {
        TUCOLL_CO_MPI(PMPI_Iallgather(a.sendbuf, a.sendcount, a.sendtype, a.recvbuf, *a.recvcounts, a.recvtype,
                                      ctx.comm(), &req));
    }
    ctx.requests().adopt(req);
    co_await ctx.requests().completion();
    account(ctx, a);
    co_return MPI_SUCCESS;
}

// A blocking call finishes on the spot: no coroutine.
Task run(Context &ctx, const Call &call, const Params &, CallStats &) {
    const TypedArgs &a = call.typed;
    // The MPI packs a non-contiguous block as it sends it and unpacks those it receives.
    if (a.sendbuf != MPI_IN_PLACE) platform::charge_packing(a.sendtype, a.sendcount);
    if (ctx.requests().deferred()) return run_nonblocking(ctx, a);
    const int rc = a.vector ? PMPI_Allgatherv(a.sendbuf, a.sendcount, a.sendtype, a.recvbuf, a.recvcounts, a.rdispls,
                                              a.recvtype, ctx.comm())
                            : PMPI_Allgather(a.sendbuf, a.sendcount, a.sendtype, a.recvbuf, *a.recvcounts, a.recvtype,
                                             ctx.comm());
    if (rc != MPI_SUCCESS) return Task::finished(mpi_fail(rc, a.vector ? "PMPI_Allgatherv" : "PMPI_Allgather"));
    account(ctx, a);
    return Task::finished(MPI_SUCCESS);
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
