// libtucoll_preload: a PMPI interposer. MPI_Alltoallv, MPI_Alltoall, MPI_Allgather and
// MPI_Allgatherv (C, and the Fortran mpif.h / `use mpi` bindings where the MPI's layout is known)
// and their nonblocking forms (C) are routed through tucoll's selection — TUCOLL_ALLTOALLV /
// TUCOLL_ALLTOALL / TUCOLL_ALLGATHER /
// TUCOLL_ALLGATHERV, else the default (auto for the all-to-alls) — and, where the MPI is MPI-4,
// their persistent forms (MPI_Alltoallv_init, MPI_Alltoall_init, MPI_Allgather_init,
// MPI_Allgatherv_init) to tucoll's persistent plans, so unmodified programs get the tuned algorithms with
//
//     LD_PRELOAD=libtucoll_preload.so mpirun ...      (or by linking -ltucoll_preload before MPI)
//
// Every other MPI call is untouched; intercommunicators go to PMPI. TUCOLL_DISABLE=1 makes it a
// pure pass-through; TUCOLL_VERBOSE=1 has rank 0 of each communicator log, once per collective and
// algorithm, what ran. The library itself calls the MPI library through PMPI where it means the
// vendor's collective, so nothing comes back here.
#include <dlfcn.h>
#include <mpi.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "tucoll.h"

#define TUCOLL_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

bool env_flag(const char *name) {
    const char *v = std::getenv(name);
    return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

bool disabled() {
    static const bool value = env_flag("TUCOLL_DISABLE");
    return value;
}

bool verbose() {
    static const bool value = env_flag("TUCOLL_VERBOSE");
    return value;
}

// The library logs what ran under its own collective names; this interposer logs each MPI call
// under the call's name instead (log_choice), so the library's log is off from the start.
[[maybe_unused]] const bool library_log_off = (tucoll_set_choice_log(0), true);

// Communicators tucoll does not serve: intercommunicators (and whatever MPI itself rejects).
bool pass_through(MPI_Comm comm) {
    if (disabled() || comm == MPI_COMM_NULL) return true;
    int inter = 0;
    return PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter != 0;
}

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

// The MPI error handling the caller expects: tucoll's message, then the communicator's handler.
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

void announce_disabled() {
    static std::once_flag once;
    std::call_once(once, [] {
        int rank = 0;
        if (world_initialized()) PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
        if (rank == 0) std::fprintf(stderr, "[tucoll] TUCOLL_DISABLE is set: every collective goes to the MPI library\n");
    });
}

}  // namespace

// ---- Initialization ----------------------------------------------------------------------------
// TUCOLL_PROGRESS=thread needs MPI_THREAD_MULTIPLE for its progress thread: an unmodified program
// that asks for less (MPI_Init, or MPI_Init_thread below MULTIPLE) is given it, and told the
// level the MPI provides (at least what it asked for, as MPI_Init_thread allows).
namespace {
bool wants_progress_thread() {
    const char *mode = std::getenv("TUCOLL_PROGRESS");
    return !disabled() && mode != nullptr && std::strcmp(mode, "thread") == 0;
}
}  // namespace

TUCOLL_EXPORT int MPI_Init(int *argc, char ***argv) {
    if (!wants_progress_thread()) return PMPI_Init(argc, argv);
    int provided = MPI_THREAD_SINGLE;
    return PMPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
}

TUCOLL_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    return PMPI_Init_thread(argc, argv, wants_progress_thread() ? MPI_THREAD_MULTIPLE : required, provided);
}

// ---- C bindings ---------------------------------------------------------------------------------

TUCOLL_EXPORT int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                                void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                                MPI_Comm comm) {
    if (pass_through(comm)) {
        if (disabled() && verbose()) announce_disabled();
        return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
    }
    return finish("MPI_Alltoallv", comm,
                  tucoll_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm));
}

TUCOLL_EXPORT int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                               MPI_Datatype recvtype, MPI_Comm comm) {
    if (pass_through(comm)) {
        if (disabled() && verbose()) announce_disabled();
        return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    }
    return finish("MPI_Alltoall", comm, tucoll_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm));
}

TUCOLL_EXPORT int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                                MPI_Datatype recvtype, MPI_Comm comm) {
    if (pass_through(comm)) {
        if (disabled() && verbose()) announce_disabled();
        return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    }
    return finish("MPI_Allgather", comm,
                  tucoll_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm));
}

TUCOLL_EXPORT int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                 const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
    if (pass_through(comm)) {
        if (disabled() && verbose()) announce_disabled();
        return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
    }
    return finish("MPI_Allgatherv", comm,
                  tucoll_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm));
}

