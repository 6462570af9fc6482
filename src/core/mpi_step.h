// The MPI library's own collective as one step of a schedule (the `vendor` algorithms). A
// blocking call runs its blocking form on the spot, with no coroutine; a nonblocking or
// persistent one starts its nonblocking form and awaits it as one of the operation's requests,
// progressed by the MPI itself.
#pragma once

#include <mpi.h>

#include <utility>

#include "core/context.h"
#include "core/task.h"

namespace tucoll {

namespace detail {
template <class Call, class Done>
Task mpi_step_deferred(Context &ctx, Call call, Done done) {
    MPI_Request req = MPI_REQUEST_NULL;
    TUCOLL_CO_TRY(call(&req));
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

}  // namespace tucoll
