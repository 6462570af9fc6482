// auto: the tuned alltoallv (seed 003). One MPI_Allreduce gives every rank the same block-size
// summary — the largest block (TuNA's M, handed on so TuNA does not reduce it again), the
// busiest rank's bytes and the total — plus a fingerprint of the tuning table each rank read;
// the table then maps (P, ranks per node, the table's features) to a spec string. A lookup is a
// scan of a few rules: microseconds, no model evaluation.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "alltoallv/alltoallv.h"
#include "core/errors.h"
#include "core/tuning.h"

namespace tucoll::alltoallv {
namespace {

// The summary's fields, reduced in one call: max, max, sum, then the table fingerprint as max
// and as max of its negation (they agree iff every rank read the same table), then the largest
// "could not load it" flag.
enum Field { kMaxBlock, kBusiest, kTotal, kPrint, kNegPrint, kProblem, kFields };

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

int reduce_summary(Context &ctx, const double local[kFields], double global[kFields]) {
    SummaryOp &s = ctx.workspace<SummaryOp>();
    if (s.record == MPI_DATATYPE_NULL) {
        MPI_Datatype record;
        TUCOLL_MPI(MPI_Type_contiguous(kFields, MPI_DOUBLE, &record));
        TUCOLL_MPI(MPI_Type_commit(&record));
        s.record = record;
    }
    if (s.op == MPI_OP_NULL) TUCOLL_MPI(MPI_Op_create(combine, /*commute=*/1, &s.op));
    TUCOLL_MPI(MPI_Allreduce(local, global, 1, s.record, s.op, ctx.comm()));
    return MPI_SUCCESS;
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

int choose(Context &ctx, const TypedArgs &a, int64_t type_size, Choice *out) {
    const int p = ctx.size();
    const int *counts = a.sendbuf == MPI_IN_PLACE ? a.recvcounts : a.sendcounts;
    std::shared_ptr<const TuningTable> table;
    std::string problem;
    load_tuning_table("alltoallv", &table, &problem);

    double local[kFields] = {};
    for (int i = 0; i < p; ++i) {
        const double bytes = static_cast<double>(counts[i]) * static_cast<double>(type_size);
        local[kMaxBlock] = std::max(local[kMaxBlock], bytes);
        local[kTotal] += bytes;
    }
    local[kBusiest] = local[kTotal];
    local[kPrint] = table ? table->fingerprint() : 0;
    local[kNegPrint] = -local[kPrint];
    local[kProblem] = problem.empty() ? 0 : 1;
    double global[kFields];
    TUCOLL_TRY(reduce_summary(ctx, local, global));

    if (global[kProblem] > 0) {
        return fail(MPI_ERR_OTHER, "auto: " + (problem.empty() ? std::string("another rank could not use its tuning table")
                                                               : problem));
    }
    if (global[kPrint] != -global[kNegPrint]) {
        return fail(MPI_ERR_OTHER, "auto: the ranks read different tuning tables (TUCOLL_TUNING_FILE or the installed "
                                   "table differs between nodes); every rank must see the same one");
    }
    out->known_max_block = static_cast<int64_t>(global[kMaxBlock]);
    const BlockSummary summary{global[kMaxBlock], global[kBusiest], global[kTotal]};
    const Scope scope{p, ctx.topology().max_local_size};
    std::string used;
    char note[160];
    const TuningTable::Entry *entry = table ? table->entry_for(p, scope.ppn) : nullptr;
    if (entry == nullptr) {
        resolve_choice(scope, "vendor", "vendor", out, &used);
        out->note = table ? "auto: empty tuning table" : "auto: no tuning table";
        return MPI_SUCCESS;
    }
    std::vector<double> values;
    std::string shown;
    for (TuningFeature f : table->features()) {
        values.push_back(summary.feature(f, p));
        char value[64];
        std::snprintf(value, sizeof value, " %s=%.4g", feature_name(f), values.back());
        shown += value;
    }
    const std::string &spec = TuningTable::spec_for(*entry, values);
    resolve_choice(scope, spec, table->fallback(), out, &used);
    std::snprintf(note, sizeof note, "auto: %s P=%d Q=%d%s%s", basename(table->origin()).c_str(), entry->nprocs,
                  entry->ppn, shown.c_str(), used == spec ? "" : " (fallback)");
    out->note = note;
    return MPI_SUCCESS;
}

}  // namespace

Algorithm auto_algorithm() {
    Algorithm a;
    a.name = "auto";
    a.summary = "tuned: one allreduce of block-size statistics, then the tuning table's choice for (P, Q, feature)";
    a.constraints = "needs a tuning table (TUCOLL_TUNING_FILE or the installed tuning/default.json); without one it "
                    "runs vendor. Specs the table names that are invalid at this P run the table's fallback";
    a.flows_per_rank = flows_unknown;
    a.meta = true;
    a.choose = choose;
    return a;
}

}  // namespace tucoll::alltoallv
