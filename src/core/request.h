// What a tucoll_request_t points to: a persistent plan (started again and again) or a nonblocking
// call (freed by the wait or test that completes it). Either runs its schedule on an Operation
// (core/operation.h); the C functions tucoll_start, tucoll_test, tucoll_wait and
// tucoll_request_free (core/request.cpp) are the same for both, as MPI_Start/Test/Wait are.
#pragma once

#include <memory>

#include "core/datatype.h"
#include "core/operation.h"

namespace tucoll {
class Context;
}

struct tucoll_plan {
    virtual ~tucoll_plan() = default;

    // The operation the schedule runs on; its communicator's context.
    virtual tucoll::Operation &operation() = 0;
    // Persistent: starts the schedule (local). Nonblocking calls are started when made.
    virtual int start() = 0;
    virtual bool persistent() const = 0;
    // The request completed (its operation is done): a nonblocking call goes back to its
    // communicator's pool; a persistent one becomes inactive.
    virtual void completed() = 0;

    bool active = false;
    // A nonblocking call's communicator was freed while it was held (the free completed it, as
    // MPI_Comm_free lets it): the wait or test that reports it frees it, and its operation must not
    // reach the context again. (A persistent plan keeps its context: core/context.h.)
    bool orphaned = false;
};

namespace tucoll {

// A nonblocking call: an operation of its own and the call's arguments, kept by the context and
// reused (a steady state allocates nothing). `storage` holds the collective's copy of its
// arguments, one object per collective type; `types` its handles on derived datatypes, freed
// when it completes.
class Pending final : public tucoll_plan {
  public:
    explicit Pending(Context &ctx) : op_(ctx, /*deferred=*/true) {}
    Operation &operation() override { return op_; }
    int start() override;
    bool persistent() const override { return false; }
    void completed() override;
    Workspaces &storage() { return storage_; }
    OwnedTypes &types() { return types_; }

  private:
    Operation op_;
    Workspaces storage_;
    OwnedTypes types_;
};

}  // namespace tucoll
