// The blocking point-to-point calls, under MPI's progress rule (interpose.h): while tucoll
// operations are outstanding, a blocking send, receive or probe is its nonblocking form waited for
// by polling, so that they advance meanwhile — a peer may send this rank its message only once an
// exchange that needs this rank's rounds has completed. Otherwise, and always under
// MPI_THREAD_MULTIPLE, the MPI's own call. Point-to-point messages match whether posted blocking
// or not, so the change is invisible to the peer. (Blocking collectives cannot be treated so: a
// blocking and a nonblocking collective do not match. MPI_Bsend completes locally; MPI_Rsend and
// MPI_Sendrecv_replace go to the MPI.)
#include "interpose.h"

using namespace tucoll::preload;

namespace {

// The one request of a started send or receive, waited for as MPI_Wait would, with `status`.
int wait_one(MPI_Request *request, MPI_Status *status) {
    return wait_advancing_others([&](int *flag) { return PMPI_Test(request, flag, status); },
                                 [&] { return PMPI_Wait(request, status); });
}

}  // namespace

TUCOLL_EXPORT int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
    if (!others_outstanding()) return PMPI_Send(buf, count, type, dest, tag, comm);
    MPI_Request request = MPI_REQUEST_NULL;
    const int rc = PMPI_Isend(buf, count, type, dest, tag, comm, &request);
    return rc != MPI_SUCCESS ? rc : wait_one(&request, MPI_STATUS_IGNORE);
}

TUCOLL_EXPORT int MPI_Ssend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
    if (!others_outstanding()) return PMPI_Ssend(buf, count, type, dest, tag, comm);
    MPI_Request request = MPI_REQUEST_NULL;
    const int rc = PMPI_Issend(buf, count, type, dest, tag, comm, &request);
    return rc != MPI_SUCCESS ? rc : wait_one(&request, MPI_STATUS_IGNORE);
}

TUCOLL_EXPORT int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                           MPI_Status *status) {
    if (!others_outstanding()) return PMPI_Recv(buf, count, type, source, tag, comm, status);
    MPI_Request request = MPI_REQUEST_NULL;
    const int rc = PMPI_Irecv(buf, count, type, source, tag, comm, &request);
    return rc != MPI_SUCCESS ? rc : wait_one(&request, status);
}

TUCOLL_EXPORT int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                               void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                               MPI_Comm comm, MPI_Status *status) {
    if (!others_outstanding()) {
        return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
                             recvtag, comm, status);
    }
    MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    int rc = PMPI_Irecv(recvbuf, recvcount, recvtype, source, recvtag, comm, &requests[0]);
    if (rc != MPI_SUCCESS) return rc;
    rc = PMPI_Isend(sendbuf, sendcount, sendtype, dest, sendtag, comm, &requests[1]);
    if (rc != MPI_SUCCESS) {
        PMPI_Cancel(&requests[0]);
        PMPI_Request_free(&requests[0]);
        return rc;
    }
    MPI_Status statuses[2];
    rc = wait_advancing_others([&](int *flag) { return PMPI_Testall(2, requests, flag, statuses); },
                               [&] { return PMPI_Waitall(2, requests, statuses); });
    if (rc == MPI_ERR_IN_STATUS) {
        rc = statuses[0].MPI_ERROR != MPI_SUCCESS ? statuses[0].MPI_ERROR : statuses[1].MPI_ERROR;
    }
    if (status != MPI_STATUS_IGNORE) *status = statuses[0];
    return rc;
}

// A probe needs no request of its own: the poll is its test form (the MPI's own probe where nothing
// is outstanding).
TUCOLL_EXPORT int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status) {
    return wait_advancing_others([&](int *flag) { return PMPI_Iprobe(source, tag, comm, flag, status); },
                                 [&] { return PMPI_Probe(source, tag, comm, status); });
}

TUCOLL_EXPORT int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status) {
    return wait_advancing_others([&](int *flag) { return PMPI_Improbe(source, tag, comm, flag, message, status); },
                                 [&] { return PMPI_Mprobe(source, tag, comm, message, status); });
}
