// auto: the tuned alltoallv (seed 003). The tuning table maps (P, ranks per node, the table's
// block-size features) to a spec string; auto communicates only as much as that lookup needs:
// - the first call on a communicator checks, in one allreduce, that every rank read the same
//   table, and keeps the entry for (P, Q). It takes the entry from the table it read at its
//   start, before that check completes: a nonblocking call started meanwhile (the check is a
//   step of the first call's schedule) must decide as the other ranks do, whatever has completed
//   where. Should the check fail, the first call fails on every rank, and so does every call that
//   starts once this rank knows it;
// - an entry that names one spec whatever the features, and a call whose features every rank
//   knows alone (MPI_Alltoall's uniform counts), are decided with no communication at all;
// - otherwise one allreduce gives every rank the same summary: MPI_MAX on doubles (built in,
//   so the MPI's optimised allreduce runs) when the features need no sum, else one reduction of
//   max, max and sum. Its largest block is TuNA's M, handed on so TuNA does not reduce it again.
// A lookup is a scan of a few rules: microseconds, no model evaluation. Online tuning (no table
// entry near this shape) agrees on each call's size class, except once the predicted class has
// settled on an algorithm that needs no M: then classes are agreed later, a window at a time
// (LateClasses, auto_online.h).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <unordered_map>
#include <vector>

#include "alltoallv/alltoallv.h"
#include "alltoallv/auto_online.h"
#include "core/errors.h"
#include "core/mpi_step.h"
#include "core/tuning.h"

