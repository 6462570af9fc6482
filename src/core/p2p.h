// The point-to-point traffic of a collective call: 64-bit byte counts, several memory ranges as one
// message, and an error discipline under which no rank is ever left waiting.
#pragma once

#include <mpi.h>

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/collective_order.h"

namespace tucoll {

// The phases of a call's traffic. Library messages run on the context's private communicator, so
// they never meet user tags; Requests turns a phase into a tag of the current call (a per-call
// epoch), so that a message left over from an erroneous earlier call is never taken for one of
// this call's.
enum Tag : int {
    kTagData = 0,
    kTagMeta = 1,
    kTagInter = 2,
    kTagBarrier = 3,  // platform::NonblockingBarrier's messages (SMPI builds)
    kTagDynamic = 4,  // sparse exchanges: messages matched by probing
    kTagPhases = 5,
};

// Several memory ranges sent or received as one message: a single range goes out as plain
// bytes, several as an hindexed datatype over absolute addresses (MPI_BOTTOM), so blocks
// scattered over different buffers travel without being copied together first.
class BlockList {
  public:
    void clear();
    void add(const void *ptr, int64_t bytes);  // empty ranges are ignored
    int64_t bytes() const { return total_; }
    bool empty() const { return total_ == 0; }

  private:
    friend class Requests;
    std::vector<const char *> ptrs_;
    std::vector<int64_t> sizes_;
    int64_t total_ = 0;
};

// The traffic of one call on a communicator (one per context, reused from call to call, so a
// steady-state call allocates nothing here): its outstanding requests and its first error.
//
// An error never stops a schedule half-way: a rank that returns early leaves its peers waiting
// for messages that will never come. As MPICH carries an error flag through its schedules, a
// rank that has failed (a truncated or short receive, no memory for a buffer, a block larger
// than its place) records the first error and keeps posting every message of the schedule, but
// sends them empty; a receiver that gets fewer bytes than it expects, or more, records an error
// in turn and goes on. So every rank finishes the schedule in the time of a normal call, every
// rank whose data depends on the failure returns an error, and no request is ever abandoned:
// finish() completes all of them before the call returns, so nothing can write into scratch
// that a later call reuses.
//
// Whether a message is posted must follow from what both sides know (the schedule, exchanged
// sizes): BlockList messages are therefore posted even when empty.
class Requests {
  public:
    Requests() = default;
    ~Requests();
    Requests(const Requests &) = delete;
    Requests &operator=(const Requests &) = delete;

    // A new call: no error, the tags of call number `call` on `comm` (the context's counter).
    // `node_of` holds the node of every rank of `comm` (this rank's is `node`), when known: a
    // message of several ranges that leaves the node costs a copy on each side (post_list).
    void begin(uint64_t call, MPI_Comm comm, const std::vector<int> *node_of = nullptr, int node = 0);
    // Completes everything still posted and returns the call's result: the first error recorded
    // (its message restored as this thread's), else `rc`.
    int finish(int rc);

    bool failed() const { return error_ != MPI_SUCCESS; }
    // Records `rc` (with this thread's message for it) unless an error is recorded already.
    void fault(int rc);
    // The tag of `phase` in this call.
    int tag(Tag phase) const;

    // Posting never ends the call: a failure is recorded and the schedule goes on. Once the call
    // has failed, sends go out empty.
    void send(const void *buf, int64_t bytes, int dest, Tag phase, MPI_Comm comm);
    // A synchronous send: complete only once the receiver has matched it (NBX).
    void ssend(const void *buf, int64_t bytes, int dest, Tag phase, MPI_Comm comm);
    void recv(void *buf, int64_t bytes, int source, Tag phase, MPI_Comm comm);
    // One message made of the list's ranges, posted even when the list is empty. The ranges must
    // stay valid until the requests complete.
    void send(const BlockList &blocks, int dest, Tag phase, MPI_Comm comm);
    void recv(const BlockList &blocks, int source, Tag phase, MPI_Comm comm);

    // Completes everything posted so far; records errors (an error status, a message of another
    // size than posted) and goes on.
    void wait_all();
    // True, with everything completed, when nothing is outstanding; never blocks.
    bool test_all();
    size_t pending() const { return reqs_.size(); }

    // An MPI request the schedule waits for with its own (a nonblocking MPI collective's, such
    // as the vendor's MPI_Ialltoallv): completed and checked for errors like the others.
    void adopt(MPI_Request req) { post(req, -1, -1); }

    // How a schedule (core/task.h) waits for what it posted: `co_await requests.completion()`.
    // A blocking call waits on the spot and goes on; a deferred one (a nonblocking or
    // persistent operation) goes on at once when everything is complete, else suspends until
    // its operation's progress finds it so (resume_if_complete).
    struct Completion {
        Requests &requests;
        bool await_ready() {
            requests.release_held_until_wait();
            if (!requests.deferred_) {
                requests.wait_all();
                return true;
            }
            return requests.test_all();
        }
        void await_suspend(std::coroutine_handle<> waiting) { requests.suspended_ = waiting; }
        void await_resume() const noexcept {}
    };
    Completion completion() { return Completion{*this}; }
    void set_deferred(bool deferred) { deferred_ = deferred; }
    bool deferred() const { return deferred_; }
    // The schedule suspended on these requests, resumed when they are complete (or on its turn
    // to start a collective); false when it is still waiting (or none is suspended). Never blocks
    // unless `block`.
    bool resume_if_complete(bool block);
    bool suspended() const { return static_cast<bool>(suspended_); }

