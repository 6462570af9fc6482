// A collective in flight, and the engine that advances the ones not yet complete.
//
// Every call runs as an Operation: its traffic (with the tags of its own call number, so
// operations outstanding at once on a communicator never match each other's messages), the
// scratch its algorithm reuses, its statistics, and its schedule (core/task.h). A blocking call
// runs on its communicator's own operation and completes before it returns. A nonblocking call
// takes an operation from its communicator's pool and a persistent plan owns one, so that in a
// steady state neither allocates; they stay registered with the engine until complete.
//
// Progress. An outstanding operation advances (its next round is posted as soon as the last one
// completed) whenever tucoll runs on its rank: in tucoll_test and tucoll_wait, at the start of
// every tucoll call, and while any tucoll operation waits for its messages — a wait with others
// outstanding polls them all, so that two ranks waiting on different operations never wait on
// each other. Between tucoll calls nothing advances (the MPI's own nonblocking collectives, which
// the vendor algorithms start, advance as the MPI advances them) unless TUCOLL_PROGRESS=thread
// starts a progress thread (MPI_THREAD_MULTIPLE), which advances them every few tens of µs.
// An operation whose MPI collective comes after an earlier step starts it only on its turn in
// the communicator's order of collectives (core/collective_order.h).
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <typeinfo>
#include <vector>

#include "core/p2p.h"
#include "core/record.h"
#include "core/stats.h"
#include "core/task.h"

namespace tucoll {

class Context;

// Objects of any type, one per type, default-constructed on first use. An operation holds a
// handful, looked up on every call: a short list beats a hash map here.
class Workspaces {
  public:
    template <class W>
    W &get() {
        for (const Item &item : items_) {
            if (*item.type == typeid(W)) return *static_cast<W *>(item.object.get());
        }
        items_.push_back({&typeid(W), std::make_shared<W>()});
        return *static_cast<W *>(items_.back().object.get());
    }
    void clear() { items_.clear(); }

  private:
    struct Item {
        const std::type_info *type;
        std::shared_ptr<void> object;
    };
    std::vector<Item> items_;
};

class Operation {
  public:
    // `deferred`: the schedule runs a round at a time (a nonblocking or persistent operation:
    // its waits suspend); else it runs to its end wherever it is started (a blocking call's).
    // Fixed at construction, so that a schedule is built knowing how it will run (the vendor
    // algorithms call the MPI's nonblocking collective only when deferred).
    Operation(Context &ctx, bool deferred);
    Operation(const Operation &) = delete;
    Operation &operator=(const Operation &) = delete;
    ~Operation();

    Context &context() const { return ctx_; }
    Requests &requests() { return requests_; }
    Workspaces &scratch() { return scratch_; }
    CallStats &stats() { return stats_; }
    // The call this operation runs as the recorder saw it at its start (TUCOLL_RECORD), timed at
    // its completion.
    record::Call &recorded() { return recorded_; }

    // Starts `task` as this (deferred) operation's schedule and runs it to its first wait;
    // registers the operation with the engine until it completes.
    void launch(Task task);
    // True once the schedule has ended and its traffic is complete; `result()` is then the
    // call's MPI error code (its message restored as this thread's by `complete`).
    bool done() const;
    // The completed call's MPI error code, its message restored as this thread's.
    int result() const;
    // Advances the schedule as far as it goes without blocking; true when it is complete.
    bool test();
    // Blocks until the schedule is complete (advancing every other outstanding operation
    // meanwhile) and returns its result.
    int wait();
    bool running() const { return running_; }

  private:
    friend class ActiveOperation;
    friend struct Engine;
    void advance(bool block);
    void conclude();

    Context &ctx_;
    Requests requests_;
    Workspaces scratch_;
    CallStats stats_;
    record::Call recorded_;
    Task task_;
    int result_ = MPI_SUCCESS;
    std::string message_;
    bool outstanding_ = false;
    bool running_ = false;  // its schedule is on the stack: the engine must not resume it
};

// Makes `op` the operation its context's algorithms post to (Context::requests, workspace,
// stats) for the guard's lifetime.
class ActiveOperation {
  public:
    explicit ActiveOperation(Operation &op);
    ~ActiveOperation();
    ActiveOperation(const ActiveOperation &) = delete;
    ActiveOperation &operator=(const ActiveOperation &) = delete;

  private:
    Operation &op_;
    Operation *previous_;
    bool was_running_;
    bool counted_;  // outstanding and not yet on the stack: counted in the engine's on_stack
};

// Held by whatever advances operations or reads the engine's list, from the start of the
// progress thread on or, under MPI_THREAD_MULTIPLE, from a context's first use (note_thread_level);
// nothing otherwise. Recursive: a schedule may wait.
class EngineLock {
  public:
    EngineLock();
    ~EngineLock();
    EngineLock(const EngineLock &) = delete;
    EngineLock &operator=(const EngineLock &) = delete;
    bool held() const { return held_; }

  private:
    bool held_;
};

namespace engine {
// How many operations are outstanding on this rank (a blocking call reads it: nothing else
// happens while it is 0).
extern std::atomic<int> outstanding_count;
// True when no operation is outstanding apart from those running on the stack.
bool idle_slow();
inline bool idle() { return outstanding_count.load(std::memory_order_relaxed) == 0 || idle_slow(); }
// tucoll_progress: advances every outstanding operation once (progress()) and returns how many
// remain outstanding; inside a running nonblocking schedule (tucoll's own MPI calls come back
// through the interposer's waits and tests) it does nothing and returns 0, since the waits of
// tucoll's schedules already advance the rest, and progress never nests from there.
int progress_from_outside();
// Advances every outstanding operation not on the stack, in start order, without blocking.
void progress_slow();
inline void progress() {
    if (outstanding_count.load(std::memory_order_relaxed) != 0) progress_slow();
}
// Completes the outstanding operations on `ctx`, oldest first (before a blocking collective on
// the same communicator, whose internal MPI collectives could not advance them); from within a
// running operation of `ctx`, those started before it.
void complete_all_slow(Context &ctx);
inline void complete_all(Context &ctx) {
    if (outstanding_count.load(std::memory_order_relaxed) != 0) complete_all_slow(ctx);
}
// TUCOLL_PROGRESS=thread: starts the progress thread once, where MPI provides
// MPI_THREAD_MULTIPLE (else says why, once); MPI_ERR_ARG for a value other than thread or none.
// Called before a nonblocking or persistent start.
int start_progress_thread_if_asked();
// Stops it (MPI_Finalize, before the contexts go).
void stop_progress_thread();
// Under MPI_THREAD_MULTIPLE the engine locks from now on, progress thread or not (a context's
// first use calls it, before any of its operations exist).
void note_thread_level();
}  // namespace engine

}  // namespace tucoll
