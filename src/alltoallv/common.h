// Pieces shared by the direct (one message per block) alltoallv algorithms.
#pragma once

#include "alltoallv/alltoallv.h"
#include "core/copy.h"
#include "core/errors.h"
#include "core/p2p.h"

namespace tucoll::alltoallv {

// The block a rank sends to itself never leaves the process.
inline void copy_self_block(const Call &call, int me) {
    local_copy(call.rbuf + call.rdispls[me], call.sbuf + call.sdispls[me], call.rcounts[me]);
}

// Zero-size blocks are skipped on both sides: the receiver knows the size from recvcounts and
// the sender from sendcounts, and MPI's signature rules make the two agree.
inline int post_block_recv(Requests &reqs, const Call &call, int source, MPI_Comm comm) {
    if (call.rcounts[source] == 0) return MPI_SUCCESS;
    return reqs.recv(call.rbuf + call.rdispls[source], call.rcounts[source], source, kTagData, comm);
}

inline int post_block_send(Requests &reqs, const Call &call, int dest, MPI_Comm comm, CallStats &stats) {
    if (call.scounts[dest] == 0) return MPI_SUCCESS;
    stats.count_send(call.scounts[dest]);
    return reqs.send(call.sbuf + call.sdispls[dest], call.scounts[dest], dest, kTagData, comm);
}

}  // namespace tucoll::alltoallv
