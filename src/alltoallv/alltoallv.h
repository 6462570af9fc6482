// Non-uniform all-to-all: what every algorithm receives, and the registry entry type.
#pragma once

#include <mpi.h>

#include <cstdint>

#include "core/context.h"
#include "core/registry.h"
#include "core/stats.h"

namespace tucoll::alltoallv {

// The user's arguments, exactly as given to tucoll_alltoallv.
struct TypedArgs {
    const void *sendbuf;  // may be MPI_IN_PLACE
    const int *sendcounts;
    const int *sdispls;
    MPI_Datatype sendtype;
    void *recvbuf;
    const int *recvcounts;
    const int *rdispls;
    MPI_Datatype recvtype;
    MPI_Comm comm;
};

// The byte view algorithms work on: block i of the send side is scounts[i] bytes at
// sbuf + sdispls[i]; block j of the receive side is rcounts[j] bytes at rbuf + rdispls[j].
// Offsets are 64-bit. Non-contiguous datatypes have been packed, MPI_IN_PLACE resolved.
struct Call {
    const TypedArgs &typed;
    const char *sbuf;
    const int64_t *scounts;
    const int64_t *sdispls;
    char *rbuf;
    const int64_t *rcounts;
    const int64_t *rdispls;
};

using RunFn = int (*)(Context &ctx, const Call &call, const Params &params, CallStats &stats);

struct Algorithm : AlgorithmInfo {
    RunFn run = nullptr;
    bool typed = false;  // runs on the user's typed arguments; no byte view is built
};

const Registry<Algorithm> &registry();

// One function per algorithm file, returning its registry entry.
Algorithm vendor_algorithm();
Algorithm linear_algorithm();
Algorithm pairwise_algorithm();
Algorithm spreadout_algorithm();
Algorithm scattered_algorithm();
Algorithm xor_algorithm();
Algorithm bruck2_algorithm();
Algorithm tuna_algorithm();
Algorithm tuna_coalesced_algorithm();
Algorithm tuna_staggered_algorithm();

}  // namespace tucoll::alltoallv