// ---- Nonblocking collectives (MPI_Ialltoallv, MPI_Ialltoall, MPI_Iallgather, MPI_Iallgatherv) ----
// The handle the program gets is a generalized request of the MPI library (MPI_Grequest_start)
// paired with tucoll's request. The completion calls below advance tucoll's (tucoll_wait in the
// wait family, tucoll_test in the test family) and complete the generalized request once tucoll's
// has completed, so the MPI reports it complete in any mix with the program's other requests.
// Requests of other kinds pay one atomic load while no such pair exists. (MPI forbids freeing or
// cancelling a nonblocking collective's request.)
namespace {

struct Started {
    tucoll_request_t request = TUCOLL_REQUEST_NULL;
    MPI_Comm comm = MPI_COMM_NULL;
    const char *collective = "";
};

std::mutex started_mutex;
std::map<MPI_Request, Started> started_requests;  // guarded by started_mutex
std::atomic<int> started_count{0};

// A collective's status: no source, no tag, no elements.
int query_started(void *, MPI_Status *status) {
    status->MPI_SOURCE = MPI_ANY_SOURCE;
    status->MPI_TAG = MPI_ANY_TAG;
    MPI_Status_set_elements(status, MPI_BYTE, 0);
    MPI_Status_set_cancelled(status, 0);
    return MPI_SUCCESS;
}
int free_started(void *) { return MPI_SUCCESS; }
int cancel_started(void *, int) { return MPI_SUCCESS; }  // a collective is not cancelled

// Pairs a started tucoll request with a new generalized request (`rc`: the start's result).
int pair_started(const char *collective, MPI_Comm comm, int rc, tucoll_request_t started, MPI_Request *request) {
    if (rc != MPI_SUCCESS) return finish(collective, comm, rc);
    rc = PMPI_Grequest_start(query_started, free_started, cancel_started, nullptr, request);
    if (rc != MPI_SUCCESS) {
        tucoll_wait(&started);  // the other ranks need this rank's part of it
        return rc;
    }
    std::lock_guard<std::mutex> lock(started_mutex);
    started_requests[*request] = {started, comm, collective};
    started_count.fetch_add(1, std::memory_order_release);
    return MPI_SUCCESS;
}

bool is_started(MPI_Request request) {
    if (started_count.load(std::memory_order_acquire) == 0 || request == MPI_REQUEST_NULL) return false;
    std::lock_guard<std::mutex> lock(started_mutex);
    return started_requests.count(request) != 0;
}

bool any_started(int count, const MPI_Request requests[]) {
    if (started_count.load(std::memory_order_acquire) == 0 || requests == nullptr) return false;
    std::lock_guard<std::mutex> lock(started_mutex);
    for (int i = 0; i < count; ++i) {
        if (requests[i] != MPI_REQUEST_NULL && started_requests.count(requests[i]) != 0) return true;
    }
    return false;
}

// Advances the tucoll requests paired with `requests` (all of them complete with `block`) and
// completes the generalized request of each that has. One that failed is reported through its
// communicator's error handler and, where the caller completes requests (`release_failed`),
// freed and set to MPI_REQUEST_NULL, as the MPI does with a request it reports. The lock is never
// held across a tucoll or MPI call: tucoll's own waits come back through this interposer.
// Returns the first error.
int advance_started(int count, MPI_Request requests[], bool block, bool release_failed) {
    if (started_count.load(std::memory_order_acquire) == 0 || requests == nullptr) return MPI_SUCCESS;
    struct Found {
        int index;
        MPI_Request handle;
        Started started;
    };
    std::vector<Found> found;
    {
        std::lock_guard<std::mutex> lock(started_mutex);
        for (int i = 0; i < count; ++i) {
            auto it = requests[i] == MPI_REQUEST_NULL ? started_requests.end() : started_requests.find(requests[i]);
            if (it != started_requests.end()) found.push_back({i, it->first, it->second});
        }
    }
    int first_error = MPI_SUCCESS;
    for (Found &f : found) {
        int flag = 1;
        const int rc = block ? tucoll_wait(&f.started.request) : tucoll_test(&f.started.request, &flag);
        if (!flag) continue;
        {
            std::lock_guard<std::mutex> lock(started_mutex);
            started_requests.erase(f.handle);
            started_count.fetch_sub(1, std::memory_order_release);
        }
        PMPI_Grequest_complete(f.handle);
        const int reported = finish(f.started.collective, f.started.comm, rc);
        if (reported != MPI_SUCCESS && release_failed) PMPI_Request_free(&requests[f.index]);
        if (first_error == MPI_SUCCESS) first_error = reported;
    }
    return first_error;
}

}  // namespace

