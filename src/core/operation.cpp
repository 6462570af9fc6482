#include "core/operation.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "core/context.h"
#include "core/errors.h"
#include "core/platform.h"

namespace tucoll {

// The outstanding operations of this process, in start order. (Simulated ranks each load their
// own copy of the library: core/platform.h.) Without a progress thread it is used by one thread
// at a time: the calls that make, advance and complete nonblocking operations come from one
// thread at a time (blocking calls on different communicators may run concurrently: they touch
// the engine only while it holds operations). With one (TUCOLL_PROGRESS=thread), everything that
// advances an operation or reads the list holds `mutex` (EngineLock).
struct Engine {
    std::vector<Operation *> outstanding;
    // progress()'s copies of `outstanding`, one per nesting level: a schedule resumed by
    // progress() may wait, and a wait polls the engine again.
    std::deque<std::vector<Operation *>> snapshots;  // a deque: a deeper level leaves this one in place
    int depth = 0;
    int on_stack = 0;  // outstanding operations whose schedule is running now

    // The progress thread, once started; `threaded` never goes back to false. `shared`: the
    // engine may be entered from several threads at once (the progress thread runs, or the program
    // runs MPI_THREAD_MULTIPLE, where one thread's blocking call advances the operations another
    // thread is testing): EngineLock then takes the mutex. Neither goes back to false.
    std::recursive_mutex mutex;
    std::condition_variable_any wake;  // an operation was added
    std::atomic<bool> threaded{false};
    std::atomic<bool> shared{false};
    std::thread thread;
    bool stop = false;

