// The pipeline every collective call goes through, written once:
//
//   the communicator's context          (created on first use: private duplicate, topology)
//   local argument checks               (this rank's arguments only)
//   selection                           (resolved once per communicator and spec, then cached)
//   [TUCOLL_CHECK=global]               every rank learns whether any rank's arguments were
//                                       rejected, and whether the ranks' counts agree
//   the call                            statistics reset, the traffic's error state cleared,
//                                       then the collective's own run (typed, or on a byte view)
//   the result                          every request completed; the first error of any step
//
// A collective supplies a traits type C with
//   using Args, Prepared;
//   static const char *function(const Args &);                     "tucoll_alltoallv"
//   static MPI_Comm comm(const Args &);
//   static const RegistryBase &registry(const Args &);
//   static int check(Context &, const Args &, Prepared *);           local, no communication
//   static int check_consistency(Context &, const Args &, const Prepared &);   collective
//   static Task run(Context &, const Selection &, const Args &, Prepared &, CallStats &);
//                                              the schedule (core/task.h); or an int for a
//                                              collective that is not a schedule (blocking only)
// and, for a collective with nonblocking or persistent calls, what such a call keeps of its
// arguments beyond the call (tucoll's own per-call arrays, its handles on derived datatypes), in
// the request's storage() and types() (core/request.h, core/persistent.h):
//   template <class Held> static int keep(Context &, Args *, Held &call);
// and, for the collectives a recording keeps (core/record.h),
//   static void recorded_row(Context &, const Args &, const Prepared &, std::vector<int64_t> *row,
//                            int64_t *type_size);   what this rank sends to each rank, in bytes
#pragma once

#include <cstring>
#include <type_traits>
#include <vector>

#include "core/context.h"
#include "core/errors.h"
#include "core/platform.h"
#include "core/record.h"
#include "core/task.h"
#include "core/validate.h"