TUCOLL_EXPORT int MPI_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                                 MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[],
                                 MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
    if (pass_through(comm) || request == nullptr) {
        if (disabled() && verbose()) announce_disabled();
        return PMPI_Ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm,
                               request);
    }
    tucoll_request_t started = TUCOLL_REQUEST_NULL;
    const int rc = tucoll_ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype,
                                     comm, &started);
    return pair_started("MPI_Ialltoallv", comm, rc, started, request);
}

TUCOLL_EXPORT int MPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
    if (pass_through(comm) || request == nullptr) {
        if (disabled() && verbose()) announce_disabled();
        return PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request);
    }
    tucoll_request_t started = TUCOLL_REQUEST_NULL;
    const int rc = tucoll_ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, &started);
    return pair_started("MPI_Ialltoall", comm, rc, started, request);
}

TUCOLL_EXPORT int MPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
    if (pass_through(comm) || request == nullptr) {
        if (disabled() && verbose()) announce_disabled();
        return PMPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request);
    }
    tucoll_request_t started = TUCOLL_REQUEST_NULL;
    const int rc = tucoll_iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, &started);
    return pair_started("MPI_Iallgather", comm, rc, started, request);
}

TUCOLL_EXPORT int MPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                  const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                                  MPI_Request *request) {
    if (pass_through(comm) || request == nullptr) {
        if (disabled() && verbose()) announce_disabled();
        return PMPI_Iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, request);
    }
    tucoll_request_t started = TUCOLL_REQUEST_NULL;
    const int rc =
        tucoll_iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, &started);
    return pair_started("MPI_Iallgatherv", comm, rc, started, request);
}

// ---- Persistent collectives (MPI-4 MPI_Alltoallv_init, MPI_Alltoall_init, MPI_Allgather(v)_init) --
// The handle the program gets is a real request of the MPI library: an inactive persistent send
// to MPI_PROC_NULL, which every start, completion and free call handles natively. tucoll's plan
// is paired with it here; starting such a request starts the plan, and completing it (any wait or
// test) first runs the plan's exchange, as tucoll_wait does: a test of an active request returns
// only after the exchange, which needs every rank to reach a completion call of theirs. Requests
// of other kinds pay one atomic load while no persistent tucoll request exists.
#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
namespace {

#define TUCOLL_PRELOAD_TRY(call)                     \
    do {                                             \
        const int rc_ = (call);                      \
        if (rc_ != MPI_SUCCESS) return rc_;          \
    } while (0)

struct Persistent {
    tucoll_request_t plan = TUCOLL_REQUEST_NULL;
    MPI_Comm comm = MPI_COMM_NULL;
    const char *name = "";  // its init, for the log: "MPI_Alltoallv_init"
    bool active = false;  // started here and not yet completed here (for the log only)
};

std::mutex persistent_mutex;
std::map<MPI_Request, Persistent> persistent_requests;  // guarded by persistent_mutex
std::atomic<int> persistent_count{0};

// The plan paired with `request`, if any, after setting its active flag to `*set_active` when
// given. The lock is never held across a tucoll or MPI call: tucoll's own waits come back
// through this interposer.
bool find_persistent(MPI_Request request, Persistent *out, const bool *set_active = nullptr) {
    if (persistent_count.load(std::memory_order_acquire) == 0 || request == MPI_REQUEST_NULL) return false;
    std::lock_guard<std::mutex> lock(persistent_mutex);
    auto it = persistent_requests.find(request);
    if (it == persistent_requests.end()) return false;
    *out = it->second;
    if (set_active != nullptr) it->second.active = *set_active;
    return true;
}

// Runs the exchange of a found plan (tucoll_wait: nothing for an inactive one); logs it when it
// was started here.
int complete(const Persistent &p) {
    tucoll_request_t plan = p.plan;  // persistent: left inactive, never nulled
    const int rc = tucoll_wait(&plan);
    return rc != MPI_SUCCESS || p.active ? finish(p.name, p.comm, rc) : rc;
}

// The plans among `requests`, completed in array order; one lock for the lookup, so that
// polling loops (tucoll's own MPI_Testall included) pay little for requests of other kinds.
int complete_plans(int count, const MPI_Request requests[]) {
    if (persistent_count.load(std::memory_order_acquire) == 0 || requests == nullptr) return MPI_SUCCESS;
    std::vector<Persistent> found;
    {
        std::lock_guard<std::mutex> lock(persistent_mutex);
        for (int i = 0; i < count; ++i) {
            if (requests[i] == MPI_REQUEST_NULL) continue;
            auto it = persistent_requests.find(requests[i]);
            if (it == persistent_requests.end()) continue;
            found.push_back(it->second);
            it->second.active = false;
        }
    }
    for (const Persistent &p : found) TUCOLL_PRELOAD_TRY(complete(p));
    return MPI_SUCCESS;
}

// A collective's status is empty; the MPI_PROC_NULL send would report MPI_PROC_NULL as source.
void empty_status(MPI_Request request, MPI_Status *status) {
    Persistent p;
    if (status == MPI_STATUS_IGNORE || !find_persistent(request, &p)) return;
    status->MPI_SOURCE = MPI_ANY_SOURCE;
    status->MPI_TAG = MPI_ANY_TAG;
    status->MPI_ERROR = MPI_SUCCESS;
}

int start_plan(MPI_Request request) {
    Persistent p;
    if (!find_persistent(request, &p)) return MPI_SUCCESS;
    const int rc = tucoll_start(&p.plan);
    if (rc != MPI_SUCCESS) return finish("MPI_Start", p.comm, rc);
    const bool active = true;
    find_persistent(request, &p, &active);
    return MPI_SUCCESS;
}

// The program's handle for a plan made by tucoll (rc its init's result): an inactive persistent
// send to MPI_PROC_NULL, paired with the plan.
int pair_persistent(const char *name, MPI_Comm comm, int rc, tucoll_request_t plan, MPI_Request *request) {
    if (rc != MPI_SUCCESS) return finish(name, comm, rc);
    rc = PMPI_Send_init(nullptr, 0, MPI_BYTE, MPI_PROC_NULL, 0, comm, request);
    if (rc != MPI_SUCCESS) {
        tucoll_request_free(&plan);
        return finish(name, comm, rc);
    }
    std::lock_guard<std::mutex> lock(persistent_mutex);
    persistent_requests[*request] = Persistent{plan, comm, name, false};
    persistent_count.fetch_add(1, std::memory_order_release);
    return MPI_SUCCESS;
}

}  // namespace

