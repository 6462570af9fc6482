// Running under SimGrid's SMPI. Host computation is not sampled (smpi/simulate-computation:no),
// so copies are charged explicitly at a modelled bandwidth (TUCOLL_SIM_COPY_BW, bytes per
// second) and time per piece (TUCOLL_SIM_COPY_PIECE, seconds), and each call's dispatch at
// TUCOLL_SIM_CALL seconds (the `tucoll sim` tool sets all three from the platform):
// deterministic, and proportional to what an algorithm copies.
#include <mpi.h>
#include <simgrid/host.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/datatype.h"
#include "core/platform.h"
#include "platform/sim_setting.h"

namespace tucoll::platform {

double sim_setting(const char *name, double fallback) {
    const char *text = std::getenv(name);
    const double v = text != nullptr ? std::atof(text) : 0.0;
    return v > 0 ? v : fallback;
}

namespace {

double copy_bandwidth() {
    static const double bw = sim_setting("TUCOLL_SIM_COPY_BW", 10e9);  // one core's memcpy on a current server
    return bw;
}

// Seconds per contiguous piece: a memcpy call, or a range of a datatype the MPI packs or walks.
double copy_piece() {
    static const double t = sim_setting("TUCOLL_SIM_COPY_PIECE", 0.0);
    return t;
}

double call_cost() {
    static const double t = sim_setting("TUCOLL_SIM_CALL", 0.0);
    return t;
}

}  // namespace

bool shared_buffers() {
    static const bool shared = [] {
        const char *text = std::getenv("TUCOLL_SIM_SHARED_BUFFERS");
        return text != nullptr && std::strcmp(text, "1") == 0;
    }();
    return shared;
}

// Not smpi_execute(seconds): that converts seconds to flops at smpi/host-speed (20 kflop/s by
// default) and runs them on the platform's hosts (1 Gflop/s here), scaling every charge by 2e-5,
// and it drops charges under smpi/cpu-threshold (1 us: every copy under ~12 KB).
void charge_seconds(double seconds) {
    if (seconds > 0) smpi_execute_flops(seconds * sg_host_get_speed(sg_host_self()));
}

void charge_copy(int64_t bytes, int64_t pieces) {
    charge_seconds(static_cast<double>(std::max<int64_t>(pieces, 0)) * copy_piece() +
                   static_cast<double>(std::max<int64_t>(bytes, 0)) / copy_bandwidth());
}

void charge_call() { charge_seconds(call_cost()); }

void charge_packing(MPI_Datatype type, int64_t elements) {
    TypeInfo info;
    if (elements > 0 && TypeInfo::query(type, &info) == MPI_SUCCESS && !info.contiguous) {
        charge_copy(elements * info.size);
    }
}

void *allocate(size_t bytes) {
    if (shared_buffers()) return SMPI_SHARED_MALLOC(bytes > 0 ? bytes : 1);
    return std::aligned_alloc(64, (bytes + 63) / 64 * 64);
}

void release(void *ptr) {
    if (ptr == nullptr) return;
    if (shared_buffers()) {
        SMPI_SHARED_FREE(ptr);
    } else {
        std::free(ptr);
    }
}

int message_bytes(MPI_Status *status, int64_t *bytes) {
    int count = 0;
    const int rc = MPI_Get_count(status, MPI_BYTE, &count);
    *bytes = count;
    return rc;
}

int probe(MPI_Comm comm, int tag, bool blocking, bool *found, Probed *out) {
    int flag = 1;
    const int rc = blocking ? MPI_Probe(MPI_ANY_SOURCE, tag, comm, &out->status)
                            : MPI_Iprobe(MPI_ANY_SOURCE, tag, comm, &flag, &out->status);
    out->tag = tag;
    out->comm = comm;
    *found = rc == MPI_SUCCESS && flag != 0;
    return rc;
}

int receive(Probed &probed, void *buf, int count, MPI_Datatype type) {
    return MPI_Recv(buf, count, type, probed.status.MPI_SOURCE, probed.tag, probed.comm, MPI_STATUS_IGNORE);
}

NonblockingBarrier::~NonblockingBarrier() {
    if (request_ != MPI_REQUEST_NULL) MPI_Request_free(&request_);
    for (int i = 0; i < nsends_; ++i) {
        if (sends_[i] != MPI_REQUEST_NULL) MPI_Request_free(&sends_[i]);
    }
}

int NonblockingBarrier::start(MPI_Comm comm, int tag) {
    comm_ = comm;
    tag_ = tag;
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &size_);
    distance_ = 1;
    nsends_ = 0;
    finished_ = size_ == 1;
    request_ = MPI_REQUEST_NULL;
    return finished_ ? MPI_SUCCESS : post_round();
}

// Round k (distance 2^k): tell rank + 2^k that we (and, transitively, 2^k - 1 ranks before us)
// arrived, and wait to hear the same from rank - 2^k.
int NonblockingBarrier::post_round() {
    const int rc = MPI_Irecv(nullptr, 0, MPI_BYTE, (rank_ - distance_ + size_) % size_, tag_, comm_, &request_);
    if (rc != MPI_SUCCESS) return rc;
    return MPI_Isend(nullptr, 0, MPI_BYTE, (rank_ + distance_) % size_, tag_, comm_, &sends_[nsends_++]);
}

int NonblockingBarrier::test(bool *done) {
    *done = false;
    while (!finished_) {
        int flag = 0;
        int rc = MPI_Test(&request_, &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS || !flag) return rc;
        distance_ *= 2;
        finished_ = distance_ >= size_;
        if (!finished_ && (rc = post_round()) != MPI_SUCCESS) return rc;
    }
    int flag = 0;
    const int rc = MPI_Testall(nsends_, sends_, &flag, MPI_STATUSES_IGNORE);
    *done = rc == MPI_SUCCESS && flag != 0;
    return rc;
}

const char *name() { return "smpi"; }
bool threads_allowed() { return false; }

}  // namespace tucoll::platform
