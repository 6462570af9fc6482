// A persistent call of any collective on the common driver (core/driver.h): MPI-4's
// MPI_Allgather_init and its kin. The init is collective (checks agreed on by every rank, the
// algorithm selected once); each start is local and posts the schedule's first round, as a
// nonblocking call does. Alltoallv has a plan of its own (alltoallv/api.cpp: auto's decision and
// TuNA's M made once); a collective whose selection is the whole decision uses this one.
//
// As MPI says of persistent collectives, the buffers and the count and displacement arrays given
// to the init are the plan's until it is freed; what the call keeps beyond that (a scalar count,
// handles on derived datatypes, which the caller may free) is the collective's keep().
#pragma once

#include <memory>

#include "core/driver.h"
#include "core/request.h"

namespace tucoll {

template <class C>
struct PersistentCall final : tucoll_plan {
    explicit PersistentCall(Context &ctx) : op(ctx, /*deferred=*/true) {}
    ~PersistentCall() override {
        if (!orphaned) op.context().forget_request(this);
    }
    Operation &operation() override { return op; }
    bool persistent() const override { return true; }
    void completed() override {}
    int start() override {
        TUCOLL_TRY(prefix_error(engine::start_progress_thread_if_asked(), "tucoll_start"));
        Context &ctx = op.context();
        engine::progress();
        EngineLock lock;  // the progress thread may be advancing other operations of this context
        active = true;
        launch_call(ctx, op, C::registry(call.args).collective(),
                    [&](CallStats &stats) { return C::run(ctx, selection, call.args, call.prep, stats); });
        return MPI_SUCCESS;
    }
    // What keep() stores for the call and its handles on derived datatypes, as Pending has.
    Workspaces &storage() { return storage_; }
    OwnedTypes &types() { return types_; }

    StartedCall<C> call;
    Selection selection;

  private:
    Workspaces storage_;
    OwnedTypes types_;
    Operation op;
};

// `fn` names the init in errors ("tucoll_allgather_init"). A rejected argument on any rank fails
// the init on every rank, with *request = TUCOLL_REQUEST_NULL.
template <class C>
int drive_persistent(const char *fn, const char *spec, const typename C::Args &args, tucoll_plan **request) try {
    if (request == nullptr) return failf(MPI_ERR_ARG, "%s: request is NULL", fn);
    *request = nullptr;
    Context *ctx = nullptr;
    TUCOLL_TRY(prefix_error(Context::get(C::comm(args), &ctx), fn));
    engine::complete_all(*ctx);  // the init is collective: what was started before completes first
    auto plan = std::make_unique<PersistentCall<C>>(*ctx);
    TUCOLL_TRY(prefix_error(ctx->adopt_request(plan.get()), fn));
    const Selection *selection = nullptr;
    int rc = C::check(*ctx, args, &plan->call.prep);
    if (rc == MPI_SUCCESS) rc = prefix_error(ctx->select(C::registry(args), spec, &selection), fn);
    rc = agree_on_error(*ctx, rc, fn);
    if (rc == MPI_SUCCESS && global_checks_enabled()) {
        rc = agree_on_error(*ctx, prefix_error(C::check_consistency(*ctx, args, plan->call.prep), fn), fn);
    }
    if (rc != MPI_SUCCESS) return rc;
    plan->selection = *selection;
    plan->call.args = args;
    TUCOLL_TRY(prefix_error(C::keep(*ctx, &plan->call.args, *plan), fn));
    *request = plan.release();
    return MPI_SUCCESS;
} catch (...) {
    return fail_from_exception(fn);
}

}  // namespace tucoll
