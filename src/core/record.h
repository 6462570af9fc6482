// Recording the exchanges a program makes (TUCOLL_RECORD=DIR, tucoll_record_start), so that
// tucoll can be tuned for that program: `tucoll tune` replays the recorded P x P byte matrices
// on a simulated cluster. Per communicator, rank 0 writes into DIR/<communicator>/
//
//   manifest.json   communicator size and nodes, every distinct pattern with its call count,
//                   datatype sizes, what ran and how long it took, and the calls in order
//   <id>.pattern    one distinct P x P byte matrix (row i = what rank i sends), as
//                   `tucoll-bench --dist file:` reads it
//
// The cost per call is a fingerprint and a copy of the rank's row (O(P), local); every 32 calls
// one allreduce of 32 x 16 bytes over the private communicator agrees on their matrices, and
// only a matrix never seen before on the communicator is gathered to rank 0. Every rank takes
// the same decisions from the same reduced values, so the traffic is the same everywhere —
// recording must be on alike on every process (as the variable is under mpirun). The last
// calls are agreed when the recording stops, the communicator is freed or MPI finalizes.
//
// Nonblocking calls and persistent starts are recorded when they start (in the order MPI makes
// the same on every rank) and timed to their completion; but a start or a completion is no
// place for a collective (another rank may be sending to this one first), so their windows are
// agreed only where every rank is in a collective anyway: at the next blocking tucoll call on
// the communicator, after what was outstanding there completed, or at the end. A window full of
// such calls with no blocking call to agree it at records no more of them until then; the
// manifest counts those (`calls_not_recorded`).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace tucoll {

class Context;
struct CallStats;

namespace record {

// Whether recording is on in this process (an atomic load; TUCOLL_RECORD is read once).
bool active();
// tucoll_record_start / tucoll_record_stop: the directory (created when missing), and agreeing
// and writing every communicator's recording (collective over each, in context order).
int start(const char *dir);
int stop();

// One call as the recorder sees it; `on` when it is recorded.
struct Call {
    bool on = false;
    int pending = -1;  // its place among the calls awaiting agreement
    uint64_t generation = 0, window = 0;  // the recording and the window it was recorded in
    double started = 0;
};

// Before the call runs (local): this rank's row of the byte matrix and the send datatype's size.
// A call that finds the window full (only nonblocking ones can) is counted, not recorded.
void before(Context &ctx, const char *collective, const std::vector<int64_t> &row, int64_t type_size,
            const char *requested, Call *call);
// A blocking call, before it records itself and once what was outstanding on the communicator
// completed: agrees a window that nonblocking calls filled (collective, where one is full).
void make_room(Context &ctx);
// After a blocking call ran: its time and what ran (stats.algorithm); collective where the call
// completes a window (every rank's does at the same call).
void after(Context &ctx, const Call &call, const CallStats &stats, int rc);
// A nonblocking call or a persistent start completed: its time and what ran (local).
void completed(Context &ctx, const Call &call, const CallStats &stats, int rc);

// Per-communicator state, owned by the context; writes its manifest when it ends.
class Recorder;
struct RecorderDeleter {
    void operator()(Recorder *r) const;
};
using RecorderPtr = std::unique_ptr<Recorder, RecorderDeleter>;

}  // namespace record
}  // namespace tucoll