namespace tucoll::alltoallv {
namespace {

// The summary's fields, reduced in one call: max, max, sum, then the table fingerprint as max
// and as max of its negation (they agree iff every rank read the same table), the largest
// "could not load it" flag, and TUCOLL_AUTO's mode the same way as the fingerprint.
enum Field { kMaxBlock, kBusiest, kTotal, kPrint, kNegPrint, kProblem, kMode, kNegMode, kFields };

// One element of a contiguous type of kFields doubles: MPI may hand a user-defined operation any
// whole number of elements, and with MPI_DOUBLE a segmenting allreduce could split a record.
void combine(void *in, void *inout, int *len, MPI_Datatype *) {
    const double *a = static_cast<const double *>(in);
    double *b = static_cast<double *>(inout);
    for (int64_t i = 0; i < static_cast<int64_t>(*len) * kFields; i += kFields) {
        for (int f = 0; f < kFields; ++f) b[i + f] = f == kTotal ? b[i + f] + a[i + f] : std::max(b[i + f], a[i + f]);
    }
}

// The reduction's operator and record type, created once per communicator and freed with its
// context.
struct SummaryOp {
    MPI_Op op = MPI_OP_NULL;
    MPI_Datatype record = MPI_DATATYPE_NULL;
    ~SummaryOp() {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (finalized) return;
        if (op != MPI_OP_NULL) MPI_Op_free(&op);
        if (record != MPI_DATATYPE_NULL) MPI_Type_free(&record);
    }
};

// What the first call on a communicator agreed on: the table every rank read and its entry.
struct AutoState {
    bool agreed = false;        // the first call has started: the entry below is this rank's table's
    std::string disagreement;   // the first call's check failed (every rank read it from the same values)
    std::shared_ptr<const TuningTable> table;  // null: none
    const TuningTable::Entry *entry = nullptr;   // null: no table, or one without entries
    const std::string *only_spec = nullptr;      // the entry's spec when it names one for every value
    bool max_only = false;                       // every feature reduces with MPI_MAX
    // The entry's one spec, resolved once (from the second call on: the first reports its
    // agreement in the note).
    Choice kept;
    bool kept_ready = false;
    // Each spec of the entry resolved once, keyed by the table's own string: the table lives as
    // long as this state.
    struct Resolved {
        Selection selection;
        bool fallback;
    };
    std::unordered_map<const std::string *, Resolved> resolved;
    // Online tuning (TUCOLL_AUTO=online, or no table entry near this shape): the table is not used.
    bool online = false;
    OnlineTuner tuner;
    LateClasses late;
};

// An entry further than this (TuningTable::distance: a factor of 4 in P or Q, or 2 in both) is
// no guide: tune online.
constexpr double kNearEntry = 2.0;

Task reduce_summary(Context &ctx, const double local[kFields], double global[kFields], bool blocking = false) {
    SummaryOp &s = ctx.state<SummaryOp>();
    if (s.record == MPI_DATATYPE_NULL) {
        MPI_Datatype record;
        if (const int rc = MPI_Type_contiguous(kFields, MPI_DOUBLE, &record); rc != MPI_SUCCESS) {
            return Task::finished(mpi_fail(rc, "MPI_Type_contiguous"));
        }
        if (const int rc = MPI_Type_commit(&record); rc != MPI_SUCCESS) return Task::finished(mpi_fail(rc, "MPI_Type_commit"));
        s.record = record;
    }
    if (s.op == MPI_OP_NULL) {
        if (const int rc = MPI_Op_create(combine, /*commute=*/1, &s.op); rc != MPI_SUCCESS) {
            return Task::finished(mpi_fail(rc, "MPI_Op_create"));
        }
    }
    // Online tuning reduces on the spot even in a nonblocking call: its state moves with each
    // reduction's result and must move in call order on every rank.
    return allreduce_step(ctx, local, global, 1, s.record, s.op, blocking);
}

// The first call: what this rank read (the table's fingerprint, TUCOLL_AUTO's mode, a problem)
// goes into its summary, which one allreduce then checks (check_agreement); its entry is taken
// at once (settle_locally).
AutoMode offer_table(AutoState &state, double local[kFields], std::string *problem) {
    AutoMode mode = AutoMode::kDefault;
    if (const int rc = auto_mode(&mode); rc != MPI_SUCCESS) *problem = last_message(rc);
    if (mode != AutoMode::kOnline && problem->empty()) load_tuning_table("alltoallv", &state.table, problem);
    local[kPrint] = state.table ? state.table->fingerprint() : 0;
    local[kNegPrint] = -local[kPrint];
    local[kProblem] = problem->empty() ? 0 : 1;
    local[kMode] = static_cast<double>(mode);
    local[kNegMode] = -local[kMode];
    return mode;
}

// The first call, at its start: the entry of the table this rank read, which every rank's is
// (check_agreement says so once the reduction completes).
void settle_locally(Context &ctx, AutoState &state, AutoMode mode) {
    if (state.table) {
        state.entry = state.table->entry_for(ctx.size(), ctx.topology().max_local_size);
        if (state.entry != nullptr) state.only_spec = TuningTable::only_spec(*state.entry);
        state.max_only = std::all_of(state.table->features().begin(), state.table->features().end(), reduces_with_max);
    }
    state.online = mode == AutoMode::kOnline ||
                   (mode == AutoMode::kDefault &&
                    (state.entry == nullptr ||
                     TuningTable::distance(*state.entry, ctx.size(), ctx.topology().max_local_size) > kNearEntry));
    if (state.online) state.max_only = true;  // the size class needs the largest block only
    state.agreed = true;
}

// The first call's reduction: did every rank read the same table and mode? The same answer on
// every rank (the same reduced values); a failure stays, for the calls that start from now on.
int check_agreement(AutoState &state, const std::string &problem, const double global[kFields]) {
    if (global[kProblem] > 0) {
        state.disagreement = "auto: " + (problem.empty() ? std::string("another rank could not use its tuning table")
                                                         : problem);
    } else if (global[kMode] != -global[kNegMode]) {
        state.disagreement = "auto: the ranks have different TUCOLL_AUTO settings; every rank must have the same";
    } else if (global[kPrint] != -global[kNegPrint]) {
        state.disagreement = "auto: the ranks read different tuning tables (TUCOLL_TUNING_FILE or the installed "
                             "table differs between nodes); every rank must see the same one";
    }
    return state.disagreement.empty() ? MPI_SUCCESS : fail(MPI_ERR_OTHER, state.disagreement);
}

std::string basename(const std::string &path) {
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The table's spec when it is valid at this scope (and not `auto` again), else the table's
// fallback, else the vendor's.
void resolve_choice(const Scope &scope, const std::string &spec, const std::string &fallback, Choice *out,
                    std::string *used) {
    for (const std::string &candidate : {spec, fallback, std::string("vendor")}) {
        Selection sel;
        if (resolve_spec(registry(), candidate.c_str(), scope, &sel) == MPI_SUCCESS && !registry()[sel.index].choose) {
            out->selection = std::move(sel);
            *used = candidate;
            return;
        }
    }
}

bool needs_max_block(const Selection &sel, const Scope &scope) {
    const Algorithm &alg = registry()[sel.index];
    return alg.uses_max_block && alg.uses_max_block(sel.params, scope);
}

// An online MPI_Alltoallv call after the first: the predicted class's choice with no blocking
// reduction where LateClasses allows it, else the class agreed at once (and explored if new).
int choose_online(Context &ctx, const TypedArgs &a, int64_t type_size, AutoState &state, const Scope &scope,
                  Choice *out) {
    const double local_max = static_cast<double>(largest_send_block(a, ctx.size(), type_size));
    const int predicted = state.late.predict();
    const Selection *settled = predicted >= 0 ? state.tuner.settled(predicted) : nullptr;
    if (settled != nullptr && !needs_max_block(*settled, scope)) {
        // Its reduction of a window starts on the spot: after the collectives of the calls
        // started earlier (core/collective_order.h), which then complete first, as online
        // tuning's blocking reductions do.
        if (!ctx.requests().my_turn()) ctx.quiesce();
        TUCOLL_TRY(state.late.record_predicted(ctx.comm(), predicted, local_max));
        state.tuner.choose_predicted(predicted, out);
        return MPI_SUCCESS;
    }
    double global_max = 0;
    ctx.quiesce();
    TUCOLL_TRY(state.late.agree_now(ctx.comm(), local_max, &global_max));
    out->known_max_block = static_cast<int64_t>(global_max);
    return state.tuner.choose(ctx, global_max, /*uniform=*/false, out);
}

// One decision: the call, the communicator's state, and its summary — local, then reduced where
// a chooser needs it (the first call always: it agrees on the table). It lives in choose()'s
// frame, so that a nonblocking call's reduction has its buffers until it completes.
struct Decision {
    Context &ctx;
    const TypedArgs &a;
    int64_t type_size;
    AutoState &state;
    Scope scope;
    bool first;
    double local[kFields] = {};
    double global[kFields] = {};
    double max_in[2] = {}, max_out[2] = {};
    bool max_reduced = false, communicated = false;
    std::string problem = {};  // what this rank could not read (the first call)

    // First calls report their agreement in the note; later ones say that they reduced nothing.
    const char *reduction_note() const { return first ? "" : ", no reduction"; }
};

// This call's summary on every rank, with as little communication as the entry needs: the
// reduction as a step of the schedule (allreduce_step), whose result finish_summary reads.
Task summarize(Context &ctx, Decision &d) {
    const int p = ctx.size();
    const int *counts = d.a.sendbuf == MPI_IN_PLACE ? d.a.recvcounts : d.a.sendcounts;
    std::fill(d.local, d.local + kFields, 0.0);
    for (int i = 0; i < p; ++i) {
        const double bytes = static_cast<double>(counts[i]) * static_cast<double>(d.type_size);
        d.local[kMaxBlock] = std::max(d.local[kMaxBlock], bytes);
        d.local[kTotal] += bytes;
    }
    d.local[kBusiest] = d.local[kTotal];
    d.communicated = true;
    d.max_reduced = false;
    if (d.first) {
        settle_locally(ctx, d.state, offer_table(d.state, d.local, &d.problem));
        return reduce_summary(ctx, d.local, d.global, /*blocking=*/d.state.online);
    }
    if (d.a.is_alltoall()) {
        // MPI_Alltoall: every rank sends the same block to every rank, so its own counts are
        // everyone's (the signatures match, so the byte counts do).
        std::copy(d.local, d.local + kFields, d.global);
        d.global[kTotal] = d.local[kTotal] * p;
        d.communicated = false;
        return Task::finished(MPI_SUCCESS);
    }
    if (d.state.max_only) {
        d.max_in[0] = d.local[kMaxBlock];
        d.max_in[1] = d.local[kBusiest];
        d.max_reduced = true;
        return allreduce_step(ctx, d.max_in, d.max_out, 2, MPI_DOUBLE, MPI_MAX);
    }
    return reduce_summary(ctx, d.local, d.global);
}

int finish_summary(Decision &d) {
    if (d.first) return check_agreement(d.state, d.problem, d.global);
    if (d.max_reduced) {
        d.global[kMaxBlock] = d.max_out[0];
        d.global[kBusiest] = d.max_out[1];
        d.global[kTotal] = -1;  // not reduced; no feature of the table needs it
    }
    return MPI_SUCCESS;
}

// Online tuning: the tuner's choice for the call's size class; its reductions still block at a
// nonblocking start (auto_online.h).
int choose_tuned_online(Decision &d, Choice *out) {
    const bool uniform = d.a.is_alltoall();
    if (!d.first && !uniform) return choose_online(d.ctx, d.a, d.type_size, d.state, d.scope, out);
    if (d.first && !uniform) d.state.late.learn_first(d.global[kMaxBlock]);
    out->known_max_block = static_cast<int64_t>(d.global[kMaxBlock]);
    return d.state.tuner.choose(d.ctx, d.global[kMaxBlock], uniform, out);
}

// A table with no entry at all (or no table, in a default mode that does not tune online).
int choose_without_entry(Decision &d, Choice *out) {
    std::string used;
    resolve_choice(d.scope, "vendor", "vendor", out, &used);
    out->note = d.state.table ? "auto: empty tuning table" : "auto: no tuning table";  // into the note's storage
    out->note += d.reduction_note();
    return MPI_SUCCESS;
}

// An entry that names one spec for every workload: resolved once (on the second call; the first
// reports its agreement), then pointed to with no communication.
int choose_only_spec(Decision &d, Choice *out) {
    AutoState &state = d.state;
    if (state.kept_ready) {
        out->kept_selection = &state.kept.selection;
        out->kept_note = &state.kept.note;
        return MPI_SUCCESS;
    }
    const TuningTable &table = *state.table;
    std::string used;
    Choice &target = d.first ? *out : state.kept;
    resolve_choice(d.scope, *state.only_spec, table.fallback(), &target, &used);
    if (d.first) out->known_max_block = static_cast<int64_t>(d.global[kMaxBlock]);
    char note[200];
    std::snprintf(note, sizeof note, "auto: %s P=%d Q=%d, one spec for every workload%s%s",
                  basename(table.origin()).c_str(), state.entry->nprocs, state.entry->ppn, d.reduction_note(),
                  used == *state.only_spec ? "" : " (fallback)");
    target.note = note;
    if (!d.first) {
        state.kept_ready = true;
        out->kept_selection = &state.kept.selection;
        out->kept_note = &state.kept.note;
    }
    return MPI_SUCCESS;
}

// An entry keyed by block-size features: the summary's features looked up in its rules; each
// spec resolved once.
int choose_by_features(Decision &d, Choice *out) {
    AutoState &state = d.state;
    const TuningTable &table = *state.table;
    const TuningTable::Entry &entry = *state.entry;
    out->known_max_block = static_cast<int64_t>(d.global[kMaxBlock]);
    const BlockSummary summary{d.global[kMaxBlock], d.global[kBusiest], d.global[kTotal]};
    std::vector<double> values;
    std::string shown;
    for (TuningFeature f : table.features()) {
        values.push_back(summary.feature(f, d.scope.nprocs));
        char value[64];
        std::snprintf(value, sizeof value, " %s=%.4g", feature_name(f), values.back());
        shown += value;
    }
    const std::string &spec = TuningTable::spec_for(entry, values);
    auto known = state.resolved.find(&spec);
    if (known == state.resolved.end()) {
        Choice resolved;
        std::string used;
        resolve_choice(d.scope, spec, table.fallback(), &resolved, &used);
        known = state.resolved.emplace(&spec, AutoState::Resolved{std::move(resolved.selection), used != spec}).first;
    }
    out->kept_selection = &known->second.selection;
    char note[200];
    std::snprintf(note, sizeof note, "auto: %s P=%d Q=%d%s%s%s", basename(table.origin()).c_str(), entry.nprocs,
                  entry.ppn, shown.c_str(), d.communicated ? "" : ", no reduction",
                  known->second.fallback ? " (fallback)" : "");
    out->note = note;
    return MPI_SUCCESS;
}

// A coroutine: the reductions are steps of the call's schedule (see allreduce).
Task deciding(Context &ctx, const TypedArgs &a, int64_t type_size, Choice *out) {
    AutoState &state = ctx.state<AutoState>();
    if (!state.disagreement.empty()) co_return fail(MPI_ERR_OTHER, state.disagreement);
    Decision d{ctx, a, type_size, state, Scope{ctx.size(), ctx.topology().max_local_size}, !state.agreed};
    // The first call agrees on the table, which says which chooser applies; later calls take
    // the summary only where theirs needs it.
    const auto needs_summary = [&] {
        return d.first || (state.online ? a.is_alltoall() : state.entry != nullptr && state.only_spec == nullptr);
    };
    if (needs_summary()) {
        TUCOLL_CO_TRY(co_await summarize(ctx, d));
        TUCOLL_CO_TRY(finish_summary(d));
    }
    if (state.online) co_return choose_tuned_online(d, out);
    if (state.entry == nullptr) co_return choose_without_entry(d, out);
    if (state.only_spec != nullptr) co_return choose_only_spec(d, out);
    co_return choose_by_features(d, out);
}

// Not a coroutine where nothing is left to decide (an entry that names one spec, resolved): a
// call there pays for no frame.
Task choose(Context &ctx, const TypedArgs &a, int64_t type_size, Choice *out) {
    const AutoState &state = ctx.state<AutoState>();
    if (state.kept_ready && state.disagreement.empty()) {
        out->kept_selection = &state.kept.selection;
        out->kept_note = &state.kept.note;
        return Task::finished(MPI_SUCCESS);
    }
    return deciding(ctx, a, type_size, out);
}

}  // namespace

Algorithm auto_algorithm() {
    Algorithm a;
    a.name = "auto";
    a.summary = "tuned: the tuning table's choice for (P, Q, block-size features), with one allreduce of the features "
                "only where the table's entry needs them; online tuning where the table does not cover P and Q";
    a.constraints = "reads a tuning table (TUCOLL_TUNING_FILE or the installed tuning/default.json); with none, or none "
                    "within 4x of this P and Q, it tunes online (TUCOLL_AUTO). Specs the table names that are invalid "
                    "at this P run the table's fallback";
    a.flows_per_rank = flows_unknown;
    a.meta = true;
    a.choose = choose;
    return a;
}

}  // namespace tucoll::alltoallv
