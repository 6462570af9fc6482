// tucoll_alltoallv / tucoll_alltoallv_with: the collective's checks and byte view on the common
// driver (core/driver.h).
#include <algorithm>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "alltoallv/alltoallv.h"
#include "core/datatype.h"
#include "core/driver.h"
#include "core/errors.h"
#include "core/persistent.h"
#include "core/validate.h"
#include "ipc/backend.h"
#include "tucoll.h"

namespace tucoll::alltoallv {
// A call's checked datatypes and buffer kinds (named: persistent plans keep one).
struct Prepared {
    TypeInfo send_type;
    TypeInfo recv_type;
    bool in_place = false;
    bool device = false;  // GPU buffers (CUDA builds): only the algorithms that accept them run
};

namespace {

constexpr const char *kFn = "tucoll_alltoallv";

// The entry that runs on device buffers in place of `alg`: `auto` takes `ipc` (which copies
// within the node and stages what copies cannot serve: alltoallv/ipc.cpp); an algorithm that
// reads or copies the buffers on the host is refused.
int device_choice(Context &ctx, const Registry<Algorithm> &entries, const Algorithm &alg, const Prepared &prep,
                  const char *fn, const Selection **ipc) {
    if (!prep.send_type.contiguous || !prep.recv_type.contiguous) {
        return failf(MPI_ERR_TYPE, "%s: device buffers need contiguous datatypes (no packing on the GPU)", fn);
    }
    if (alg.meta) return ctx.select(entries, "ipc", ipc);  // resolved once per communicator, then kept
    const bool accepted =
        alg.name == "ipc" || alg.name == "staged" || (alg.typed && ipc::mpi_takes_device_buffers());
    if (!accepted) {
        return failf(MPI_ERR_BUFFER, "%s: %s cannot take device buffers: use ipc, staged, or vendor with a CUDA-aware MPI",
                     fn, alg.name.c_str());
    }
    return MPI_SUCCESS;
}

// The byte view of a call and the buffers behind it, reused from call to call.
struct ByteView {
    ScratchBuffer pack_send, pack_recv;  // packed forms of non-contiguous datatypes
    std::vector<int64_t> scounts, sdispls, rcounts, rdispls;
    std::optional<Call> call;  // what the algorithm runs on, as long as it runs
    Choice choice;             // what decide() gave for this call
};

// What TUCOLL_CHECK=global's check reuses (Context::call_scratch).
struct CheckScratch {
    std::vector<int64_t> sent, expected;
};

// One side of the byte view: used in place when the datatype is contiguous, else packed.
struct Side {
    char *base = nullptr;
    bool packed = false;
};

// The send side of an in-place call on device memory, copied out by the GPU (MPI_Pack would read
// device memory on the CPU); device datatypes are contiguous.
int copy_out_device(const void *buf, const int *counts, const int *displs, const TypeInfo &type, int p,
                    char *out, const int64_t *out_displs) {
    const char *base = static_cast<const char *>(buf) + type.true_lb;
    for (int i = 0; i < p; ++i) {
        TUCOLL_TRY(ipc::copy_between(out + out_displs[i], base + static_cast<int64_t>(displs[i]) * type.extent,
                                     static_cast<int64_t>(counts[i]) * type.size, /*device=*/true));
    }
    return ipc::finish_copies(/*device=*/true);
}

int byte_side(Context &ctx, void *buf, const int *counts, const int *displs, const TypeInfo &type, bool must_copy,
              ScratchBuffer &pack, std::vector<int64_t> &c, std::vector<int64_t> &d, Side *side) {
    const int p = ctx.size();
    c.resize(p);
    d.resize(p);
    side->packed = must_copy || !type.contiguous;
    if (!side->packed) {
        side->base = static_cast<char *>(buf) + type.true_lb;
        for (int i = 0; i < p; ++i) {
            c[i] = counts[i] * type.size;
            d[i] = displs[i] * type.extent;
        }
        return MPI_SUCCESS;
    }
    int64_t offset = 0;
    for (int i = 0; i < p; ++i) {
        c[i] = counts[i] * type.size;
        d[i] = offset;
        offset += c[i];
    }
    side->base = pack.get(static_cast<size_t>(offset));
    if (side->base == nullptr && offset > 0) {
        return failf(MPI_ERR_NO_MEM, "cannot allocate %lld bytes to pack a datatype", static_cast<long long>(offset));
    }
    ctx.stats().pack_bytes += offset;
    return MPI_SUCCESS;
}

// The algorithm's run on a receive side that is packed, then the unpacking (a schedule of its own,
// since the unpacking waits for the algorithm's traffic).
Task run_and_unpack(Context &ctx, const Algorithm &alg, const Selection &sel, const TypedArgs &a, const Prepared &prep,
                    const Call &call, CallStats &stats) {
    const int rc = co_await alg.run(ctx, call, sel.params, stats);
    // Whatever the algorithm met, its requests complete before the receive side is unpacked.
    ctx.requests().fault(rc);
    co_await ctx.requests().completion();
    if (!ctx.requests().failed()) {
        TUCOLL_CO_TRY(unpack_blocks(call.rbuf, call.rdispls, a.recvbuf, a.recvtype, prep.recv_type, ctx.size(),
                                    a.recvcounts, a.rdispls, ctx.comm()));
    }
    co_return MPI_SUCCESS;
}

// The byte view, then the algorithm on it. Not a coroutine: the view and its Call live in the
// operation's scratch, so that a call without packing costs no frame here.
Task run_bytes(Context &ctx, const Algorithm &alg, const Selection &sel, const TypedArgs &a, const Prepared &prep,
               int64_t known_max_block, CallStats &stats) {
    // With MPI_IN_PLACE the data to send lives in recvbuf, laid out by the receive arguments,
    // and is copied out first so that algorithms never read what they are overwriting.
    const void *sbuf = prep.in_place ? a.recvbuf : a.sendbuf;
    const int *scounts = prep.in_place ? a.recvcounts : a.sendcounts;
    const int *sdispls = prep.in_place ? a.rdispls : a.sdispls;
    MPI_Datatype stype = prep.in_place ? a.recvtype : a.sendtype;

    ByteView &view = ctx.workspace<ByteView>();
    Side send, recv;
    int rc = byte_side(ctx, const_cast<void *>(sbuf), scounts, sdispls, prep.send_type, prep.in_place, view.pack_send,
                       view.scounts, view.sdispls, &send);
    if (rc == MPI_SUCCESS) {
        rc = byte_side(ctx, a.recvbuf, a.recvcounts, a.rdispls, prep.recv_type, false, view.pack_recv, view.rcounts,
                       view.rdispls, &recv);
    }
    if (rc == MPI_SUCCESS && send.packed && prep.device) {
        rc = copy_out_device(sbuf, scounts, sdispls, prep.send_type, ctx.size(), send.base, view.sdispls.data());
    } else if (rc == MPI_SUCCESS && send.packed) {
        rc = pack_blocks(sbuf, stype, prep.send_type, ctx.size(), scounts, sdispls, send.base, view.sdispls.data(),
                         ctx.comm());
    }
    if (rc != MPI_SUCCESS) return Task::finished(rc);
    const char *path = prep.in_place ? "in-place" : send.packed && recv.packed ? "packed send+recv"
                                                  : send.packed               ? "packed send"
                                                  : recv.packed               ? "packed recv"
                                                                              : "direct";
    stats.add_path(path);
    const Call &call = view.call.emplace(Call{a, send.base, view.scounts.data(), view.sdispls.data(), recv.base,
                                              view.rcounts.data(), view.rdispls.data(), known_max_block,
                                              a.is_alltoall()});
    if (recv.packed) return run_and_unpack(ctx, alg, sel, a, prep, call, stats);
    return alg.run(ctx, call, sel.params, stats);
}

const int *copy_of(const int *in, int n, std::vector<int> &out) {
    if (in == nullptr) return nullptr;  // rejected by the checks, with the argument's name
    out.assign(in, in + n);
    return out.data();
}

struct Alltoallv {
    using Args = TypedArgs;
    using Prepared = alltoallv::Prepared;

