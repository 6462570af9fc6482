// Persistent collectives (MPI-4: MPI_Alltoallv_init, MPI_Alltoall_init, MPI_Allgather(v)_init).
// The handle the program gets is a real request of the MPI library: an inactive persistent send
// to MPI_PROC_NULL, which every start, completion and free call handles natively. tucoll's plan
// is paired with it here; starting such a request starts the plan, and completing it (any wait or
// test) first runs the plan's exchange, as tucoll_wait does: a test of an active request returns
// only after the exchange, which needs every rank to reach a completion call of theirs. Requests
// of other kinds pay one atomic load while no persistent tucoll request exists.
#include <atomic>
#include <map>
#include <mutex>
#include <vector>

#include "interpose.h"

#if TUCOLL_PRELOAD_PERSISTENT
namespace tucoll::preload {
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

bool any_plans() { return persistent_count.load(std::memory_order_acquire) != 0; }

int free_plan(MPI_Request request) {
    Persistent p;
    if (!find_persistent(request, &p)) return MPI_SUCCESS;
    // An active plan is refused (as tucoll_request_free does): its exchange needs the other ranks.
    const int rc = tucoll_request_free(&p.plan);
    if (rc != MPI_SUCCESS) return finish("MPI_Request_free", p.comm, rc);
    std::lock_guard<std::mutex> lock(persistent_mutex);
    persistent_requests.erase(request);
    persistent_count.fetch_sub(1, std::memory_order_release);
    return MPI_SUCCESS;
}

}  // namespace tucoll::preload

using namespace tucoll::preload;

TUCOLL_EXPORT int MPI_Alltoallv_init(const void *sendbuf, const int sendcounts[], const int sdispls[],
                                     MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[],
                                     MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request) {
    if (pass_through(comm) || request == nullptr) {
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
namespace tucoll::preload {
// Without MPI-4 there are no persistent plans.
int complete_plans(int, const MPI_Request[]) { return MPI_SUCCESS; }
void empty_status(MPI_Request, MPI_Status *) {}
int free_plan(MPI_Request) { return MPI_SUCCESS; }
bool any_plans() { return false; }
}  // namespace tucoll::preload
#endif  // TUCOLL_PRELOAD_PERSISTENT
