// Nonblocking collectives (MPI_Ialltoallv, MPI_Ialltoall, MPI_Iallgather, MPI_Iallgatherv).
// The handle the program gets is a generalized request of the MPI library (MPI_Grequest_start)
// paired with tucoll's request. The completion calls (completion.cpp) advance tucoll's
// (tucoll_wait in the wait family, tucoll_test in the test family) and complete the generalized
// request once tucoll's has completed, so the MPI reports it complete in any mix with the
// program's other requests.
// Requests of other kinds pay one atomic load while no such pair exists. (MPI forbids freeing or
// cancelling a nonblocking collective's request.)
#include <atomic>
#include <map>
#include <mutex>
#include <vector>

#include "interpose.h"

namespace tucoll::preload {
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

}  // namespace

bool is_started(MPI_Request request) {
    if (started_count.load(std::memory_order_acquire) == 0 || request == MPI_REQUEST_NULL) return false;
    std::lock_guard<std::mutex> lock(started_mutex);
    return started_requests.count(request) != 0;
}

bool any_started() { return started_count.load(std::memory_order_acquire) != 0; }

bool any_started(int count, const MPI_Request requests[]) {
    if (started_count.load(std::memory_order_acquire) == 0 || requests == nullptr) return false;
    std::lock_guard<std::mutex> lock(started_mutex);
    for (int i = 0; i < count; ++i) {
        if (requests[i] != MPI_REQUEST_NULL && started_requests.count(requests[i]) != 0) return true;
    }
    return false;
}

// One that failed is reported through its communicator's error handler and, where the caller
// completes requests (`release_failed`), freed and set to MPI_REQUEST_NULL, as the MPI does with
// a request it reports. The lock is never held across a tucoll or MPI call: tucoll's own waits
// come back through this interposer.
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

}  // namespace tucoll::preload

using namespace tucoll::preload;

TUCOLL_EXPORT int MPI_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                                 MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[],
                                 MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
    if (pass_through(comm) || request == nullptr) {
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
        return PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request);
    }
    tucoll_request_t started = TUCOLL_REQUEST_NULL;
    const int rc = tucoll_ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, &started);
    return pair_started("MPI_Ialltoall", comm, rc, started, request);
}

TUCOLL_EXPORT int MPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
    if (pass_through(comm) || request == nullptr) {
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
        return PMPI_Iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, request);
    }
    tucoll_request_t started = TUCOLL_REQUEST_NULL;
    const int rc =
        tucoll_iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, &started);
    return pair_started("MPI_Iallgatherv", comm, rc, started, request);
}