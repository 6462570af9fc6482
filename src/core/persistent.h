// Persistent calls on the common driver (core/driver.h): MPI-4's MPI_Alltoallv_init and its kin.
// The init is collective (checks agreed on by every rank, the algorithm selected once); each
// start is local and posts the schedule's first round, as a nonblocking call does. PersistentPlan
// is what every plan shares; PersistentCall serves a collective whose selection is the whole
// decision, and alltoallv's Plan (alltoallv/api.cpp) also makes auto's decision and TuNA's M once.
//
// As MPI says of persistent collectives, the buffers and the count and displacement arrays given
// to the init are the plan's until it is freed; what the call keeps beyond that (a scalar count,
// handles on derived datatypes, which the caller may free) is the collective's keep().
#pragma once

#include <memory>
#include <optional>

#include "core/driver.h"
#include "core/request.h"

namespace tucoll {

// What every persistent plan is: an operation of its own (traffic, scratch) that each start runs
// one schedule on, known to its context until it is freed (the context outlives the program's
// communicator while a plan holds it: core/context.h). Local, as MPI_Start: a start posts the
// schedule's first round and returns; tucoll_test, tucoll_wait and every other tucoll call on this
// rank advance it.
struct PersistentPlan : tucoll_plan {
    explicit PersistentPlan(Context &ctx) { op_.emplace(ctx, /*deferred=*/true); }
    ~PersistentPlan() override {
        Context &ctx = op_->context();
        op_.reset();  // first: the context may end with its last plan
        ctx.forget_request(this);
    }
    Operation &operation() final { return *op_; }
    bool persistent() const final { return true; }
    void completed() final {}
    int start() final {
        TUCOLL_TRY(prefix_error(engine::start_progress_thread_if_asked(), "tucoll_start"));
        Context &ctx = op_->context();
        engine::progress();
        EngineLock lock;  // the progress thread may be advancing other operations of this context
        active = true;
        if (record::active()) record(ctx, &op_->recorded());
        launch_call(ctx, *op_, collective(), [&](CallStats &stats) { return schedule(ctx, stats); });
        return MPI_SUCCESS;
    }

  protected:
    virtual const char *collective() const = 0;                  // the statistics' name
    virtual Task schedule(Context &ctx, CallStats &stats) = 0;  // one start's (runs nothing yet)
    virtual void record(Context &ctx, record::Call *call) = 0;   // one start, for TUCOLL_RECORD

  private:
    std::optional<Operation> op_;
};

// The first steps of every init: the communicator's context, what was started on it before
// completed (the init is collective), and a plan the context knows of (and lives as long as).
template <class P>
int new_plan(const char *fn, MPI_Comm comm, Context **ctx, std::unique_ptr<P> *plan) {
    TUCOLL_TRY(prefix_error(Context::get(comm, ctx), fn));
    engine::complete_all(**ctx);
    *plan = std::make_unique<P>(**ctx);
    return prefix_error((*ctx)->adopt_request(plan->get()), fn);
}

// An init's checks and selection, agreed on by every rank: no rank goes on to start a plan that
// another's arguments made fail.
template <class C>
int checked_init(const char *fn, Context &ctx, const char *spec, const typename C::Args &args,
                 typename C::Prepared *prep, const Selection **selection) {
    int rc = C::check(ctx, args, prep);
    if (rc == MPI_SUCCESS) rc = prefix_error(ctx.select(C::registry(args), spec, selection), fn);
    rc = agree_on_error(ctx, rc, fn);
    if (rc == MPI_SUCCESS && ctx.global_checks()) {
        rc = agree_on_error(ctx, prefix_error(C::check_consistency(ctx, args, *prep), fn), fn);
    }
    return rc;
}

// A persistent call whose selection is the whole decision.
template <class C>
struct PersistentCall final : PersistentPlan {
    using PersistentPlan::PersistentPlan;
    // What keep() stores for the call and its handles on derived datatypes, as Pending has.
    Workspaces &storage() { return storage_; }
    OwnedTypes &types() { return types_; }

    StartedCall<C> call;
    Selection selection;

  private:
    const char *collective() const override { return C::registry(call.args).collective(); }
    Task schedule(Context &ctx, CallStats &stats) override {
        return C::run(ctx, selection, call.args, call.prep, stats);
    }
    void record(Context &ctx, record::Call *recorded) override {
        record_before<C>(ctx, call.args, call.prep, selection, recorded);
    }

    Workspaces storage_;
    OwnedTypes types_;
};

// `fn` names the init in errors ("tucoll_allgather_init"). A rejected argument on any rank fails
// the init on every rank, with *request = TUCOLL_REQUEST_NULL.
template <class C>
int drive_persistent(const char *fn, const char *spec, const typename C::Args &args, tucoll_plan **request) try {
    if (request == nullptr) return failf(MPI_ERR_ARG, "%s: request is NULL", fn);
    *request = nullptr;
    Context *ctx = nullptr;
    std::unique_ptr<PersistentCall<C>> plan;
    TUCOLL_TRY(new_plan(fn, C::comm(args), &ctx, &plan));
    const Selection *selection = nullptr;
    TUCOLL_TRY(checked_init<C>(fn, *ctx, spec, args, &plan->call.prep, &selection));
    plan->selection = *selection;
    plan->call.args = args;
    TUCOLL_TRY(prefix_error(C::keep(*ctx, &plan->call.args, *plan), fn));
    *request = plan.release();
    return MPI_SUCCESS;
} catch (...) {
    return fail_from_exception(fn);
}

}  // namespace tucoll