TUCOLL_EXPORT int MPI_Alltoallv_init(const void *sendbuf, const int sendcounts[], const int sdispls[],
                                     MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[],
                                     MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request) {
    if (pass_through(comm) || request == nullptr) {
        if (disabled() && verbose()) announce_disabled();
        return PMPI_Alltoallv_init(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype,
                                   comm, info, request);
    }
    *request = MPI_REQUEST_NULL;
    tucoll_request_t plan = TUCOLL_REQUEST_NULL;
    const int rc = tucoll_alltoallv_init(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                                         recvtype, comm, info, &plan);
    return pair_persistent("MPI_Alltoallv_init", comm, rc, plan, request);
}

TUCOLL_EXPORT int MPI_Alltoall_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                    int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                    MPI_Request *request) {
    if (pass_through(comm) || request == nullptr) {
        if (disabled() && verbose()) announce_disabled();
        return PMPI_Alltoall_init(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info, request);
    }
    *request = MPI_REQUEST_NULL;
    tucoll_request_t plan = TUCOLL_REQUEST_NULL;
    const int rc =
        tucoll_alltoall_init(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info, &plan);
    return pair_persistent("MPI_Alltoall_init", comm, rc, plan, request);
}

TUCOLL_EXPORT int MPI_Allgather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                     int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                     MPI_Request *request) {
    if (pass_through(comm) || request == nullptr) {
        if (disabled() && verbose()) announce_disabled();
        return PMPI_Allgather_init(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info, request);
    }
    *request = MPI_REQUEST_NULL;
    tucoll_request_t plan = TUCOLL_REQUEST_NULL;
    const int rc =
        tucoll_allgather_init(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info, &plan);
    return pair_persistent("MPI_Allgather_init", comm, rc, plan, request);
}

TUCOLL_EXPORT int MPI_Allgatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                      const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                                      MPI_Info info, MPI_Request *request) {
    if (pass_through(comm) || request == nullptr) {
        if (disabled() && verbose()) announce_disabled();
        return PMPI_Allgatherv_init(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, info,
                                    request);
    }
    *request = MPI_REQUEST_NULL;
    tucoll_request_t plan = TUCOLL_REQUEST_NULL;
    const int rc = tucoll_allgatherv_init(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm,
                                          info, &plan);
    return pair_persistent("MPI_Allgatherv_init", comm, rc, plan, request);
}

