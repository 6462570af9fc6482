// The few things that differ between running on a real MPI library and on SimGrid's SMPI
// (a simulated cluster). Each target links one implementation: src/platform/mpi.cpp or
// src/platform/smpi.cpp.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>

namespace tucoll::platform {

// Accounts for a local memory copy of `bytes` bytes. Real MPI: nothing (the copy takes its own
// time). SMPI: advances the simulated clock by bytes / the modelled copy bandwidth, so that
// algorithms that copy more pay for it while host computation is not sampled.
void charge_copy(int64_t bytes);

// Data buffers of algorithms (64-byte aligned). Under SMPI with TUCOLL_SIM_SHARED_BUFFERS=1
// they are SMPI shared allocations — one physical copy for all simulated ranks — which makes
// runs at thousands of ranks fit in memory but leaves their contents meaningless.
void *allocate(size_t bytes);
void release(void *ptr);

// Bytes of a message announced by MPI_Probe / MPI_Iprobe (MPI_Get_elements_x where available:
// SMPI lacks it and its messages stay below 2 GiB).
int probed_bytes(MPI_Status *status, int64_t *bytes);

// "mpi" or "smpi", for statistics and logs.
const char *name();

}  // namespace tucoll::platform
