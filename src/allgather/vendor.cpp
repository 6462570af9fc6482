// vendor: the MPI library's MPI_Allgather / MPI_Allgatherv through their PMPI entry points.
#include "allgather/allgather.h"
#include "core/errors.h"
#include "core/platform.h"

namespace tucoll::allgather {
namespace {

Task run(Context &ctx, const Call &call, const Params &, CallStats &stats) {
    const TypedArgs &a = call.typed;
    // The MPI packs a non-contiguous block as it sends it and unpacks those it receives.
    if (a.sendbuf != MPI_IN_PLACE) platform::charge_packing(a.sendtype, a.sendcount);
    int64_t received = 0;
    Requests &reqs = ctx.requests();
    // A nonblocking call runs the MPI's nonblocking form, whose progress is the MPI's own.
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Request *nonblocking = reqs.deferred() ? &req : nullptr;
    if (a.vector) {
        TUCOLL_CO_MPI(nonblocking ? PMPI_Iallgatherv(a.sendbuf, a.sendcount, a.sendtype, a.recvbuf, a.recvcounts,
                                                     a.rdispls, a.recvtype, ctx.comm(), nonblocking)
                                  : PMPI_Allgatherv(a.sendbuf, a.sendcount, a.sendtype, a.recvbuf, a.recvcounts,
                                                    a.rdispls, a.recvtype, ctx.comm()));
        for (int i = 0; i < ctx.size(); ++i) received += a.recvcounts[i];
    } else {
        TUCOLL_CO_MPI(nonblocking ? PMPI_Iallgather(a.sendbuf, a.sendcount, a.sendtype, a.recvbuf, *a.recvcounts,
                                                    a.recvtype, ctx.comm(), nonblocking)
                                  : PMPI_Allgather(a.sendbuf, a.sendcount, a.sendtype, a.recvbuf, *a.recvcounts,
                                                   a.recvtype, ctx.comm()));
        received = static_cast<int64_t>(ctx.size()) * *a.recvcounts;
    }
    if (nonblocking) {
        reqs.adopt(req);
        co_await reqs.completion();
    }
    platform::charge_packing(a.recvtype, received);
    co_return MPI_SUCCESS;
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