    static const char *function(const Args &a) { return a.is_alltoall() ? "tucoll_alltoall" : kFn; }
    static MPI_Comm comm(const Args &a) { return a.comm; }
    static const Registry<Algorithm> &entries(const Args &a) {
        return a.is_alltoall() ? alltoallv::alltoall_registry() : alltoallv::registry();
    }
    static const RegistryBase &registry(const Args &a) { return entries(a); }

    static int check(Context &ctx, const Args &a, Prepared *prep) {
        const int p = ctx.size(), me = ctx.rank();
        const char *fn = function(a);  // tucoll_alltoall's errors are named so
        if (a.recvbuf == MPI_IN_PLACE) return failf(MPI_ERR_BUFFER, "%s: recvbuf cannot be MPI_IN_PLACE", fn);
        TUCOLL_TRY(check_counts(fn, "recvcounts", a.recvcounts, p));
        TUCOLL_TRY(check_displs(fn, "rdispls", a.rdispls));
        TUCOLL_TRY(prefix_error(TypeInfo::query(a.recvtype, &prep->recv_type), {fn, ": recvtype: "}));
        const int64_t recv_total = total_bytes(a.recvcounts, p, prep->recv_type.size);
        TUCOLL_TRY(check_buffer(fn, "recvbuf", a.recvbuf, recv_total, prep->recv_type));

        prep->in_place = a.sendbuf == MPI_IN_PLACE;
        prep->device = ipc::is_device_buffer(a.recvbuf) || (!prep->in_place && ipc::is_device_buffer(a.sendbuf));
        if (prep->in_place) {
            prep->send_type = prep->recv_type;
            return MPI_SUCCESS;
        }
        TUCOLL_TRY(check_counts(fn, "sendcounts", a.sendcounts, p));
        TUCOLL_TRY(check_displs(fn, "sdispls", a.sdispls));
        TUCOLL_TRY(prefix_error(TypeInfo::query(a.sendtype, &prep->send_type), {fn, ": sendtype: "}));
        const int64_t send_total = total_bytes(a.sendcounts, p, prep->send_type.size);
        TUCOLL_TRY(check_buffer(fn, "sendbuf", a.sendbuf, send_total, prep->send_type));

        const int64_t self_send = static_cast<int64_t>(a.sendcounts[me]) * prep->send_type.size;
        const int64_t self_recv = static_cast<int64_t>(a.recvcounts[me]) * prep->recv_type.size;
        if (self_send != self_recv) {
            return failf(MPI_ERR_TRUNCATE, "%s: rank %d sends %lld bytes to itself but expects %lld", fn, me,
                         static_cast<long long>(self_send), static_cast<long long>(self_recv));
        }
        // Both MPI_BOTTOM: datatypes of absolute addresses, which may name separate memory.
        if (a.sendbuf == a.recvbuf && a.sendbuf != MPI_BOTTOM && send_total > 0 && recv_total > 0) {
            return failf(MPI_ERR_BUFFER, "%s: sendbuf and recvbuf are the same buffer (use MPI_IN_PLACE)", fn);
        }
        return MPI_SUCCESS;
    }