    static Engine &get() {
        static Engine engine;
        return engine;
    }
    ~Engine() { stop_thread(); }  // a process that ends without MPI_Finalize
    void stop_thread() {
        if (!thread.joinable()) return;
        {
            std::lock_guard<std::recursive_mutex> lock(mutex);
            stop = true;
        }
        wake.notify_all();
        thread.join();
    }
    void add(Operation *op) {
        outstanding.push_back(op);
        engine::outstanding_count.store(static_cast<int>(outstanding.size()), std::memory_order_relaxed);
        if (threaded.load(std::memory_order_relaxed)) wake.notify_one();
    }
    void remove(Operation *op) {
        outstanding.erase(std::remove(outstanding.begin(), outstanding.end(), op), outstanding.end());
        engine::outstanding_count.store(static_cast<int>(outstanding.size()), std::memory_order_relaxed);
    }
};

EngineLock::EngineLock() : held_(Engine::get().shared.load(std::memory_order_acquire)) {
    if (held_) Engine::get().mutex.lock();
}

EngineLock::~EngineLock() {
    if (held_) Engine::get().mutex.unlock();
}

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

Operation::Operation(Context &ctx, bool deferred) : ctx_(ctx) {
    requests_.set_deferred(deferred);
    requests_.set_order(&ctx.collective_order());
}

Operation::~Operation() {
    // A context ends with its communicator, after its operations completed (engine::complete_all).
    EngineLock lock;
    if (outstanding_) Engine::get().remove(this);
}

void Operation::launch(Task task) {
    EngineLock lock;
    TUCOLL_ASSERT(requests_.deferred() && !outstanding_);
    Engine::get().add(this);  // first: what may throw (the list growing) changes nothing else
    task_ = std::move(task);
    result_ = MPI_SUCCESS;
    outstanding_ = true;
    {
        ActiveOperation active(*this);
        requests_.set_starting(true);
        task_.start();
        requests_.set_starting(false);
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
    if (recorded_.on) record::completed(ctx_, recorded_, stats_, result_);
    recorded_ = record::Call();
}

bool Operation::done() const {
    EngineLock lock;
    return !outstanding_;
}

bool Operation::test() {
    EngineLock lock;
    if (!outstanding_) return true;
    if (running_) return false;
    advance(false);
    if (outstanding_ && task_.done()) conclude();
    return !outstanding_;
}

int Operation::result() const { return result_ == MPI_SUCCESS ? result_ : fail(result_, message_); }

int Operation::wait() {
    for (;;) {
        {
            EngineLock lock;
            if (!outstanding_) break;
            if (running_) return fail(MPI_ERR_REQUEST, "an operation cannot be waited for from its own schedule");
            const Engine &e = Engine::get();
            // Alone, it blocks in each round; never while holding the lock the progress thread needs.
            if (!lock.held() && static_cast<int>(e.outstanding.size()) - e.on_stack <= 1) {
                advance(true);
            } else {
                advance(false);
                if (!task_.done()) engine::progress();  // which may complete this one too
            }
            if (outstanding_ && task_.done()) conclude();
            if (!outstanding_) break;
            if (!lock.held()) continue;
        }
        std::this_thread::yield();  // the progress thread's turn
    }
    return result();
}

namespace engine {

std::atomic<int> outstanding_count{0};

bool idle_slow() {
    EngineLock lock;
    const Engine &e = Engine::get();
    return static_cast<int>(e.outstanding.size()) <= e.on_stack;
}

int progress_from_outside() {
    if (outstanding_count.load(std::memory_order_relaxed) == 0) return 0;
    EngineLock lock;
    Engine &e = Engine::get();
    if (e.on_stack > 0) return 0;
    progress_slow();
    return static_cast<int>(e.outstanding.size());
}

void progress_slow() {
    EngineLock lock;
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
    EngineLock lock;
    Engine &e = Engine::get();
    for (;;) {
        // Those started before an operation of `ctx` that is running now (which is about to
        // block in a collective): the later ones may wait for its collectives to start
        // (core/collective_order.h), and its collective cannot wait for theirs.
        Operation *oldest = nullptr;
        for (Operation *op : e.outstanding) {
            if (&op->context() != &ctx) continue;
            if (!op->running()) oldest = op;
            break;
        }
        if (oldest == nullptr) return;
        // Its error belongs to its own request; the call that waited here goes on regardless.
        oldest->wait();
    }
}

namespace {

// Between passes the thread sleeps this long: a round's completion is seen within about this
// (plus the kernel's timer slack), at a small share of a core.
constexpr std::chrono::microseconds kProgressInterval{20};

void progress_thread_main() {
    Engine &e = Engine::get();
    std::unique_lock<std::recursive_mutex> lock(e.mutex);
    while (!e.stop) {
        if (e.outstanding.empty()) {
            e.wake.wait(lock);
            continue;
        }
        progress_slow();
        lock.unlock();
        std::this_thread::sleep_for(kProgressInterval);
        lock.lock();
    }
}

}  // namespace

int start_progress_thread_if_asked() {
    static std::once_flag once;
    static int rc = MPI_SUCCESS;
    std::call_once(once, [] {
        const char *mode = std::getenv("TUCOLL_PROGRESS");
        if (mode == nullptr || *mode == '\0' || std::strcmp(mode, "none") == 0) return;
        if (std::strcmp(mode, "thread") != 0) {
            rc = failf(MPI_ERR_ARG, "TUCOLL_PROGRESS=%s: expected thread or none", mode);
            return;
        }
        int level = MPI_THREAD_SINGLE;
        MPI_Query_thread(&level);
        if (level < MPI_THREAD_MULTIPLE || !platform::threads_allowed()) {
            // Asked for explicitly: said once, whatever TUCOLL_VERBOSE says.
            std::fprintf(stderr, "[tucoll] TUCOLL_PROGRESS=thread: %s; operations advance in tucoll's calls only\n",
                         platform::threads_allowed() ? "MPI was not initialized with MPI_THREAD_MULTIPLE"
                                                     : "simulated ranks take no thread of their own");
            return;
        }
        Engine &e = Engine::get();
        e.shared.store(true, std::memory_order_release);
        e.threaded.store(true, std::memory_order_release);
        e.thread = std::thread(progress_thread_main);
        if (verbose()) log_line("progress thread started (TUCOLL_PROGRESS=thread)");
    });
    return rc;
}

void stop_progress_thread() { Engine::get().stop_thread(); }

void note_thread_level() {
    if (Engine::get().shared.load(std::memory_order_relaxed) || !platform::threads_allowed()) return;
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    if (level == MPI_THREAD_MULTIPLE) Engine::get().shared.store(true, std::memory_order_release);
}

}  // namespace engine
}  // namespace tucoll
