// The transport: point-to-point messages of any size posted, tracked and completed with their
// errors (Requests), tags per call and phase, and the stand-ins of simulated runs. Byte types and
// block-list datatypes: p2p_types.cpp.
#include "core/p2p.h"

#include <algorithm>

#include "core/errors.h"
#include "core/operation.h"
#include "core/platform.h"

namespace tucoll {

namespace {

enum class Kind { kSend, kSsend, kRecv };

// One non-blocking operation on `bytes` bytes; above the large-message limit the buffer travels
// as one element of a byte datatype (both sides agree on the size, so on the description).
int start(Kind kind, void *buf, int64_t bytes, int peer, int tag, MPI_Comm comm, MPI_Request *req) {
    MPI_Datatype type = MPI_BYTE;
    int count = 0;
    TUCOLL_TRY(byte_type(bytes, &type, &count));
    int rc = kind == Kind::kRecv    ? MPI_Irecv(buf, count, type, peer, tag, comm, req)
             : kind == Kind::kSsend ? MPI_Issend(buf, count, type, peer, tag, comm, req)
                                    : MPI_Isend(buf, count, type, peer, tag, comm, req);
    if (type != MPI_BYTE) MPI_Type_free(&type);  // MPI keeps it alive while the request needs it
    if (rc != MPI_SUCCESS) return mpi_fail(rc, kind == Kind::kRecv ? "MPI_Irecv" : "MPI_Isend");
    return MPI_SUCCESS;
}

}  // namespace

int tag_epochs(MPI_Comm comm) {
    int *ub = nullptr, found = 0;
    MPI_Comm_get_attr(comm, MPI_TAG_UB, &ub, &found);
    // The MPI standard guarantees an upper bound of at least 32767.
    const int top = found && ub != nullptr ? std::min(*ub, 1 << 30) : 32767;
    return (top - kTagFirst) / kTagPhases;
}

Requests::~Requests() {
    for (void *old : retired_) platform::release(old);
    platform::release(stand_in_);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    for (CachedType &c : types_) MPI_Type_free(&c.type);
}

// A shared buffer of at least `bytes` (see post_list). It grows to a power of two, so a call
// retires a few at most; a retired one may still be in a posted request's hands until the call
// ends, so it is released by the next begin().
char *Requests::stand_in(int64_t bytes) {
    if (bytes > stand_in_bytes_) {
        int64_t grown = 64;
        while (grown < bytes) grown *= 2;
        void *fresh = platform::allocate(static_cast<size_t>(grown));
        if (fresh == nullptr) return nullptr;
        if (stand_in_ != nullptr) retired_.push_back(stand_in_);
        stand_in_ = fresh;
        stand_in_bytes_ = grown;
    }
    return static_cast<char *>(stand_in_);
}

void Requests::begin(uint64_t call, MPI_Comm comm, const std::vector<int> *node_of, int node) {
    // The previous call completed every request, so no message uses a stand-in outgrown then.
    for (void *old : retired_) platform::release(old);
    retired_.clear();
    if (epochs_ == 0) epochs_ = std::max(1, tag_epochs(comm));
    node_of_ = node_of;
    node_ = node;
    tag_base_ = kTagFirst + static_cast<int>(call % static_cast<uint64_t>(epochs_)) * kTagPhases;
    error_ = MPI_SUCCESS;
    message_.clear();
}

int Requests::finish(int rc) {
    if (rc != MPI_SUCCESS) fault(rc);
    if (deferred_ && order_ != nullptr) order_->forget(this);  // a blocking call's never holds one
    held_until_wait_ = 0;
    gated_ = false;
    wait_all();
    if (!failed()) return MPI_SUCCESS;
    return fail(error_, message_);
}

void Requests::fault(int rc) {
    if (rc == MPI_SUCCESS || failed()) return;
    error_ = rc;
    message_ = last_message(rc);
}

int Requests::tag(Tag phase) const { return tag_base_ + static_cast<int>(phase); }

void Requests::post(MPI_Request req, int peer, int64_t bytes, bool unpacks, int64_t ranges) {
    reqs_.push_back(req);
    posted_.push_back({peer, bytes, unpacks, ranges});
}

void Requests::send(const void *buf, int64_t bytes, int dest, Tag phase, MPI_Comm comm) {
    MPI_Request req = MPI_REQUEST_NULL;
    const int64_t n = failed() ? 0 : bytes;
    const int rc = start(Kind::kSend, const_cast<void *>(buf), n, dest, tag(phase), comm, &req);
    if (rc != MPI_SUCCESS) return fault(rc);
    post(req, dest, -1);
}

void Requests::ssend(const void *buf, int64_t bytes, int dest, Tag phase, MPI_Comm comm) {
    MPI_Request req = MPI_REQUEST_NULL;
    const int64_t n = failed() ? 0 : bytes;
    const int rc = start(Kind::kSsend, const_cast<void *>(buf), n, dest, tag(phase), comm, &req);
    if (rc != MPI_SUCCESS) return fault(rc);
    post(req, dest, -1);
}

void Requests::recv(void *buf, int64_t bytes, int source, Tag phase, MPI_Comm comm) {
    MPI_Request req = MPI_REQUEST_NULL;
    const int rc = start(Kind::kRecv, buf, bytes, source, tag(phase), comm, &req);
    if (rc != MPI_SUCCESS) return fault(rc);
    post(req, source, bytes);
}

void Requests::send(const BlockList &blocks, int dest, Tag phase, MPI_Comm comm) {
    post_list(blocks, dest, phase, comm, false);
}

void Requests::recv(const BlockList &blocks, int source, Tag phase, MPI_Comm comm) {
    post_list(blocks, source, phase, comm, true);
}

void Requests::post_list(const BlockList &blocks, int peer, Tag phase, MPI_Comm comm, bool is_recv) {
    if (blocks.ptrs_.size() <= 1 || (!is_recv && failed())) {
        char *p = blocks.ptrs_.empty() ? nullptr : const_cast<char *>(blocks.ptrs_[0]);
        return is_recv ? recv(p, blocks.total_, peer, phase, comm) : send(p, blocks.total_, peer, phase, comm);
    }
    // A message of several ranges that leaves the node is packed into one buffer by the MPI's
    // datatype engine as it is sent and unpacked where it completes: a copy on each side that a
    // contiguous message (sent from and received into place by the network) does not make.
    // Within a node the MPI copies through shared memory either way, straight from and into the
    // ranges. Either way the engine walks every range on each side. SMPI does all of it without
    // simulated time, so the platform charges it here (the receive's once it completes, in
    // check_completed): the bytes where packed, the ranges always.
    const bool packed = node_of_ == nullptr || (*node_of_)[peer] != node_;
    const auto ranges = static_cast<int64_t>(blocks.ptrs_.size());
    if (!is_recv) platform::charge_copy(packed ? blocks.total_ : 0, ranges);
    MPI_Request req = MPI_REQUEST_NULL;
    if (platform::shared_buffers()) {
        // Simulated on shared buffers, whose contents are not checked: the message travels as
        // its bytes from a shared stand-in. For a derived type SMPI allocates a private buffer
        // of the message's size on each side and copies through it, memory and host time that
        // the simulated time does not see (it depends on the size alone; the packing is charged
        // above either way); at thousands of ranks with KiB blocks that no longer fits.
        char *buf = stand_in(blocks.total_);
        if (buf == nullptr) return fault(failf(MPI_ERR_NO_MEM, "no shared buffer of %lld bytes for a message",
                                               static_cast<long long>(blocks.total_)));
        const int rc = start(is_recv ? Kind::kRecv : Kind::kSend, buf, blocks.total_, peer, tag(phase), comm, &req);
        if (rc != MPI_SUCCESS) return fault(rc);
        return post(req, peer, is_recv ? blocks.total_ : -1, packed && is_recv, is_recv ? ranges : 0);
    }
    MPI_Datatype type;
    bool cached = true;
    int rc = list_type(blocks, &type, &cached);
    if (rc != MPI_SUCCESS) return fault(rc);
    rc = is_recv ? MPI_Irecv(MPI_BOTTOM, 1, type, peer, tag(phase), comm, &req)
                 : MPI_Isend(MPI_BOTTOM, 1, type, peer, tag(phase), comm, &req);
    if (!cached) MPI_Type_free(&type);  // the request holds it until it completes
    if (rc != MPI_SUCCESS) return fault(mpi_fail(rc, is_recv ? "MPI_Irecv" : "MPI_Isend"));
    post(req, peer, is_recv ? blocks.total_ : -1, packed && is_recv, is_recv ? ranges : 0);
}

void Requests::check_completed(size_t i, const MPI_Status &status, bool status_has_error) {
    const Posted &p = posted_[i];
    if (status_has_error && status.MPI_ERROR != MPI_SUCCESS) {
        int error_class = status.MPI_ERROR;
        MPI_Error_class(status.MPI_ERROR, &error_class);
        if (error_class == MPI_ERR_TRUNCATE && p.bytes >= 0) {
            fault(failf(MPI_ERR_TRUNCATE, "rank %d sent more than the %lld bytes expected: the send and receive counts "
                        "disagree", p.peer, static_cast<long long>(p.bytes)));
        } else {
            fault(mpi_fail(status.MPI_ERROR, p.bytes >= 0 ? "a receive" : "a send"));
        }
        return;
    }
    if (p.bytes < 0) return;
    int64_t got = 0;
    MPI_Status copy = status;
    if (platform::message_bytes(&copy, &got) != MPI_SUCCESS) return;
    if (p.ranges > 0) platform::charge_copy(p.unpacks ? got : 0, p.ranges);
    if (got == p.bytes) return;
    fault(failf(MPI_ERR_COUNT, "rank %d sent %lld bytes where %lld were expected: the send and receive counts "
                "disagree, or that rank failed earlier in this call", p.peer, static_cast<long long>(got),
                static_cast<long long>(p.bytes)));
}

// Completes the outstanding requests (all of them when `blocking`, else those already done when
// all are), checking each; a request that failed does not keep the others from completing.
void Requests::complete(bool blocking) {
    while (!reqs_.empty()) {
        const int n = static_cast<int>(reqs_.size());
        statuses_.resize(reqs_.size());
        int flag = 1;
        const int rc = blocking ? MPI_Waitall(n, reqs_.data(), statuses_.data())
                                : MPI_Testall(n, reqs_.data(), &flag, statuses_.data());
        if (rc == MPI_SUCCESS) {
            if (!flag) return;
            for (size_t i = 0; i < reqs_.size(); ++i) check_completed(i, statuses_[i], false);
            reqs_.clear();
            posted_.clear();
            return;
        }
        if (rc != MPI_ERR_IN_STATUS) {
            // Which requests completed is unknown: nothing more can be learnt from them.
            fault(mpi_fail(rc, blocking ? "MPI_Waitall" : "MPI_Testall"));
            for (MPI_Request &r : reqs_) {
                if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
            }
            reqs_.clear();
            posted_.clear();
            return;
        }
        size_t kept = 0;
        for (size_t i = 0; i < reqs_.size(); ++i) {
            if (statuses_[i].MPI_ERROR == MPI_ERR_PENDING) {
                reqs_[kept] = reqs_[i];
                posted_[kept++] = posted_[i];
                continue;
            }
            check_completed(i, statuses_[i], true);
            // Open MPI leaves a request that completed with an error allocated.
            if (reqs_[i] != MPI_REQUEST_NULL) MPI_Request_free(&reqs_[i]);
        }
        reqs_.resize(kept);
        posted_.resize(kept);
    }
}

void Requests::wait_all() {
    // Other operations outstanding on this rank advance while this one waits: a peer may be
    // waiting on one of them before it can serve this one (core/operation.h).
    while (!engine::idle()) {
        if (test_all()) return;
        engine::progress();
    }
    complete(true);
}

bool Requests::test_all() {
    complete(false);
    return reqs_.empty();
}

void Requests::hold_order() {
    if (!deferred_ || order_ == nullptr) return;
    // A place taken later than at the start would not be in the program's order.
    TUCOLL_ASSERT(starting_ || order_->holds(this));
    order_->hold(this);
}

void Requests::release_order() {
    if (deferred_ && order_ != nullptr) order_->release(this);
}

void Requests::release_held_until_wait() {
    for (; held_until_wait_ > 0; --held_until_wait_) release_order();
}

bool Requests::resume_if_complete(bool block) {
    if (!suspended_) return false;
    if (gated_) {
        if (!my_turn()) return false;  // an earlier operation's collective is still to start
        gated_ = false;
    } else if (block) {
        wait_all();
    } else if (!test_all()) {
        return false;
    }
    std::exchange(suspended_, {}).resume();
    return true;
}

}  // namespace tucoll