    // A nonblocking call holds its own handles on derived datatypes (the caller may free theirs;
    // the unpacking runs at the end). An MPI_Alltoall's counts, displacements and block types
    // are the communicator's (alltoall/api.cpp), not the caller's, and change with its next call:
    // copied.
    struct KeptCounts {
        std::vector<int> scounts, sdispls, rcounts, rdispls;
    };
    template <class Held>  // Pending (a persistent alltoall(v) is a Plan: init below)
    static int keep(Context &ctx, Args *a, Held &call) {
        if (a->is_alltoall()) {
            KeptCounts &k = call.storage().template get<KeptCounts>();
            const int p = ctx.size();
            a->recvcounts = copy_of(a->recvcounts, p, k.rcounts);
            a->rdispls = copy_of(a->rdispls, p, k.rdispls);
            a->sendcounts = copy_of(a->sendcounts, p, k.scounts);
            a->sdispls = copy_of(a->sdispls, p, k.sdispls);
            TUCOLL_TRY(call.types().own(&a->alltoall->recvtype));
            if (a->alltoall->sendbuf != MPI_IN_PLACE) TUCOLL_TRY(call.types().own(&a->alltoall->sendtype));
        }
        TUCOLL_TRY(call.types().own(&a->recvtype));
        if (a->sendbuf != MPI_IN_PLACE) TUCOLL_TRY(call.types().own(&a->sendtype));
        return MPI_SUCCESS;
    }

    static int check_consistency(Context &ctx, const Args &a, const Prepared &prep) {
        CheckScratch &view = ctx.call_scratch<CheckScratch>();  // before the engine's lock
        const int *scounts = prep.in_place ? a.recvcounts : a.sendcounts;
        view.sent.resize(ctx.size());
        view.expected.resize(ctx.size());
        for (int i = 0; i < ctx.size(); ++i) {
            view.sent[i] = scounts[i] * prep.send_type.size;
            view.expected[i] = a.recvcounts[i] * prep.recv_type.size;
        }
        return check_pairwise_bytes(ctx, view.sent.data(), view.expected.data());
    }