TUCOLL_EXPORT int MPI_Start(MPI_Request *request) {
    const int rc = request == nullptr ? MPI_SUCCESS : start_plan(*request);  // null: the library's error
    return rc != MPI_SUCCESS ? rc : PMPI_Start(request);
}

TUCOLL_EXPORT int MPI_Startall(int count, MPI_Request requests[]) {
    // Every plan, then every request of the library's, so that a refused start leaves the others
    // started on both sides; the first error is returned.
    int first_error = MPI_SUCCESS;
    for (int i = 0; requests != nullptr && i < count; ++i) {
        const int rc = start_plan(requests[i]);
        if (first_error == MPI_SUCCESS) first_error = rc;
    }
    const int rc = PMPI_Startall(count, requests);
    return first_error != MPI_SUCCESS ? first_error : rc;
}

#else
namespace {
// Without MPI-4 there are no persistent plans to complete.
int complete_plans(int, const MPI_Request[]) { return MPI_SUCCESS; }
void empty_status(MPI_Request, MPI_Status *) {}
}  // namespace
#endif  // MPI-4 (or Open MPI 5, which has MPI_Alltoallv_init while it reports MPI 3.1)

namespace {

// What every completion call does before the MPI's own: tucoll's nonblocking requests among
// `requests` advanced (completed with `block`; one that failed freed where `release_failed`),
// then the exchanges of its active plans run.
int advance_tucoll(int count, MPI_Request requests[], bool block, bool release_failed) {
    const int rc = advance_started(count, requests, block, release_failed);
    return rc != MPI_SUCCESS ? rc : complete_plans(count, requests);
}

int advance_tucoll(int count, const MPI_Request requests[]) {  // status queries: nothing freed
    return advance_tucoll(count, const_cast<MPI_Request *>(requests), false, false);
}

}  // namespace

// ---- Completion: the MPI's own, after tucoll's requests among them advanced -----------------
// The wait family completes every tucoll request among its arguments first; the test family
// only advances the nonblocking ones (a persistent plan's exchange still runs to its end there,
// since its MPI handle cannot report it incomplete).

TUCOLL_EXPORT int MPI_Wait(MPI_Request *request, MPI_Status *status) {
    if (request == nullptr) return PMPI_Wait(request, status);
    int rc = advance_tucoll(1, request, true, true);
    if (rc != MPI_SUCCESS) return rc;
    const MPI_Request handle = *request;
    rc = PMPI_Wait(request, status);
    empty_status(handle, status);
    return rc;
}

TUCOLL_EXPORT int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status) {
    if (request == nullptr) return PMPI_Test(request, flag, status);
    int rc = advance_tucoll(1, request, false, true);
    if (rc != MPI_SUCCESS) return rc;
    const MPI_Request handle = *request;
    rc = PMPI_Test(request, flag, status);
    if (flag != nullptr && *flag) empty_status(handle, status);
    return rc;
}

TUCOLL_EXPORT int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status) {
    int rc = advance_tucoll(1, &request);
    if (rc != MPI_SUCCESS) return rc;
    rc = PMPI_Request_get_status(request, flag, status);
    if (flag != nullptr && *flag) empty_status(request, status);
    return rc;
}

TUCOLL_EXPORT int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
    int rc = advance_tucoll(count, requests, true, true);
    if (rc != MPI_SUCCESS) return rc;
    rc = PMPI_Waitall(count, requests, statuses);
    if (statuses != MPI_STATUSES_IGNORE && requests != nullptr) {
        for (int i = 0; i < count; ++i) empty_status(requests[i], &statuses[i]);
    }
    return rc;
}

TUCOLL_EXPORT int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[]) {
    int rc = advance_tucoll(count, requests, false, true);
    if (rc != MPI_SUCCESS) return rc;
    rc = PMPI_Testall(count, requests, flag, statuses);
    if (flag != nullptr && *flag && statuses != MPI_STATUSES_IGNORE && requests != nullptr) {
        for (int i = 0; i < count; ++i) empty_status(requests[i], &statuses[i]);
    }
    return rc;
}

// Any / some: every active tucoll plan among them is completed first, then the MPI library picks.
namespace {

void empty_status_at(const MPI_Request requests[], int index, MPI_Status *status) {
    if (requests != nullptr && index >= 0 && index != MPI_UNDEFINED) empty_status(requests[index], status);
}

void empty_statuses(const MPI_Request requests[], const int *outcount, const int indices[], MPI_Status statuses[]) {
    if (statuses == MPI_STATUSES_IGNORE || outcount == nullptr || *outcount == MPI_UNDEFINED) return;
    for (int i = 0; i < *outcount; ++i) empty_status_at(requests, indices[i], &statuses[i]);
}

}  // namespace

