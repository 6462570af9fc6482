// Where a rank sits on its node: which rank of the node it is (ranks share the node's GPUs in
// turn by it: a world rank would put every rank of the second node on the GPUs in the first
// node's order), whether a communicator lies on one node, and the clock that node's ranks share.
#pragma once

#include <mpi.h>

#include <cstdint>

namespace tucoll::bench {

// This rank's index among the ranks of MPI_COMM_WORLD on its node; asked of MPI once.
int node_local_rank();

// Whether every rank of `comm` is on one shared-memory node (collective; every rank gets the same
// answer, since the node's communicators partition `comm`).
bool on_one_node(MPI_Comm comm);

// CLOCK_MONOTONIC in nanoseconds: one clock for every process of a node (and, under SMPI, whose
// mpi.h maps clock_gettime to it, the simulated clock), unlike MPI_Wtime, which Open MPI 4.1
// counts from each process's own start.
int64_t monotonic_ns();

}  // namespace tucoll::bench