    // The communicator's order of MPI collectives (core/collective_order.h); its operation's
    // requests are this operation's place there. A blocking call's never waits in it.
    void set_order(CollectiveOrder *order) { order_ = order; }
    // While the operation's start runs its schedule to its first wait: the program's call order,
    // the only time a new place may be taken.
    void set_starting(bool starting) { starting_ = starting; }
    bool my_turn() const { return !deferred_ || order_ == nullptr || order_->turn(this); }
    // Holds this operation's place (a new one only at its start), until released as often, or
    // until the call finishes.
    void hold_order();
    void release_order();
    // One hold is released when the schedule next waits for its traffic: what it starts until
    // then (the algorithm a decision chose, at its start) still starts in order.
    void release_order_at_next_wait() { ++held_until_wait_; }
    // How a schedule starts an MPI collective (core/mpi_step.h): `if (co_await
    // requests.collective_turn()) requests.release_order();` around the start. It goes on at
    // once on its turn; else it takes a place (at its start) and suspends until its turn comes.
    // True when it took a place, for the caller to release once the collective has started.
    // After its start an operation must already hold one (run_decided's) to wait here: a place
    // taken then would not be in the program's order (checked in debug builds).
    struct Turn {
        Requests &requests;
        bool took = false;
        bool await_ready() {
            if (requests.my_turn()) return true;
            if (!requests.order_->holds(&requests)) {
                requests.hold_order();
                took = true;
            }
            return false;
        }
        void await_suspend(std::coroutine_handle<> waiting) {
            requests.suspended_ = waiting;
            requests.gated_ = true;
        }
        bool await_resume() const noexcept { return took; }
    };
    Turn collective_turn() { return Turn{*this}; }

  private:
    struct Posted {
        int peer;
        int64_t bytes;        // expected size of a receive; -1 for a send
        bool unpacks = false;  // a receive into several ranges: the MPI unpacks it on completion
        int64_t ranges = 0;    // the ranges of such a receive, walked on completion wherever it came from
    };
    void post(MPI_Request req, int peer, int64_t bytes, bool unpacks = false, int64_t ranges = 0);
    void post_list(const BlockList &blocks, int peer, Tag phase, MPI_Comm comm, bool is_recv);
    int list_type(const BlockList &blocks, MPI_Datatype *type, bool *cached);
    char *stand_in(int64_t bytes);
    void check_completed(size_t i, const MPI_Status &status, bool status_has_error);
    void complete(bool blocking);

    void release_held_until_wait();

    int epochs_ = 0;  // tag_epochs() of the communicator, looked up once
    bool deferred_ = false;
    std::coroutine_handle<> suspended_;
    CollectiveOrder *order_ = nullptr;
    bool starting_ = false;
    bool gated_ = false;        // suspended for its turn (Turn), not for its traffic
    int held_until_wait_ = 0;   // holds to release at the next Completion
    std::vector<MPI_Request> reqs_;
    std::vector<Posted> posted_;
    std::vector<MPI_Status> statuses_;
    int error_ = MPI_SUCCESS;
    std::string message_;
    int tag_base_ = 0;
    const std::vector<int> *node_of_ = nullptr;
    int node_ = 0;
    // Datatypes of recent block lists, reused while the same ranges recur (repeated calls on the
    // same buffers): creating and committing one per round costs more than comparing.
    struct CachedType {
        std::vector<int> lengths;
        std::vector<MPI_Aint> displs;
        MPI_Datatype type = MPI_DATATYPE_NULL;
        uint64_t used = 0;
    };
    std::vector<CachedType> types_;
    uint64_t uses_ = 0;
    std::vector<int> lengths_;  // scratch of list_type
    std::vector<MPI_Aint> displs_;
    // Simulated on shared buffers only: what list messages travel from and into (post_list).
    void *stand_in_ = nullptr;
    int64_t stand_in_bytes_ = 0;
    std::vector<void *> retired_;
};

// The tags a call may use lie in [kTagFirst, kTagFirst + epochs * kTagPhases): one set per call,
// cycling, so that up to `epochs` consecutive calls never share a tag.
constexpr int kTagFirst = 16;
int tag_epochs(MPI_Comm comm);

// How `bytes` bytes travel: *count elements of *type — MPI_BYTE up to the large-message limit,
// above it one element of a derived datatype, which the caller frees (MPI_Type_free) once the
// operation using it has been started.
int byte_type(int64_t bytes, MPI_Datatype *type, int *count);

namespace detail {
// Byte count above which a message is described by a derived datatype instead of an int count.
// Lowered by tests to exercise that path with small buffers.
void set_large_message_limit(int64_t bytes);
// The largest element count or displacement the C interface can hand back in an int (INT_MAX);
// lowered by tests to exercise MPI_ERR_COUNT with small buffers.
void set_count_limit(int64_t count);
int64_t count_limit();
}  // namespace detail

}  // namespace tucoll