// With tucoll's nonblocking requests among them, the waits poll (the matching test) until one
// completes: which completes first is not known, and waiting on any one could outlast another.
TUCOLL_EXPORT int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status) {
    int rc = advance_tucoll(count, requests, false, true);
    if (rc != MPI_SUCCESS) return rc;
    rc = PMPI_Testany(count, requests, index, flag, status);
    if (index != nullptr && flag != nullptr && *flag) empty_status_at(requests, *index, status);
    return rc;
}

TUCOLL_EXPORT int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status) {
    if (any_started(count, requests)) {
        int flag = 0;
        for (;;) {
            const int rc = MPI_Testany(count, requests, index, &flag, status);
            if (rc != MPI_SUCCESS || flag) return rc;
        }
    }
    int rc = complete_plans(count, requests);
    if (rc != MPI_SUCCESS) return rc;
    rc = PMPI_Waitany(count, requests, index, status);
    if (index != nullptr) empty_status_at(requests, *index, status);
    return rc;
}

TUCOLL_EXPORT int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                               MPI_Status statuses[]) {
    int rc = advance_tucoll(incount, requests, false, true);
    if (rc != MPI_SUCCESS) return rc;
    rc = PMPI_Testsome(incount, requests, outcount, indices, statuses);
    empty_statuses(requests, outcount, indices, statuses);
    return rc;
}

TUCOLL_EXPORT int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                               MPI_Status statuses[]) {
    if (any_started(incount, requests)) {
        for (;;) {
            const int rc = MPI_Testsome(incount, requests, outcount, indices, statuses);
            if (rc != MPI_SUCCESS || outcount == nullptr || *outcount != 0) return rc;
        }
    }
    int rc = complete_plans(incount, requests);
    if (rc != MPI_SUCCESS) return rc;
    rc = PMPI_Waitsome(incount, requests, outcount, indices, statuses);
    empty_statuses(requests, outcount, indices, statuses);
    return rc;
}

#if MPI_VERSION > 4 || (MPI_VERSION == 4 && MPI_SUBVERSION >= 1)
// MPI-4.1's status queries would report an active plan's request complete before its exchange.
TUCOLL_EXPORT int MPI_Request_get_status_any(int count, const MPI_Request requests[], int *index, int *flag,
                                             MPI_Status *status) {
    int rc = advance_tucoll(count, requests);
    return rc != MPI_SUCCESS ? rc : PMPI_Request_get_status_any(count, requests, index, flag, status);
}

TUCOLL_EXPORT int MPI_Request_get_status_all(int count, const MPI_Request requests[], int *flag,
                                             MPI_Status statuses[]) {
    int rc = advance_tucoll(count, requests);
    return rc != MPI_SUCCESS ? rc : PMPI_Request_get_status_all(count, requests, flag, statuses);
}

TUCOLL_EXPORT int MPI_Request_get_status_some(int incount, const MPI_Request requests[], int *outcount,
                                              int indices[], MPI_Status statuses[]) {
    int rc = advance_tucoll(incount, requests);
    return rc != MPI_SUCCESS ? rc : PMPI_Request_get_status_some(incount, requests, outcount, indices, statuses);
}
#endif

TUCOLL_EXPORT int MPI_Request_free(MPI_Request *request) {
    if (request != nullptr && is_started(*request)) {
        std::fprintf(stderr, "[tucoll] MPI_Request_free: a nonblocking collective's request cannot be freed (MPI "
                             "forbids it): complete it with a wait or test\n");
        return MPI_ERR_REQUEST;
    }
#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
    Persistent p;
    if (request != nullptr && find_persistent(*request, &p)) {
        // An active plan is refused (as tucoll_request_free does): its exchange needs the other ranks.
        const int rc = tucoll_request_free(&p.plan);
        if (rc != MPI_SUCCESS) return finish("MPI_Request_free", p.comm, rc);
        std::lock_guard<std::mutex> lock(persistent_mutex);
        persistent_requests.erase(*request);
        persistent_count.fetch_sub(1, std::memory_order_release);
    }
#endif
    return PMPI_Request_free(request);
}