    static void recorded_row(Context &ctx, const Args &a, const Prepared &prep, std::vector<int64_t> *row,
                             int64_t *type_size) {
        const int *counts = prep.in_place ? a.recvcounts : a.sendcounts;
        *type_size = prep.send_type.size;
        row->resize(ctx.size());
        for (int j = 0; j < ctx.size(); ++j) (*row)[j] = counts[j] * prep.send_type.size;
    }

    // What runs for this call: `selected`, or on device buffers what can take them, or auto's
    // choice (with M when auto reduced it, and its note for the statistics). A step of the
    // schedule: auto's reductions are awaited in a nonblocking call; the rest is decided on the
    // spot (a finished Task).
    static Task decide(Context &ctx, const Selection &selected, const Args &a, const Prepared &prep, Choice *out) {
        if (prep.device) {
            // Decided locally from the buffers, before auto's reduction: the ranks of a
            // correct program all pass device buffers or none.
            const Selection *ipc = nullptr;
            const int rc = device_choice(ctx, entries(a), entries(a)[selected.index], prep, function(a), &ipc);
            if (rc == MPI_SUCCESS) out->kept_selection = ipc != nullptr ? ipc : &selected;
            return Task::finished(rc);
        }
        if (const ChooseFn choose = entries(a)[selected.index].choose) return choose(ctx, a, prep.send_type.size, out);
        out->kept_selection = &selected;
        return Task::finished(MPI_SUCCESS);
    }
    // decide() where nothing is deferred (a persistent request's init): it never suspends.
    static int decide_now(Context &ctx, const Selection &selected, const Args &a, const Prepared &prep, Choice *out) {
        Task task = decide(ctx, selected, a, prep, out);
        task.start();
        TUCOLL_ASSERT(task.done());
        return task.result();
    }

    // Runs the decided entry, typed or on the byte view.
    // Not coroutines, down to the algorithm's own schedule: what they hand on lives in the
    // operation's scratch (ByteView), so that a blocking call pays for no frame of theirs.
    static Task execute(Context &ctx, const Selection &sel, const Args &a, Prepared &prep, int64_t known_max_block,
                        CallStats &stats) {
        const Algorithm &alg = entries(a)[sel.index];
        stats.algorithm = sel.spec;
        if (!alg.typed) return run_bytes(ctx, alg, sel, a, prep, known_max_block, stats);
        stats.add_path("typed");
        const Call &call = ctx.workspace<ByteView>().call.emplace(
            Call{a, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, known_max_block, a.is_alltoall()});
        return alg.run(ctx, call, sel.params, stats);
    }

    // execute() for what decide() gave, timed when it asks for it (auto's online tuning).
    // A nonblocking or persistent call is timed from its start to the progress call that finds
    // it complete: what the exchange costs where the caller's work does not hide it.
    static Task execute_timed(Context &ctx, const Choice &choice, const Args &a, Prepared &prep, CallStats &stats) {
        const double started = MPI_Wtime();
        const int rc = co_await execute(ctx, choice.selected(), a, prep, choice.known_max_block, stats);
        *choice.timing = MPI_Wtime() - started;
        co_return rc;
    }
    // Not a coroutine itself: the untimed case costs no frame of its own.
    static Task execute_choice(Context &ctx, const Choice &choice, const Args &a, Prepared &prep, CallStats &stats) {
        if (choice.timing != nullptr) return execute_timed(ctx, choice, a, prep, stats);
        return execute(ctx, choice.selected(), a, prep, choice.known_max_block, stats);
    }

