// vendor: the MPI library's MPI_Allgather / MPI_Allgatherv through their PMPI entry points.
#include "allgather/allgather.h"
#include "core/errors.h"

namespace tucoll::allgather {
namespace {

int run(Context &ctx, const Call &call, const Params &, CallStats &stats) {
    const TypedArgs &a = call.typed;
    if (a.vector) {
        TUCOLL_MPI(PMPI_Allgatherv(a.sendbuf, a.sendcount, a.sendtype, a.recvbuf, a.recvcounts, a.rdispls,
                                   a.recvtype, ctx.comm()));
    } else {
        TUCOLL_MPI(PMPI_Allgather(a.sendbuf, a.sendcount, a.sendtype, a.recvbuf, *a.recvcounts, a.recvtype,
                                  ctx.comm()));
    }
    return MPI_SUCCESS;
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
