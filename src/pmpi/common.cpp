// libtucoll_preload: a PMPI interposer. MPI_Alltoallv, MPI_Alltoall, MPI_Allgather and
// MPI_Allgatherv (C, and the Fortran mpif.h / `use mpi` bindings where the MPI's layout is known)
// and their nonblocking forms (C) are routed through tucoll's selection — TUCOLL_ALLTOALLV /
// TUCOLL_ALLTOALL / TUCOLL_ALLGATHER / TUCOLL_ALLGATHERV, else the default (auto for the
// all-to-alls) — and, where the MPI is MPI-4, their persistent forms (MPI_Alltoallv_init,
// MPI_Alltoall_init, MPI_Allgather_init, MPI_Allgatherv_init) to tucoll's persistent plans, so
// unmodified programs get the tuned algorithms with
//
//     LD_PRELOAD=libtucoll_preload.so mpirun ...      (or by linking -ltucoll_preload before MPI)
//
// The waits, tests and blocking point-to-point calls advance tucoll's outstanding nonblocking
// collectives while they wait (MPI's progress rule). Every other MPI call is untouched;
// intercommunicators go to PMPI. TUCOLL_DISABLE=1 makes it a
// pure pass-through; TUCOLL_VERBOSE=1 has rank 0 of each communicator log, once per collective and
// algorithm, what ran. The library itself calls the MPI library through PMPI where it means the
// vendor's collective, so nothing comes back here.
//
// The rooms: this one (the environment, the log, errors, MPI_Init), bindings.cpp (the blocking
// collectives), nonblocking.cpp, persistent.cpp, completion.cpp (the wait and test family),
// point_to_point.cpp (the blocking sends, receives and probes) and fortran.cpp; interpose.h is
// what they share, and says the PMPI rule and MPI's progress rule.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

#include "interpose.h"

namespace tucoll::preload {
namespace {

bool env_flag(const char *name) {
    const char *v = std::getenv(name);
    return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

// The library logs what ran under its own collective names; this interposer logs each MPI call
// under the call's name instead (log_choice), so the library's log is off from the start.
[[maybe_unused]] const bool library_log_off = (tucoll_set_choice_log(0), true);

// What was logged on a communicator ("MPI_Alltoallv tuna:radix=2", ...), kept as an attribute
// so that it ends with the communicator and a reused handle starts afresh.
std::mutex log_mutex;
int logged_keyval = MPI_KEYVAL_INVALID;

int free_logged(MPI_Comm, int, void *value, void *) {
    delete static_cast<std::set<std::string> *>(value);
    return MPI_SUCCESS;
}

std::set<std::string> *logged_on(MPI_Comm comm) {
    std::lock_guard<std::mutex> lock(log_mutex);
    if (logged_keyval == MPI_KEYVAL_INVALID &&
        PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_logged, &logged_keyval, nullptr) != MPI_SUCCESS) {
        return nullptr;
    }
    void *value = nullptr;
    int found = 0;
    PMPI_Comm_get_attr(comm, logged_keyval, &value, &found);
    if (found) return static_cast<std::set<std::string> *>(value);
    auto *set = new std::set<std::string>;
    PMPI_Comm_set_attr(comm, logged_keyval, set);
    return set;
}

// MPI_COMM_WORLD exists only where the world model initialised MPI (not in a sessions-only
// program); the log names world ranks only then.
bool world_initialized() {
    int initialized = 0;
    PMPI_Initialized(&initialized);
    return initialized != 0;
}

void log_choice(const char *collective, MPI_Comm comm) {
    int rank = 0, size = 1;
    PMPI_Comm_rank(comm, &rank);
    if (rank != 0) return;
    tucoll_stats_t stats;
    if (tucoll_get_stats(comm, &stats) != MPI_SUCCESS) return;
    std::set<std::string> *seen = logged_on(comm);
    if (seen == nullptr || !seen->insert(std::string(collective) + " " + stats.algorithm).second) return;
    PMPI_Comm_size(comm, &size);
    char leader[48] = "";
    if (world_initialized()) {
        int world_rank = 0;
        PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
        std::snprintf(leader, sizeof leader, ", led by world rank %d", world_rank);
    }
    char name[MPI_MAX_OBJECT_NAME] = "";
    int length = 0;
    PMPI_Comm_get_name(comm, name, &length);
    std::fprintf(stderr, "[tucoll] %s on %s (P=%d%s): %s (%s)\n", collective, length > 0 ? name : "a communicator",
                 size, leader, stats.algorithm, stats.path);
    std::fflush(stderr);
}

void announce_disabled() {
    static std::once_flag once;
    std::call_once(once, [] {
        int rank = 0;
        if (world_initialized()) PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
        if (rank == 0) std::fprintf(stderr, "[tucoll] TUCOLL_DISABLE is set: every collective goes to the MPI library\n");
    });
}

// TUCOLL_PROGRESS=thread needs MPI_THREAD_MULTIPLE for its progress thread.
bool wants_progress_thread() {
    const char *mode = std::getenv("TUCOLL_PROGRESS");
    return !disabled() && mode != nullptr && std::strcmp(mode, "thread") == 0;
}

}  // namespace

bool disabled() {
    static const bool value = env_flag("TUCOLL_DISABLE");
    return value;
}

bool verbose() {
    static const bool value = env_flag("TUCOLL_VERBOSE");
    return value;
}

bool pass_through(MPI_Comm comm) {
    if (disabled()) {
        if (verbose()) announce_disabled();
        return true;
    }
    if (comm == MPI_COMM_NULL) return true;
    int inter = 0;
    return PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter != 0;
}

int finish(const char *collective, MPI_Comm comm, int rc) {
    if (rc == MPI_SUCCESS) {
        if (verbose()) log_choice(collective, comm);
        return rc;
    }
    std::fprintf(stderr, "[tucoll] %s: %s\n", collective, tucoll_error_string(rc));
    std::fflush(stderr);
    PMPI_Comm_call_errhandler(comm, rc);
    return rc;
}

}  // namespace tucoll::preload

using namespace tucoll::preload;

// ---- Initialization ----------------------------------------------------------------------------
// An unmodified program under TUCOLL_PROGRESS=thread that asks for less than MPI_THREAD_MULTIPLE
// (MPI_Init, or MPI_Init_thread below MULTIPLE) is given it, and told the level the MPI provides
// (at least what it asked for, as MPI_Init_thread allows).

TUCOLL_EXPORT int MPI_Init(int *argc, char ***argv) {
    if (!wants_progress_thread()) return PMPI_Init(argc, argv);
    int provided = MPI_THREAD_SINGLE;
    return PMPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
}

TUCOLL_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    return PMPI_Init_thread(argc, argv, wants_progress_thread() ? MPI_THREAD_MULTIPLE : required, provided);
}