    static Task run(Context &ctx, const Selection &selected, const Args &a, Prepared &prep, CallStats &stats) {
        Choice &choice = ctx.workspace<ByteView>().choice;
        choice.reset();
        Task decided = decide(ctx, selected, a, prep, &choice);
        if (!decided.done()) return run_decided(ctx, std::move(decided), choice, a, prep, stats);  // auto's
        if (decided.result() != MPI_SUCCESS) return Task::finished(decided.result());
        if (!choice.path().empty()) stats.path = choice.path();
        return execute_choice(ctx, choice, a, prep, stats);
    }
    // The rest of run() once the decision waits for its reduction (a nonblocking call's). What
    // it chooses starts its collectives (the vendor's, TuNA's M) once the reduction is in, which
    // is at different times on different ranks: the call holds its place in the communicator's
    // order of collectives until the choice has started (core/collective_order.h).
    static Task run_decided(Context &ctx, Task decided, Choice &choice, const Args &a, Prepared &prep,
                            CallStats &stats) {
        ctx.requests().hold_order();
        TUCOLL_CO_TRY(co_await std::move(decided));
        ctx.requests().release_order_at_next_wait();
        if (!choice.path().empty()) stats.path = choice.path();
        co_return co_await execute_choice(ctx, choice, a, prep, stats);
    }
};

// M, the largest block any rank sends, for an algorithm that uses it (TuNA's T): reduced once
// when the plan is made, so that no start reduces it again.
int plan_max_block(Context &ctx, const Algorithm &alg, const Selection &sel, const TypedArgs &a, const Prepared &prep,
                   int64_t *known_max_block) {
    if (*known_max_block >= 0 || !alg.uses_max_block || !alg.uses_max_block(sel.params, ctx.scope())) {
        return MPI_SUCCESS;
    }
    return reduce_max_block(ctx, largest_send_block(a, ctx.size(), prep.send_type.size), known_max_block);
}

}  // namespace

int run(const char *spec, const TypedArgs &a) { return drive<Alltoallv>(spec, a); }

int start_nonblocking(const char *spec, const TypedArgs &a, tucoll_plan **request) {
    return drive_nonblocking<Alltoallv>(spec, a, request);
}

namespace {

// A persistent alltoallv or alltoall (MPI-4 semantics: the same buffers and counts at every
// start): its own copy of the count and displacement arrays (an alltoall's are the
// communicator's, which its next call changes) and of derived datatypes, the algorithm chosen
// once (auto's decision included) and M where that algorithm uses it, so that a start
// communicates nothing but the exchange itself.
struct Plan final : PersistentPlan {
    using PersistentPlan::PersistentPlan;

    std::vector<int> scounts, sdispls, rcounts, rdispls;
    TypedArgs args{};
    Prepared prep;
    Selection selection;
    int64_t known_max_block = -1;
    std::string decided;  // auto's note, shown in the statistics' path of every start
    // auto was still exploring (online tuning) when the plan was made: every start asks it again,
    // as a plain call would, until it has settled.
    bool redecide = false;
    Selection meta;  // what the init asked for (auto, or a spec): asked again while auto explores
    OwnedTypes types;  // its handles on derived datatypes, freed with the plan

