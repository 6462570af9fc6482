// Allgather and allgatherv: what every algorithm receives, and the registry entry type. Both
// collectives share one byte view — block j of the result is counts[j] bytes at base + displs[j],
// this rank's own block already in place — so ring and sparbit serve both.
#pragma once

#include <mpi.h>

#include <cstdint>

#include "core/context.h"
#include "core/p2p.h"
#include "core/registry.h"
#include "core/stats.h"
#include "core/task.h"

namespace tucoll::allgather {

// The user's arguments. For allgather, recvcounts points at the single recvcount and rdispls is
// null; for allgatherv both are arrays of P entries.
struct TypedArgs {
    const void *sendbuf;  // may be MPI_IN_PLACE
    int sendcount;
    MPI_Datatype sendtype;
    void *recvbuf;
    const int *recvcounts;
    const int *rdispls;
    MPI_Datatype recvtype;
    MPI_Comm comm;
    bool vector;  // allgatherv
};

struct Call {
    const TypedArgs &typed;
    char *base;
    const int64_t *counts;  // bytes of each rank's block
    const int64_t *displs;  // byte offset of each rank's block from base
    bool uniform;           // every block the same size, block j at j * counts[0] (allgather)
};

// An algorithm's schedule (core/task.h), run blocking or nonblocking alike.
using RunFn = Task (*)(Context &ctx, const Call &call, const Params &params, CallStats &stats);

struct Algorithm : AlgorithmInfo {
    RunFn run = nullptr;
    bool typed = false;  // runs on the user's typed arguments (vendor)
};

const Registry<Algorithm> &allgather_registry();
const Registry<Algorithm> &allgatherv_registry();

// Registry entries, one file per algorithm.
Algorithm vendor_allgather();
Algorithm vendor_allgatherv();
Algorithm ring_algorithm();
Algorithm neighbor_algorithm();
Algorithm recdoubling_algorithm();
Algorithm bruck_algorithm();
Algorithm sparbit_algorithm();

// The block lists of one step, kept from call to call.
struct StepLists {
    BlockList out, in;
};

// The ring exchange, also the documented fallback of neighbor exchange for odd P.
Task ring_exchange(Context &ctx, const Call &call, CallStats &stats);

}  // namespace tucoll::allgather
