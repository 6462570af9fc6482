// An MPI collective as one step of a schedule (the `vendor` algorithms, auto's and TuNA's
// reductions). A blocking call runs its blocking form on the spot, with no coroutine; a
// nonblocking or persistent one starts its nonblocking form on its turn in the communicator's
// order of collectives (core/collective_order.h) and awaits it as one of the operation's
// requests, progressed by the MPI itself.
#pragma once

#include <mpi.h>

#include <utility>

#include "core/context.h"
#include "core/errors.h"
#include "core/task.h"

namespace tucoll {

namespace detail {
template <class Call, class Done>
Task mpi_step_deferred(Context &ctx, Call call, Done done) {
    MPI_Request req = MPI_REQUEST_NULL;
    const bool took_place = co_await ctx.requests().collective_turn();
    const int rc = call(&req);
    if (took_place) ctx.requests().release_order();
    TUCOLL_CO_TRY(rc);
    ctx.requests().adopt(req);
    co_await ctx.requests().completion();
    done();
    co_return MPI_SUCCESS;
}
}  // namespace detail

// `call(MPI_Request *req)` calls the MPI: its blocking form when req is null, else its
// nonblocking form into *req; it returns a tucoll error (mpi_fail, naming the function).
// `done()` runs once the collective has completed (statistics, what the MPI unpacked).
template <class Call, class Done>
Task mpi_step(Context &ctx, Call call, Done done) {
    if (ctx.requests().deferred()) return detail::mpi_step_deferred(ctx, std::move(call), std::move(done));
    const int rc = call(nullptr);
    if (rc != MPI_SUCCESS) return Task::finished(rc);
    done();
    return Task::finished(MPI_SUCCESS);
}

// MPI_Allreduce on the context's private communicator, on the spot: after what is outstanding
// on it, which the blocking reduction could not advance.
inline int allreduce_now(Context &ctx, const void *in, void *out, int count, MPI_Datatype type, MPI_Op op) {
    ctx.quiesce();
    const int rc = MPI_Allreduce(in, out, count, type, op, ctx.comm());
    return rc == MPI_SUCCESS ? rc : mpi_fail(rc, "MPI_Allreduce");
}

// MPI_Allreduce as such a step: on the spot (allreduce_now) in a blocking call, or where
// `blocking` asks for it in any; else started and awaited. `in` and `out` must live until the
// step ends (the awaiting coroutine's frame).
inline Task allreduce_step(Context &ctx, const void *in, void *out, int count, MPI_Datatype type, MPI_Op op,
                           bool blocking = false) {
    if (blocking) return Task::finished(allreduce_now(ctx, in, out, count, type, op));
    return mpi_step(ctx, [&ctx, in, out, count, type, op](MPI_Request *req) {
        if (req == nullptr) return allreduce_now(ctx, in, out, count, type, op);
        const int rc = MPI_Iallreduce(in, out, count, type, op, ctx.comm(), req);
        return rc == MPI_SUCCESS ? rc : mpi_fail(rc, "MPI_Iallreduce");
    }, [] {});
}

}  // namespace tucoll