// ---- Fortran bindings (mpif.h and `use mpi`) ----------------------------------------------------
// Open MPI's Fortran wrappers call PMPI_* and would bypass the C functions above, so the Fortran
// symbols are defined here too. Fortran's MPI_IN_PLACE and MPI_BOTTOM are the addresses of
// common blocks whose names depend on the MPI library; where they are not Open MPI's
// (mpi_fortran_in_place and mpi_fortran_bottom, in any of the four spellings), the call goes to
// the library's own binding.

extern "C" {
#define TUCOLL_FORTRAN_MARKER(lower, upper)                  \
    extern int lower __attribute__((weak));                 \
    extern int lower##_ __attribute__((weak));              \
    extern int lower##__ __attribute__((weak));             \
    extern int upper __attribute__((weak));
TUCOLL_FORTRAN_MARKER(mpi_fortran_in_place, MPI_FORTRAN_IN_PLACE)
TUCOLL_FORTRAN_MARKER(mpi_fortran_bottom, MPI_FORTRAN_BOTTOM)
#undef TUCOLL_FORTRAN_MARKER
}

namespace {

const int *const kInPlace[] = {&mpi_fortran_in_place, &mpi_fortran_in_place_, &mpi_fortran_in_place__,
                               &MPI_FORTRAN_IN_PLACE};
const int *const kBottom[] = {&mpi_fortran_bottom, &mpi_fortran_bottom_, &mpi_fortran_bottom__,
                              &MPI_FORTRAN_BOTTOM};

bool is_marker(const void *fortran, const int *const (&spellings)[4]) {
    for (const int *marker : spellings) {
        if (marker != nullptr && fortran == marker) return true;
    }
    return false;
}

bool fortran_layout_known() {
    auto any = [](const int *const (&spellings)[4]) {
        for (const int *marker : spellings) {
            if (marker != nullptr) return true;
        }
        return false;
    };
    return any(kInPlace) && any(kBottom);
}

const void *c_buffer(const void *fortran) {
    if (is_marker(fortran, kInPlace)) return MPI_IN_PLACE;
    if (is_marker(fortran, kBottom)) return MPI_BOTTOM;
    return fortran;
}

// Neither Open MPI's markers nor the library's own binding: the buffers cannot be translated
// safely (MPI_IN_PLACE would be read as data), so the call fails with a message.
MPI_Fint unknown_fortran_layout(const char *binding) {
    std::fprintf(stderr, "[tucoll] %s: this MPI's Fortran MPI_IN_PLACE/MPI_BOTTOM are unknown to the interposer and "
                 "its own Fortran binding was not found; set TUCOLL_DISABLE=1 for Fortran programs on this MPI\n",
                 binding);
    std::fflush(stderr);
    return MPI_ERR_INTERN;
}

template <class Fn>
Fn library_binding(const char *name) {
    return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

using FAlltoallv = void (*)(void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, void *, MPI_Fint *, MPI_Fint *, MPI_Fint *,
                            MPI_Fint *, MPI_Fint *);
// MPI_ALLTOALL has MPI_ALLGATHER's Fortran signature.
using FAllgather = void (*)(void *, MPI_Fint *, MPI_Fint *, void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);
using FAllgatherv = void (*)(void *, MPI_Fint *, MPI_Fint *, void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *,
                             MPI_Fint *);

static_assert(sizeof(MPI_Fint) == sizeof(int), "Fortran INTEGER arrays are passed to the C API as int arrays");

void fortran_alltoallv(void *sendbuf, MPI_Fint *sendcounts, MPI_Fint *sdispls, MPI_Fint *sendtype, void *recvbuf,
                       MPI_Fint *recvcounts, MPI_Fint *rdispls, MPI_Fint *recvtype, MPI_Fint *comm, MPI_Fint *ierr) {
    if (!fortran_layout_known()) {
        if (auto f = library_binding<FAlltoallv>("pmpi_alltoallv_")) {
            return f(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm, ierr);
        }
        *ierr = unknown_fortran_layout("mpi_alltoallv");
        return;
    }
    *ierr = MPI_Alltoallv(c_buffer(sendbuf), sendcounts, sdispls, PMPI_Type_f2c(*sendtype),
                          const_cast<void *>(c_buffer(recvbuf)), recvcounts, rdispls, PMPI_Type_f2c(*recvtype),
                          PMPI_Comm_f2c(*comm));
}

// MPI_ALLTOALL and MPI_ALLGATHER: the same arguments, one count and type per side. `c_call` is the
// C function here (this interposer's), `binding` the library's own Fortran one, `name` for messages.
using CUniform = int (*)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm);
void fortran_uniform(CUniform c_call, const char *binding, const char *name, void *sendbuf, MPI_Fint *sendcount,
                     MPI_Fint *sendtype, void *recvbuf, MPI_Fint *recvcount, MPI_Fint *recvtype, MPI_Fint *comm,
                     MPI_Fint *ierr) {
    if (!fortran_layout_known()) {
        if (auto f = library_binding<FAllgather>(binding)) {
            return f(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, ierr);
        }
        *ierr = unknown_fortran_layout(name);
        return;
    }
    *ierr = c_call(c_buffer(sendbuf), *sendcount, PMPI_Type_f2c(*sendtype), const_cast<void *>(c_buffer(recvbuf)),
                   *recvcount, PMPI_Type_f2c(*recvtype), PMPI_Comm_f2c(*comm));
}

void fortran_alltoall(void *sendbuf, MPI_Fint *sendcount, MPI_Fint *sendtype, void *recvbuf, MPI_Fint *recvcount,
                      MPI_Fint *recvtype, MPI_Fint *comm, MPI_Fint *ierr) {
    fortran_uniform(MPI_Alltoall, "pmpi_alltoall_", "mpi_alltoall", sendbuf, sendcount, sendtype, recvbuf, recvcount,
                    recvtype, comm, ierr);
}

void fortran_allgather(void *sendbuf, MPI_Fint *sendcount, MPI_Fint *sendtype, void *recvbuf, MPI_Fint *recvcount,
                       MPI_Fint *recvtype, MPI_Fint *comm, MPI_Fint *ierr) {
    fortran_uniform(MPI_Allgather, "pmpi_allgather_", "mpi_allgather", sendbuf, sendcount, sendtype, recvbuf, recvcount,
                    recvtype, comm, ierr);
}

void fortran_allgatherv(void *sendbuf, MPI_Fint *sendcount, MPI_Fint *sendtype, void *recvbuf, MPI_Fint *recvcounts,
                        MPI_Fint *displs, MPI_Fint *recvtype, MPI_Fint *comm, MPI_Fint *ierr) {
    if (!fortran_layout_known()) {
        if (auto f = library_binding<FAllgatherv>("pmpi_allgatherv_")) {
            return f(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, ierr);
        }
        *ierr = unknown_fortran_layout("mpi_allgatherv");
        return;
    }
    *ierr = MPI_Allgatherv(c_buffer(sendbuf), *sendcount, PMPI_Type_f2c(*sendtype),
                           const_cast<void *>(c_buffer(recvbuf)), recvcounts, displs, PMPI_Type_f2c(*recvtype),
                           PMPI_Comm_f2c(*comm));
}

}  // namespace

