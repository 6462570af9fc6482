// The wait and test family: the MPI's own, after tucoll's requests among them advanced. The wait
// family completes every tucoll request among its arguments first; the test family only advances
// the nonblocking ones (a persistent plan's exchange still runs to its end there, since its MPI
// handle cannot report it incomplete). Beyond its arguments, a wait advances every outstanding
// tucoll operation while it waits, and a test once (MPI's progress rule: interpose.h).
#include <cstdio>

#include "interpose.h"

using namespace tucoll::preload;

namespace tucoll::preload {

bool may_advance_others() {
    if (!any_started() && !any_plans()) return false;
    static const bool serialized = [] {
        int level = MPI_THREAD_SINGLE;
        PMPI_Query_thread(&level);
        return level < MPI_THREAD_MULTIPLE;
    }();
    return serialized;
}

}  // namespace tucoll::preload

namespace {

// What every completion call does before the MPI's own: tucoll's nonblocking requests among
// `requests` advanced (completed with `block`; one that failed freed where `release_failed`),
// then the exchanges of its active plans run.
int advance_tucoll(int count, MPI_Request requests[], bool block, bool release_failed) {
    int rc = advance_started(count, requests, block, release_failed);
    if (rc == MPI_SUCCESS) rc = complete_plans(count, requests);
    if (rc == MPI_SUCCESS && !block && may_advance_others()) tucoll_progress(nullptr);
    return rc;
}

int advance_tucoll(int count, const MPI_Request requests[]) {  // status queries: nothing freed
    return advance_tucoll(count, const_cast<MPI_Request *>(requests), false, false);
}

void empty_status_at(const MPI_Request requests[], int index, MPI_Status *status) {
    if (requests != nullptr && index >= 0 && index != MPI_UNDEFINED) empty_status(requests[index], status);
}

void empty_statuses(const MPI_Request requests[], const int *outcount, const int indices[], MPI_Status statuses[]) {
    if (statuses == MPI_STATUSES_IGNORE || outcount == nullptr || *outcount == MPI_UNDEFINED) return;
    for (int i = 0; i < *outcount; ++i) empty_status_at(requests, indices[i], &statuses[i]);
}

}  // namespace

TUCOLL_EXPORT int MPI_Wait(MPI_Request *request, MPI_Status *status) {
    if (request == nullptr) return PMPI_Wait(request, status);
    int rc = advance_tucoll(1, request, true, true);
    if (rc != MPI_SUCCESS) return rc;
    const MPI_Request handle = *request;
    rc = wait_advancing_others([&](int *flag) { return PMPI_Test(request, flag, status); },
                               [&] { return PMPI_Wait(request, status); });
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
    rc = wait_advancing_others([&](int *flag) { return PMPI_Testall(count, requests, flag, statuses); },
                               [&] { return PMPI_Waitall(count, requests, statuses); });
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
    rc = wait_advancing_others([&](int *flag) { return PMPI_Testany(count, requests, index, flag, status); },
                               [&] { return PMPI_Waitany(count, requests, index, status); });
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
    rc = wait_advancing_others(
        [&](int *flag) {
            const int trc = PMPI_Testsome(incount, requests, outcount, indices, statuses);
            *flag = outcount == nullptr || *outcount != 0;  // MPI_UNDEFINED: nothing active
            return trc;
        },
        [&] { return PMPI_Waitsome(incount, requests, outcount, indices, statuses); });
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

// The MPI would call the generalized request's cancel callback and report success.
TUCOLL_EXPORT int MPI_Cancel(MPI_Request *request) {
    if (request != nullptr && is_started(*request)) {
        std::fprintf(stderr, "[tucoll] MPI_Cancel: a nonblocking collective's request cannot be cancelled (MPI "
                             "forbids it): complete it with a wait or test\n");
        return MPI_ERR_REQUEST;
    }
    return PMPI_Cancel(request);
}

TUCOLL_EXPORT int MPI_Request_free(MPI_Request *request) {
    if (request != nullptr && is_started(*request)) {
        std::fprintf(stderr, "[tucoll] MPI_Request_free: a nonblocking collective's request cannot be freed (MPI "
                             "forbids it): complete it with a wait or test\n");
        return MPI_ERR_REQUEST;
    }
    const int rc = request == nullptr ? MPI_SUCCESS : free_plan(*request);
    return rc != MPI_SUCCESS ? rc : PMPI_Request_free(request);
}
