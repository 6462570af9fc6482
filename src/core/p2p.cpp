#include "core/p2p.h"

#include <algorithm>
#include <climits>

#include "core/errors.h"

namespace tucoll {
namespace {

int64_t limit = INT_MAX;

// A datatype of exactly `bytes` bytes: `bytes / chunk` chunks followed by the remainder. The
// chunk is the large-message limit itself, so every count stays within int.
int make_byte_type(int64_t bytes, MPI_Datatype *out) {
    const int64_t chunk = limit;
    const int64_t chunks = bytes / chunk;
    const int64_t rest = bytes % chunk;
    MPI_Datatype chunk_type;
    TUCOLL_MPI(MPI_Type_contiguous(static_cast<int>(chunk), MPI_BYTE, &chunk_type));
    int lengths[2] = {static_cast<int>(chunks), static_cast<int>(rest)};
    MPI_Aint displs[2] = {0, static_cast<MPI_Aint>(chunks * chunk)};
    MPI_Datatype types[2] = {chunk_type, MPI_BYTE};
    int rc = MPI_Type_create_struct(rest > 0 ? 2 : 1, lengths, displs, types, out);
    MPI_Type_free(&chunk_type);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Type_create_struct");
    TUCOLL_MPI(MPI_Type_commit(out));
    return MPI_SUCCESS;
}

}  // namespace

namespace detail {
void set_large_message_limit(int64_t bytes) { limit = bytes > 0 && bytes <= INT_MAX ? bytes : INT_MAX; }
int64_t large_message_limit() { return limit; }
}  // namespace detail

int isend_bytes(const void *buf, int64_t bytes, int dest, int tag, MPI_Comm comm, MPI_Request *req) {
    if (bytes <= limit) {
        TUCOLL_MPI(MPI_Isend(buf, static_cast<int>(bytes), MPI_BYTE, dest, tag, comm, req));
        return MPI_SUCCESS;
    }
    MPI_Datatype type;
    TUCOLL_TRY(make_byte_type(bytes, &type));
    int rc = MPI_Isend(buf, 1, type, dest, tag, comm, req);
    MPI_Type_free(&type);  // MPI keeps it alive until the send completes
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Isend");
    return MPI_SUCCESS;
}

int issend_bytes(const void *buf, int64_t bytes, int dest, int tag, MPI_Comm comm, MPI_Request *req) {
    if (bytes <= limit) {
        TUCOLL_MPI(MPI_Issend(buf, static_cast<int>(bytes), MPI_BYTE, dest, tag, comm, req));
        return MPI_SUCCESS;
    }
    MPI_Datatype type;
    TUCOLL_TRY(make_byte_type(bytes, &type));
    int rc = MPI_Issend(buf, 1, type, dest, tag, comm, req);
    MPI_Type_free(&type);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Issend");
    return MPI_SUCCESS;
}

int irecv_bytes(void *buf, int64_t bytes, int source, int tag, MPI_Comm comm, MPI_Request *req) {
    if (bytes <= limit) {
        TUCOLL_MPI(MPI_Irecv(buf, static_cast<int>(bytes), MPI_BYTE, source, tag, comm, req));
        return MPI_SUCCESS;
    }
    MPI_Datatype type;
    TUCOLL_TRY(make_byte_type(bytes, &type));
    int rc = MPI_Irecv(buf, 1, type, source, tag, comm, req);
    MPI_Type_free(&type);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Irecv");
    return MPI_SUCCESS;
}

Requests::~Requests() {
    // Only reached with requests outstanding when an error interrupted an algorithm: receives
    // are cancelled, and nothing is waited on, so an error never turns into a hang.
    for (size_t i = 0; i < reqs_.size(); ++i) {
        if (reqs_[i] == MPI_REQUEST_NULL) continue;
        if (is_recv_[i]) MPI_Cancel(&reqs_[i]);
        MPI_Request_free(&reqs_[i]);
    }
}

int Requests::send(const void *buf, int64_t bytes, int dest, int tag, MPI_Comm comm) {
    reqs_.push_back(MPI_REQUEST_NULL);
    is_recv_.push_back(0);
    return isend_bytes(buf, bytes, dest, tag, comm, &reqs_.back());
}

int Requests::ssend(const void *buf, int64_t bytes, int dest, int tag, MPI_Comm comm) {
    reqs_.push_back(MPI_REQUEST_NULL);
    is_recv_.push_back(0);
    return issend_bytes(buf, bytes, dest, tag, comm, &reqs_.back());
}

int Requests::recv(void *buf, int64_t bytes, int source, int tag, MPI_Comm comm) {
    reqs_.push_back(MPI_REQUEST_NULL);
    is_recv_.push_back(1);
    return irecv_bytes(buf, bytes, source, tag, comm, &reqs_.back());
}

void BlockList::clear() {
    ptrs_.clear();
    sizes_.clear();
    total_ = 0;
}

void BlockList::add(const void *ptr, int64_t bytes) {
    if (bytes <= 0) return;
    ptrs_.push_back(static_cast<const char *>(ptr));
    sizes_.push_back(bytes);
    total_ += bytes;
}

int Requests::send(const BlockList &blocks, int dest, int tag, MPI_Comm comm) {
    return post_list(blocks, dest, tag, comm, false);
}

int Requests::recv(const BlockList &blocks, int source, int tag, MPI_Comm comm) {
    return post_list(blocks, source, tag, comm, true);
}

int Requests::post_list(const BlockList &blocks, int peer, int tag, MPI_Comm comm, bool is_recv) {
    if (blocks.ptrs_.empty()) return MPI_SUCCESS;
    if (blocks.ptrs_.size() == 1) {
        char *p = const_cast<char *>(blocks.ptrs_[0]);
        return is_recv ? recv(p, blocks.sizes_[0], peer, tag, comm) : send(p, blocks.sizes_[0], peer, tag, comm);
    }
    // Ranges above the large-message limit are cut so that every length fits an int.
    std::vector<int> &lengths = lengths_;
    std::vector<MPI_Aint> &displs = displs_;
    lengths.clear();
    displs.clear();
    for (size_t k = 0; k < blocks.ptrs_.size(); ++k) {
        for (int64_t done = 0; done < blocks.sizes_[k]; done += limit) {
            MPI_Aint address;
            TUCOLL_MPI(MPI_Get_address(blocks.ptrs_[k] + done, &address));
            displs.push_back(address);
            lengths.push_back(static_cast<int>(std::min<int64_t>(limit, blocks.sizes_[k] - done)));
        }
    }
    MPI_Datatype type;
    TUCOLL_MPI(MPI_Type_create_hindexed(static_cast<int>(lengths.size()), lengths.data(), displs.data(), MPI_BYTE,
                                        &type));
    TUCOLL_MPI(MPI_Type_commit(&type));
    reqs_.push_back(MPI_REQUEST_NULL);
    is_recv_.push_back(is_recv ? 1 : 0);
    int rc = is_recv ? MPI_Irecv(MPI_BOTTOM, 1, type, peer, tag, comm, &reqs_.back())
                     : MPI_Isend(MPI_BOTTOM, 1, type, peer, tag, comm, &reqs_.back());
    MPI_Type_free(&type);  // MPI keeps it alive while the request needs it
    if (rc != MPI_SUCCESS) return mpi_fail(rc, is_recv ? "MPI_Irecv" : "MPI_Isend");
    return MPI_SUCCESS;
}

int Requests::test_all(int *done) {
    *done = 1;
    if (reqs_.empty()) return MPI_SUCCESS;
    int rc = MPI_Testall(static_cast<int>(reqs_.size()), reqs_.data(), done, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Testall");
    if (*done) {
        reqs_.clear();
        is_recv_.clear();
    }
    return MPI_SUCCESS;
}

int Requests::wait_all() {
    if (reqs_.empty()) return MPI_SUCCESS;
    int rc = MPI_Waitall(static_cast<int>(reqs_.size()), reqs_.data(), MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Waitall");
    reqs_.clear();
    is_recv_.clear();
    return MPI_SUCCESS;
}

}  // namespace tucoll