// The four spellings Fortran compilers use for an external name.
#define TUCOLL_FORTRAN(lower, upper, impl, params, args)      \
    TUCOLL_EXPORT void lower params { impl args; }            \
    TUCOLL_EXPORT void lower##_ params { impl args; }         \
    TUCOLL_EXPORT void lower##__ params { impl args; }        \
    TUCOLL_EXPORT void upper params { impl args; }

TUCOLL_FORTRAN(mpi_alltoallv, MPI_ALLTOALLV, fortran_alltoallv,
               (void *sb, MPI_Fint *sc, MPI_Fint *sd, MPI_Fint *st, void *rb, MPI_Fint *rc, MPI_Fint *rd, MPI_Fint *rt,
                MPI_Fint *c, MPI_Fint *e),
               (sb, sc, sd, st, rb, rc, rd, rt, c, e))
TUCOLL_FORTRAN(mpi_alltoall, MPI_ALLTOALL, fortran_alltoall,
               (void *sb, MPI_Fint *sc, MPI_Fint *st, void *rb, MPI_Fint *rc, MPI_Fint *rt, MPI_Fint *c, MPI_Fint *e),
               (sb, sc, st, rb, rc, rt, c, e))
TUCOLL_FORTRAN(mpi_allgather, MPI_ALLGATHER, fortran_allgather,
               (void *sb, MPI_Fint *sc, MPI_Fint *st, void *rb, MPI_Fint *rc, MPI_Fint *rt, MPI_Fint *c, MPI_Fint *e),
               (sb, sc, st, rb, rc, rt, c, e))
TUCOLL_FORTRAN(mpi_allgatherv, MPI_ALLGATHERV, fortran_allgatherv,
               (void *sb, MPI_Fint *sc, MPI_Fint *st, void *rb, MPI_Fint *rc, MPI_Fint *rd, MPI_Fint *rt, MPI_Fint *c,
                MPI_Fint *e),
               (sb, sc, st, rb, rc, rd, rt, c, e))