namespace tucoll {

template <class C, class = void>
struct Recorded : std::false_type {};
template <class C>
struct Recorded<C, std::void_t<decltype(&C::recorded_row)>> : std::true_type {};

// Where a recorded call's row is built (per communicator: simulated ranks share threads).
struct RecordedRow {
    std::vector<int64_t> bytes;
};

// The call's row of the byte matrix, for the recorder (local).
template <class C>
void record_before(Context &ctx, const typename C::Args &args, const typename C::Prepared &prep,
                   const Selection &selection, record::Call *call) {
    if constexpr (Recorded<C>::value) {
        std::vector<int64_t> &row = ctx.workspace<RecordedRow>().bytes;
        int64_t type_size = 0;
        C::recorded_row(ctx, args, prep, &row, &type_size);
        const char *fn = C::function(args);
        const char *collective = std::strncmp(fn, "tucoll_", 7) == 0 ? fn + 7 : fn;
        record::before(ctx, collective, row, type_size, selection.spec.c_str(), call);
    }
}

// The checks and selection every call begins with (local, unless TUCOLL_CHECK=global).
template <class C>
int prepare(const char *fn, const char *spec, const typename C::Args &args, Context **ctx,
            typename C::Prepared *prep, const Selection **selection) {
    TUCOLL_TRY(prefix_error(Context::get(C::comm(args), ctx), fn));
    platform::charge_call();  // a simulated build's account of this dispatch (core/platform.h)
    engine::progress();  // any tucoll call advances what is outstanding
    int rc = C::check(**ctx, args, prep);
    if (rc == MPI_SUCCESS) rc = prefix_error((*ctx)->select(C::registry(args), spec, selection), fn);
    if ((*ctx)->global_checks()) {
        rc = agree_on_error(**ctx, rc, fn);
        if (rc == MPI_SUCCESS) {
            rc = agree_on_error(**ctx, prefix_error(C::check_consistency(**ctx, args, *prep), fn), fn);
        }
    }
    return rc;
}

// A blocking call: its schedule runs to its end on the communicator's own operation.
template <class C>
int drive(const char *spec, const typename C::Args &args) try {
    const char *fn = C::function(args);
    Context *ctx = nullptr;
    typename C::Prepared prep;
    const Selection *selection = nullptr;
    TUCOLL_TRY(prepare<C>(fn, spec, args, &ctx, &prep, &selection));
    // Outstanding operations on this communicator complete first: the blocking call's own MPI
    // collectives (reductions, the vendor's) could not advance them while they wait.
    engine::complete_all(*ctx);
    record::Call recorded;
    if (record::active()) {
        record::make_room(*ctx);  // every rank is here, and what it started has completed
        record_before<C>(*ctx, args, prep, *selection, &recorded);
    }
    Operation &op = ctx->blocking_operation();
    int rc = MPI_SUCCESS;
    {
        ActiveOperation active(op);
        CallStats &stats = ctx->begin_call(C::registry(args).collective());
        if constexpr (std::is_same_v<decltype(C::run(*ctx, *selection, args, prep, stats)), Task>) {
            Task task = C::run(*ctx, *selection, args, prep, stats);
            task.start();  // not deferred: it never suspends
            TUCOLL_ASSERT(task.done());
            rc = task.result();
        } else {
            rc = C::run(*ctx, *selection, args, prep, stats);
        }
        rc = prefix_error(ctx->requests().finish(rc), fn);
        ctx->publish_stats(stats);
        if (recorded.on) record::after(*ctx, recorded, stats, rc);
    }
    return rc;
} catch (...) {
    return fail_from_exception(C::function(args));
}

// A nonblocking call's own copy of its arguments and checked types (the arrays they point to
// stay the caller's, which MPI forbids changing before completion).
template <class C>
struct StartedCall {
    typename C::Args args;
    typename C::Prepared prep;
};

// Starts a call on the deferred operation `op`: its statistics reset for `collective` and its
// tags the next call's while `build(stats)` makes the schedule (which runs nothing yet), then
// the schedule runs until its first wait. The caller holds the EngineLock.
template <class Build>
void launch_call(Context &ctx, Operation &op, const char *collective, Build build) {
    Task task;
    {
        ActiveOperation active(op);
        task = build(ctx.begin_call(collective));
    }
    op.launch(std::move(task));
}

// A nonblocking call's start on `call` (a pooled request): its copy of the arguments, then the
// schedule on its operation.
template <class C>
int start_pending(Context &ctx, const Selection &selection, const typename C::Args &args,
                  typename C::Prepared &prep, Pending &call) {
    StartedCall<C> &started = call.storage().template get<StartedCall<C>>();
    started.args = args;
    started.prep = std::move(prep);
    TUCOLL_TRY(C::keep(ctx, &started.args, call));
    if (record::active()) record_before<C>(ctx, started.args, started.prep, selection, &call.operation().recorded());
    launch_call(ctx, call.operation(), C::registry(args).collective(), [&](CallStats &stats) {
        return C::run(ctx, selection, started.args, started.prep, stats);
    });
    return MPI_SUCCESS;
}

// A nonblocking call: the same checks and selection, then the schedule runs on an operation of
// its own until its first wait; *request completes it (core/request.h).
template <class C>
int drive_nonblocking(const char *spec, const typename C::Args &args, tucoll_plan **request) {
    const char *fn = C::function(args);
    Context *ctx = nullptr;
    typename C::Prepared prep;
    const Selection *selection = nullptr;
    Pending *call = nullptr;
    int rc = MPI_SUCCESS;
    try {
        TUCOLL_TRY(prefix_error(engine::start_progress_thread_if_asked(), fn));
        TUCOLL_TRY(prepare<C>(fn, spec, args, &ctx, &prep, &selection));
        EngineLock lock;  // the progress thread may be advancing other operations of this context
        call = ctx->acquire_pending();
        if (call == nullptr) return failf(MPI_ERR_NO_MEM, "%s: no memory for the request", fn);
        rc = prefix_error(start_pending<C>(*ctx, *selection, args, prep, *call), fn);
    } catch (...) {
        rc = fail_from_exception(fn);
    }
    if (rc != MPI_SUCCESS) {
        if (call != nullptr && !call->operation().running() && call->operation().done()) call->completed();
        return rc;
    }
    call->active = true;
    *request = call;
    return MPI_SUCCESS;
}

}  // namespace tucoll
