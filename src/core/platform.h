// The few things that differ between running on a real MPI library and on SimGrid's SMPI
// (a simulated cluster). Each target links one implementation: src/platform/mpi.cpp or
// src/platform/smpi.cpp.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>

namespace tucoll::platform {

// Accounts for a local memory copy of `bytes` bytes made in `pieces` contiguous pieces (one
// memcpy, or the ranges a datatype engine walks). Real MPI: nothing (the copy takes its own
// time). SMPI: advances the simulated clock by pieces x the modelled time per piece
// (TUCOLL_SIM_COPY_PIECE, seconds; 0 unless the platform sets it) plus bytes / the modelled copy
// bandwidth, so that algorithms that copy more, or in smaller pieces, pay for it while host
// computation is not sampled.
void charge_copy(int64_t bytes, int64_t pieces = 1);
// What an MPI copies to send or receive `elements` elements of `type` when the type is not
// contiguous: its datatype engine packs them into one buffer, or unpacks them (the vendor's
// collectives on a user's derived datatype). Real MPI: nothing. SMPI packs every derived type
// without simulated time: a non-contiguous `type` is charged as a copy of its data; a named or
// contiguous one costs nothing.
void charge_packing(MPI_Datatype type, int64_t elements);
// Real MPI: nothing. SMPI: advances the calling rank's simulated clock by exactly `seconds`,
// however small (the charge is made in flops at the simulated host's own speed, so neither
// smpi/host-speed nor smpi/cpu-threshold scales or drops it).
void charge_seconds(double seconds);
// What a tucoll call costs before its exchange (checks, the communicator's context, selection),
// charged once per blocking or nonblocking call. Real MPI: nothing. SMPI: TUCOLL_SIM_CALL seconds
// (0 unless the platform sets `call_cost`, as tucoll calibrate --here measures it), since host
// computation is not sampled.
void charge_call();

// Data buffers of algorithms (64-byte aligned). Under SMPI with TUCOLL_SIM_SHARED_BUFFERS=1
// they are SMPI shared allocations — one physical copy for all simulated ranks — which makes
// runs at thousands of ranks fit in memory but leaves their contents meaningless.
void *allocate(size_t bytes);
void release(void *ptr);
// Whether data buffers are SMPI shared allocations (TUCOLL_SIM_SHARED_BUFFERS=1 under SMPI; never
// on a real MPI): their contents are meaningless and copies into them can be skipped.
bool shared_buffers();

// Bytes of a message a status describes — one announced by a probe, or one received into bytes
// or a datatype of bytes (MPI_Get_elements_x where available: SMPI lacks it and its messages
// stay below 2 GiB).
int message_bytes(MPI_Status *status, int64_t *bytes);

// A probed message of the sparse exchanges. Real MPI: a matched probe (MPI_Mprobe /
// MPI_Improbe), so that a message announced to one thread is received by that thread and no other
// (two threads exchanging on communicators of one process). SMPI lacks matched probes, and its
// ranks are single-threaded: there a plain probe, the receive naming the probed source and tag.
struct Probed {
    MPI_Status status;
    MPI_Message message = MPI_MESSAGE_NULL;
    int tag = 0;
    MPI_Comm comm = MPI_COMM_NULL;
};
// Waits for (blocking) or looks for a message on `tag` from any rank; *found says whether one was.
int probe(MPI_Comm comm, int tag, bool blocking, bool *found, Probed *out);
// Receives the probed message into `buf`, described as `count` elements of `type`.
int receive(Probed &probed, void *buf, int count, MPI_Datatype type);

// A non-blocking barrier (NBX's termination test). Real MPI: MPI_Ibarrier. SMPI: a dissemination
// barrier of zero-byte messages on `tag`, progressed by test(): SMPI's own MPI_Ibarrier is a
// linear gather to rank 0 and release, which would make NBX look O(P) in simulation where real
// MPIs (libnbc, MPICH) complete in ceil(log2 P) rounds.
class NonblockingBarrier {
  public:
    NonblockingBarrier() = default;
    NonblockingBarrier(const NonblockingBarrier &) = delete;
    NonblockingBarrier &operator=(const NonblockingBarrier &) = delete;
    ~NonblockingBarrier();

    // Collective over `comm`; `tag` is reserved for the barrier until it completes.
    int start(MPI_Comm comm, int tag);
    // Sets *done once every rank has started the barrier; never blocks.
    int test(bool *done);

  private:
    int post_round();  // SMPI: the receive and send of the current dissemination round

    MPI_Comm comm_ = MPI_COMM_NULL;
    int tag_ = 0, rank_ = 0, size_ = 1, distance_ = 1;
    MPI_Request request_ = MPI_REQUEST_NULL;  // MPI_Ibarrier's, or the current round's receive
    MPI_Request sends_[32] = {};              // one per dissemination round (ceil(log2 P) <= 31)
    int nsends_ = 0;
    bool finished_ = false;
};

// "mpi" or "smpi", for statistics and logs.
const char *name();
// Whether tucoll may run a thread of its own (TUCOLL_PROGRESS=thread): not for simulated ranks,
// whose time only the simulator advances.
bool threads_allowed();

}  // namespace tucoll::platform
