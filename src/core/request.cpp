// tucoll_start, tucoll_test, tucoll_wait and tucoll_request_free: MPI_Start/Test/Wait/
// Request_free for tucoll's requests, persistent or nonblocking; tucoll_progress for all of them.
#include "core/request.h"

#include "core/context.h"
#include "core/errors.h"
#include "tucoll.h"

namespace tucoll {

int Pending::start() {
    return fail(MPI_ERR_REQUEST, "tucoll_start: the request is a nonblocking call's (only persistent ones start)");
}

void Pending::completed() {
    active = false;
    types_.release();
    if (orphaned) {
        delete this;
    } else {
        op_.context().release_pending(this);
    }
}

namespace {

// The request has completed: a nonblocking call's handle becomes TUCOLL_REQUEST_NULL, a
// persistent one inactive.
int conclude(tucoll_request_t *request) {
    tucoll_plan *req = *request;
    const int rc = req->operation().result();
    const bool persistent = req->persistent();
    req->active = false;
    req->completed();
    if (!persistent) *request = TUCOLL_REQUEST_NULL;
    return rc;
}

int check_handle(const char *fn, tucoll_request_t *request) {
    if (request == nullptr) return failf(MPI_ERR_ARG, "%s: request is NULL", fn);
    return MPI_SUCCESS;
}

}  // namespace
}  // namespace tucoll

using tucoll::fail;

extern "C" int tucoll_start(tucoll_request_t *request) {
    TUCOLL_TRY(tucoll::check_handle("tucoll_start", request));
    tucoll_plan *req = *request;
    if (req == TUCOLL_REQUEST_NULL) return fail(MPI_ERR_REQUEST, "tucoll_start: the request is TUCOLL_REQUEST_NULL");
    if (req->active) return fail(MPI_ERR_REQUEST, "tucoll_start: the request is already active (wait for it first)");
    return req->start();
}

extern "C" int tucoll_test(tucoll_request_t *request, int *flag) {
    TUCOLL_TRY(tucoll::check_handle("tucoll_test", request));
    if (flag == nullptr) return fail(MPI_ERR_ARG, "tucoll_test: flag is NULL");
    *flag = 1;
    tucoll_plan *req = *request;
    if (req == TUCOLL_REQUEST_NULL || !req->active) return MPI_SUCCESS;  // as MPI_Test of a null or inactive request
    tucoll::engine::progress();  // every outstanding operation
    if (!req->operation().test()) {
        *flag = 0;
        return MPI_SUCCESS;
    }
    return tucoll::prefix_error(tucoll::conclude(request), "tucoll_test");
}

extern "C" int tucoll_progress(int *pending) {
    const int left = tucoll::engine::progress_from_outside();
    if (pending != nullptr) *pending = left;
    return MPI_SUCCESS;
}

extern "C" int tucoll_wait(tucoll_request_t *request) {
    TUCOLL_TRY(tucoll::check_handle("tucoll_wait", request));
    tucoll_plan *req = *request;
    if (req == TUCOLL_REQUEST_NULL || !req->active) return MPI_SUCCESS;
    req->operation().wait();
    return tucoll::prefix_error(tucoll::conclude(request), "tucoll_wait");
}

extern "C" int tucoll_request_free(tucoll_request_t *request) {
    TUCOLL_TRY(tucoll::check_handle("tucoll_request_free", request));
    tucoll_plan *req = *request;
    if (req == TUCOLL_REQUEST_NULL) return MPI_SUCCESS;
    if (req->active) {
        return fail(MPI_ERR_REQUEST, "tucoll_request_free: the request is active (wait for it first)");
    }
    // An inactive nonblocking call's handle is already TUCOLL_REQUEST_NULL: this is a plan.
    if (req->persistent()) delete req;
    *request = TUCOLL_REQUEST_NULL;
    return MPI_SUCCESS;
}