  private:
    const char *collective() const override { return Alltoallv::registry(args).collective(); }
    Task schedule(Context &ctx, CallStats &stats) override;
    void record(Context &ctx, record::Call *call) override {
        record_before<Alltoallv>(ctx, args, prep, meta, call);  // what the program asked for
    }
};

// One start's schedule: the plan's algorithm, or auto asked again while it explores. A free
// function: a coroutine's frame comes from its Context (core/task.h), the first parameter.
Task run_plan(Context &ctx, Plan &plan, CallStats &stats) {
    if (plan.redecide) {
        Choice choice;
        ctx.requests().hold_order();  // as run_decided's
        TUCOLL_CO_TRY(co_await Alltoallv::decide(ctx, plan.meta, plan.args, plan.prep, &choice));
        ctx.requests().release_order_at_next_wait();
        if (choice.probe != nullptr) {
            stats.path = "persistent";
            stats.add_path(choice.path());
            co_return co_await Alltoallv::execute_choice(ctx, choice, plan.args, plan.prep, stats);
        }
        // Settled: from now on the plan runs the choice with nothing to decide.
        plan.selection = choice.selected();
        plan.known_max_block = choice.known_max_block;
        plan.decided = choice.path();
        plan.redecide = false;
    }
    // First: tucoll_stats_t's path is short, and auto's note long.
    stats.path = "persistent";
    if (!plan.decided.empty()) stats.add_path(plan.decided);
    co_return co_await Alltoallv::execute(ctx, plan.selection, plan.args, plan.prep, plan.known_max_block, stats);
}

Task Plan::schedule(Context &ctx, CallStats &stats) { return run_plan(ctx, *this, stats); }

int init(const char *fn, const char *spec, const TypedArgs &in, std::unique_ptr<Plan> *out) {
    Context *ctx = nullptr;
    std::unique_ptr<Plan> plan;
    TUCOLL_TRY(new_plan(fn, in.comm, &ctx, &plan));
    const int p = ctx->size();
    plan->args = in;
    plan->args.recvcounts = copy_of(in.recvcounts, p, plan->rcounts);
    plan->args.rdispls = copy_of(in.rdispls, p, plan->rdispls);
    if (in.sendbuf != MPI_IN_PLACE) {
        plan->args.sendcounts = copy_of(in.sendcounts, p, plan->scounts);
        plan->args.sdispls = copy_of(in.sdispls, p, plan->sdispls);
    }
    const Selection *selected = nullptr;
    TUCOLL_TRY(checked_init<Alltoallv>(fn, *ctx, spec, plan->args, &plan->prep, &selected));
    // The caller may free derived datatypes after the init (MPI allows it).
    TUCOLL_TRY(prefix_error(plan->types.own(&plan->args.recvtype), fn));
    if (!plan->prep.in_place) TUCOLL_TRY(prefix_error(plan->types.own(&plan->args.sendtype), fn));
    if (plan->args.is_alltoall()) {
        TUCOLL_TRY(prefix_error(plan->types.own(&plan->args.alltoall->recvtype), fn));
        if (!plan->prep.in_place) TUCOLL_TRY(prefix_error(plan->types.own(&plan->args.alltoall->sendtype), fn));
    }
    Choice choice;
    plan->meta = *selected;
    TUCOLL_TRY(prefix_error(Alltoallv::decide_now(*ctx, *selected, plan->args, plan->prep, &choice), fn));
    if (choice.probe != nullptr) {
        // auto is exploring: the plan takes no candidate for good (nor its slot, unrun).
        choice.probe->cancel();
        plan->redecide = true;
    } else {
        plan->selection = choice.selected();
        plan->known_max_block = choice.known_max_block;
        plan->decided = choice.path();
        TUCOLL_TRY(plan_max_block(*ctx, Alltoallv::entries(plan->args)[plan->selection.index], plan->selection,
                                  plan->args, plan->prep, &plan->known_max_block));
    }
    *out = std::move(plan);
    return MPI_SUCCESS;
}

}  // namespace

int init_persistent(const char *spec, const TypedArgs &a, tucoll_plan **request) try {
    const char *fn = a.is_alltoall() ? "tucoll_alltoall_init" : "tucoll_alltoallv_init";
    if (request == nullptr) return failf(MPI_ERR_ARG, "%s: request is NULL", fn);
    *request = TUCOLL_REQUEST_NULL;
    std::unique_ptr<Plan> plan;
    TUCOLL_TRY(init(fn, spec, a, &plan));
    *request = plan.release();
    return MPI_SUCCESS;
} catch (...) {
    return fail_from_exception(a.is_alltoall() ? "tucoll_alltoall_init" : "tucoll_alltoallv_init");
}

}  // namespace tucoll::alltoallv

extern "C" int tucoll_alltoallv_init_with(const char *spec, const void *sendbuf, const int sendcounts[],
                                          const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                          const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                                          MPI_Comm comm, MPI_Info, tucoll_request_t *request) {
    const tucoll::alltoallv::TypedArgs args{sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                            recvcounts, rdispls, recvtype, comm};
    return tucoll::alltoallv::init_persistent(spec, args, request);
}

extern "C" int tucoll_alltoallv_init(const void *sendbuf, const int sendcounts[], const int sdispls[],
                                     MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                                     const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                     tucoll_request_t *request) {
    return tucoll_alltoallv_init_with(nullptr, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                                      recvtype, comm, info, request);
}

extern "C" int tucoll_ialltoallv_with(const char *spec, const void *sendbuf, const int sendcounts[],
                                      const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                      const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                                      MPI_Comm comm, tucoll_request_t *request) {
    if (request == nullptr) return tucoll::fail(MPI_ERR_ARG, "tucoll_ialltoallv: request is NULL");
    *request = TUCOLL_REQUEST_NULL;
    const tucoll::alltoallv::TypedArgs args{sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                            recvcounts, rdispls, recvtype, comm};
    return tucoll::alltoallv::start_nonblocking(spec, args, request);
}

extern "C" int tucoll_ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                                 MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[],
                                 MPI_Datatype recvtype, MPI_Comm comm, tucoll_request_t *request) {
    return tucoll_ialltoallv_with(nullptr, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                                  recvtype, comm, request);
}

extern "C" int tucoll_alltoallv_with(const char *spec, const void *sendbuf, const int sendcounts[],
                                     const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                     const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                                     MPI_Comm comm) {
    const tucoll::alltoallv::TypedArgs args{sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                            recvcounts, rdispls, recvtype, comm};
    return tucoll::alltoallv::run(spec, args);
}

extern "C" int tucoll_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                                MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                                const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
    return tucoll_alltoallv_with(nullptr, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                                 recvtype, comm);
}
