// Running on a real MPI library: copies cost what they cost, buffers come from the heap.
#include <cstdlib>

#include "core/platform.h"

namespace tucoll::platform {

void charge_copy(int64_t, int64_t) {}
void charge_seconds(double) {}
void charge_call() {}
void charge_packing(MPI_Datatype, int64_t) {}

void *allocate(size_t bytes) { return std::aligned_alloc(64, (bytes + 63) / 64 * 64); }

void release(void *ptr) { std::free(ptr); }

bool shared_buffers() { return false; }

int message_bytes(MPI_Status *status, int64_t *bytes) {
    MPI_Count count = 0;
    const int rc = MPI_Get_elements_x(status, MPI_BYTE, &count);
    *bytes = count;
    return rc;
}

int probe(MPI_Comm comm, int tag, bool blocking, bool *found, Probed *out) {
    int flag = 1;
    const int rc = blocking ? MPI_Mprobe(MPI_ANY_SOURCE, tag, comm, &out->message, &out->status)
                            : MPI_Improbe(MPI_ANY_SOURCE, tag, comm, &flag, &out->message, &out->status);
    *found = rc == MPI_SUCCESS && flag != 0;
    return rc;
}

int receive(Probed &probed, void *buf, int count, MPI_Datatype type) {
    return MPI_Mrecv(buf, count, type, &probed.message, MPI_STATUS_IGNORE);
}

// A barrier abandoned on an error path keeps its request: MPI forbids MPI_Request_free on a
// non-blocking collective's request, and waiting could hang if other ranks failed too.
NonblockingBarrier::~NonblockingBarrier() = default;

int NonblockingBarrier::start(MPI_Comm comm, int) { return MPI_Ibarrier(comm, &request_); }

int NonblockingBarrier::test(bool *done) {
    int flag = 0;
    const int rc = MPI_Test(&request_, &flag, MPI_STATUS_IGNORE);
    *done = rc == MPI_SUCCESS && flag != 0;
    return rc;
}

const char *name() { return "mpi"; }
bool threads_allowed() { return true; }

}  // namespace tucoll::platform
