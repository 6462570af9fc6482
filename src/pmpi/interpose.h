// libtucoll_preload's rooms share these. The interposer defines MPI_* symbols, so inside it every
// call to the MPI library goes through PMPI_* (a call to MPI_* would come back here), except where
// it means to come back: the Fortran bindings call this interposer's C functions, and the waits
// poll with its own tests. Everything here has hidden visibility; only TUCOLL_EXPORT symbols are
// the library's interface.
#pragma once

#include <mpi.h>

#include "tucoll.h"

#define TUCOLL_EXPORT extern "C" __attribute__((visibility("default")))

// MPI-4's persistent collectives (Open MPI 5 has them while it reports MPI 3.1).
#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define TUCOLL_PRELOAD_PERSISTENT 1
#else
#define TUCOLL_PRELOAD_PERSISTENT 0
#endif

namespace tucoll::preload {

// ---- common.cpp: the environment, the log, errors
bool disabled();  // TUCOLL_DISABLE: every call goes to the MPI library
bool verbose();   // TUCOLL_VERBOSE: rank 0 of each communicator logs what ran
// Communicators tucoll does not serve (intercommunicators, whatever MPI itself rejects), and
// every communicator under TUCOLL_DISABLE (said once under TUCOLL_VERBOSE).
bool pass_through(MPI_Comm comm);
// The MPI error handling the caller expects: tucoll's message, then the communicator's handler;
// on success, the log line of what ran (once per collective and algorithm).
int finish(const char *collective, MPI_Comm comm, int rc);

// ---- nonblocking.cpp: tucoll's nonblocking requests behind generalized requests of the MPI
bool is_started(MPI_Request request);
bool any_started(int count, const MPI_Request requests[]);
// Advances the tucoll requests paired with `requests` (all of them complete with `block`) and
// completes the generalized request of each that has; one that failed is reported and, where
// `release_failed`, freed. Returns the first error.
int advance_started(int count, MPI_Request requests[], bool block, bool release_failed);
// Whether a nonblocking tucoll request exists (started and not yet completed by the program).
bool any_started();

// ---- completion.cpp: the wait and test family
// MPI's progress rule: while a program waits in the MPI library, its outstanding nonblocking
// collectives advance, and another rank's completion (of one of them, or of a message it sends
// only after one) may depend on that. tucoll's advance only when tucoll runs, so while any is
// outstanding a wait here polls — the MPI's test, then tucoll_progress — and falls back to the
// MPI's blocking wait once none is; a test advances them once. Under MPI_THREAD_MULTIPLE neither
// (another thread may be in tucoll; TUCOLL_PROGRESS=thread advances them there).
// Whether tucoll operations may be outstanding and this thread may advance them.
bool may_advance_others();
// Whether tucoll operations are outstanding that this thread may advance (after advancing them
// once): what turns a blocking call into its polled nonblocking form.
inline bool others_outstanding() {
    if (!may_advance_others()) return false;
    int pending = 0;
    tucoll_progress(&pending);
    return pending > 0;
}
// The MPI's `wait()`, or, while tucoll operations are outstanding, its `test(&flag)` polled with
// tucoll_progress between. The test comes first: a converted blocking call has just advanced
// them (others_outstanding).
template <class Test, class Wait>
int wait_advancing_others(Test &&test, Wait &&wait) {
    if (!may_advance_others()) return wait();
    for (;;) {
        int flag = 0;
        const int rc = test(&flag);
        if (rc != MPI_SUCCESS || flag) return rc;
        int pending = 0;
        tucoll_progress(&pending);
        if (pending == 0) return wait();
    }
}
// ---- persistent.cpp: tucoll's plans behind inactive persistent requests of the MPI
// Runs the exchanges of the active plans among `requests`, in array order.
int complete_plans(int count, const MPI_Request requests[]);
// A plan's request reports an empty status (not its stand-in send's MPI_PROC_NULL source).
void empty_status(MPI_Request request, MPI_Status *status);
// Frees the plan paired with `request`, if any; refused while it is active.
int free_plan(MPI_Request request);
// Whether a persistent tucoll plan exists (one may be active).
bool any_plans();

}  // namespace tucoll::preload
