// A collective's schedule as a coroutine: the algorithm's code reads as rounds (post the round's
// messages, `co_await` them, go on), and one engine runs it either to completion on the spot (a
// blocking call) or a round at a time as its messages complete (a nonblocking or persistent
// call). This is the state machine of UCC's tasks and MPICH's transport schedules, written as
// straight-line code: the rounds whose sizes depend on what earlier rounds received (TuNA's
// metadata) need no deferred-size vertices.
//
// A Task returns an MPI error code. It starts suspended and runs on start(); awaiting another
// Task runs that one and resumes the awaiting task when it ends. What a Task waits for is the
// traffic of its operation (core/p2p.h: co_await requests.completion()): in a blocking call that
// waits on the spot and never suspends; in a nonblocking one it suspends until the operation's
// progress finds every request complete.
#pragma once

#include <mpi.h>

#include <coroutine>
#include <cstddef>
#include <utility>

namespace tucoll {

class Context;

// Coroutine frames come from their communicator's pool of freed frames (every schedule's first
// parameter is its Context), kept by size class: a steady-state call allocates nothing, and
// takes no lock nor thread-local lookup for it.
class FramePool {
  public:
    FramePool() = default;
    FramePool(const FramePool &) = delete;
    FramePool &operator=(const FramePool &) = delete;
    ~FramePool();
    void *take(size_t bytes) noexcept;  // nullptr when memory runs out
    static void give(void *frame, size_t bytes) noexcept;

  private:
    static constexpr size_t kGrain = 64, kClasses = 64;
    struct Free {
        Free *next;
    };
    Free *heads_[kClasses] = {};
};
FramePool &frame_pool(Context &ctx);

class [[nodiscard]] Task {
  public:
    struct promise_type;
    using Handle = std::coroutine_handle<promise_type>;

    struct promise_type {
        int rc = MPI_SUCCESS;
        std::coroutine_handle<> continuation;  // the task awaiting this one; none for an operation's root

        Task get_return_object() { return Task(Handle::from_promise(*this)); }
        std::suspend_always initial_suspend() noexcept { return {}; }
        struct Final {
            bool await_ready() noexcept { return false; }
            std::coroutine_handle<> await_suspend(Handle done) noexcept {
                std::coroutine_handle<> next = done.promise().continuation;
                return next ? next : std::noop_coroutine();
            }
            void await_resume() noexcept {}
        };
        Final final_suspend() noexcept { return {}; }
        void return_value(int value) { rc = value; }
        // bad_alloc (a vector growing) ends the task with MPI_ERR_NO_MEM, anything else with
        // MPI_ERR_INTERN; the message is set either way.
        void unhandled_exception() noexcept;
        // No memory for the frame: a finished task with MPI_ERR_NO_MEM (nothing is thrown).
        static Task get_return_object_on_allocation_failure();

        // A schedule's first parameter is its Context (no other kind of coroutine compiles).
        template <class... Rest>
        static void *operator new(size_t bytes, Context &ctx, Rest &&...) noexcept {
            return frame_pool(ctx).take(bytes);
        }
        static void operator delete(void *frame, size_t bytes) noexcept { FramePool::give(frame, bytes); }
    };

    Task() = default;
    // A finished task with result `rc`, and no coroutine: what a step that completed on the spot
    // returns (a blocking call's vendor collective), at no cost.
    static Task finished(int rc) {
        Task t;
        t.rc_ = rc;
        return t;
    }
    Task(Task &&other) noexcept : handle_(std::exchange(other.handle_, {})), rc_(other.rc_) {}
    Task &operator=(Task &&other) noexcept {
        if (this != &other) {
            reset();
            handle_ = std::exchange(other.handle_, {});
            rc_ = other.rc_;
        }
        return *this;
    }
    ~Task() { reset(); }

    // Runs the task until it first waits for traffic that is not complete, or to its end.
    void start() {
        if (handle_) handle_.resume();
    }
    bool done() const { return !handle_ || handle_.done(); }
    int result() const { return handle_ ? handle_.promise().rc : rc_; }
    void reset() {
        if (handle_) handle_.destroy();
        handle_ = {};
        rc_ = MPI_SUCCESS;
    }

    // co_await task: runs it; the awaiting task goes on with its result when it ends.
    bool await_ready() const noexcept { return !handle_; }
    std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiting) noexcept {
        handle_.promise().continuation = awaiting;
        return handle_;
    }
    int await_resume() const noexcept { return result(); }

  private:
    explicit Task(Handle handle) : handle_(handle) {}
    Handle handle_;
    int rc_ = MPI_SUCCESS;  // the result of a finished task without a coroutine
};

}  // namespace tucoll

// The coroutine forms of TUCOLL_MPI and TUCOLL_TRY (core/errors.h): co_return on failure.
#define TUCOLL_CO_MPI(call)                                                   \
    do {                                                                      \
        int tucoll_rc_ = (call);                                              \
        if (tucoll_rc_ != MPI_SUCCESS) co_return ::tucoll::mpi_fail(tucoll_rc_, #call); \
    } while (0)

#define TUCOLL_CO_TRY(expr)                                \
    do {                                                   \
        int tucoll_rc_ = (expr);                           \
        if (tucoll_rc_ != MPI_SUCCESS) co_return tucoll_rc_; \
    } while (0)
