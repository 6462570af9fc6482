#include "core/operation.h"

#include <algorithm>
#include <deque>
#include <vector>

#include "core/context.h"
#include "core/errors.h"

namespace tucoll {

// The outstanding operations of this rank, in start order. (Simulated ranks each load their own
// copy of the library: core/platform.h.) Unlocked: tucoll calls on a rank come from one thread at
// a time (MPI_THREAD_SERIALIZED at most, as the library's contexts need too).
struct Engine {
    std::vector<Operation *> outstanding;
    // progress()'s copies of `outstanding`, one per nesting level: a schedule resumed by
    // progress() may wait, and a wait polls the engine again.
    std::deque<std::vector<Operation *>> snapshots;  // a deque: a deeper level leaves this one in place
    int depth = 0;
    int on_stack = 0;  // outstanding operations whose schedule is running now

    static Engine &get() {
        static Engine engine;
        return engine;
    }
    void add(Operation *op) {
        outstanding.push_back(op);
        engine::outstanding_count = static_cast<int>(outstanding.size());
    }
    void remove(Operation *op) {
        outstanding.erase(std::remove(outstanding.begin(), outstanding.end(), op), outstanding.end());
        engine::outstanding_count = static_cast<int>(outstanding.size());
    }
};

ActiveOperation::ActiveOperation(Operation &op)
    : op_(op), previous_(op.ctx_.active_), was_running_(op.running_),
      counted_(!op.running_ && op.outstanding_) {
    op.ctx_.active_ = &op;
    if (counted_) ++Engine::get().on_stack;
    op.running_ = true;
}

ActiveOperation::~ActiveOperation() {
    op_.running_ = was_running_;
    if (counted_) --Engine::get().on_stack;
    op_.ctx_.active_ = previous_;
}

Operation::Operation(Context &ctx, bool deferred) : ctx_(ctx) { requests_.set_deferred(deferred); }

Operation::~Operation() {
    // A context ends with its communicator, after its operations completed (engine::complete_all).
    if (outstanding_) Engine::get().remove(this);
}

void Operation::launch(Task task) {
    TUCOLL_ASSERT(requests_.deferred() && !outstanding_);
    Engine::get().add(this);  // first: what may throw (the list growing) changes nothing else
    task_ = std::move(task);
    result_ = MPI_SUCCESS;
    outstanding_ = true;
    {
        ActiveOperation active(*this);
        task_.start();
    }
    if (task_.done()) conclude();
}

// Resumes the schedule for as long as the round it waits for is complete.
void Operation::advance(bool block) {
    ActiveOperation active(*this);
    while (!task_.done() && requests_.resume_if_complete(block)) {
    }
}

// The schedule ended: its traffic completes, the operation leaves the engine, and its
// statistics become the communicator's last call's (unless a blocking call is running there).
void Operation::conclude() {
    {
        ActiveOperation active(*this);
        result_ = requests_.finish(task_.result());
    }
    // Kept for the wait or test that reports it, whatever fails on this thread meanwhile.
    message_ = result_ == MPI_SUCCESS ? std::string() : last_message(result_);
    task_.reset();
    outstanding_ = false;
    Engine::get().remove(this);
    if (!ctx_.blocking_operation().running()) ctx_.publish_stats(stats_);
}

bool Operation::test() {
    if (!outstanding_) return true;
    if (running_) return false;
    advance(false);
    if (outstanding_ && task_.done()) conclude();
    return !outstanding_;
}

int Operation::result() const { return result_ == MPI_SUCCESS ? result_ : fail(result_, message_); }

int Operation::wait() {
    while (outstanding_) {
        if (running_) return fail(MPI_ERR_REQUEST, "an operation cannot be waited for from its own schedule");
        const Engine &e = Engine::get();
        if (static_cast<int>(e.outstanding.size()) - e.on_stack <= 1) {
            advance(true);  // nothing else to advance: block in each round
        } else {
            advance(false);
            if (!task_.done()) engine::progress();  // which may complete this one too
        }
        if (outstanding_ && task_.done()) conclude();
    }
    return result();
}

namespace engine {

int outstanding_count = 0;

bool idle_slow() {
    const Engine &e = Engine::get();
    return static_cast<int>(e.outstanding.size()) <= e.on_stack;
}

void progress_slow() {
    Engine &e = Engine::get();
    // Completing an operation removes it from the list: walk a copy (this level's).
    if (e.snapshots.size() <= static_cast<size_t>(e.depth)) e.snapshots.resize(e.depth + 1);
    std::vector<Operation *> &snapshot = e.snapshots[e.depth];
    snapshot.assign(e.outstanding.begin(), e.outstanding.end());
    ++e.depth;
    for (Operation *op : snapshot) {
        if (std::find(e.outstanding.begin(), e.outstanding.end(), op) == e.outstanding.end()) continue;
        if (!op->running()) op->test();
    }
    --e.depth;
}

void complete_all_slow(Context &ctx) {
    Engine &e = Engine::get();
    for (;;) {
        Operation *oldest = nullptr;
        for (Operation *op : e.outstanding) {
            if (&op->context() == &ctx && !op->running()) {
                oldest = op;
                break;
            }
        }
        if (oldest == nullptr) return;
        // Its error belongs to its own request; the call that waited here goes on regardless.
        oldest->wait();
    }
}

}  // namespace engine
}  // namespace tucoll
