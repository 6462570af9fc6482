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
//   static int run(Context &, const Selection &, const Args &, Prepared &, CallStats &);
// and, for the collectives a recording keeps (core/record.h),
//   static void recorded_row(Context &, const Args &, const Prepared &, std::vector<int64_t> *row,
//                            int64_t *type_size);   what this rank sends to each rank, in bytes
#pragma once

#include <cstring>
#include <type_traits>
#include <vector>

#include "core/context.h"
#include "core/errors.h"
#include "core/record.h"
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

template <class C>
int drive(const char *spec, const typename C::Args &args) {
    const char *fn = C::function(args);
    Context *ctx = nullptr;
    TUCOLL_TRY(prefix_error(Context::get(C::comm(args), &ctx), fn));
    typename C::Prepared prep;
    const Selection *selection = nullptr;
    int rc = C::check(*ctx, args, &prep);
    if (rc == MPI_SUCCESS) rc = prefix_error(ctx->select(C::registry(args), spec, &selection), fn);
    if (global_checks_enabled()) {
        rc = agree_on_error(*ctx, rc, fn);
        if (rc == MPI_SUCCESS) rc = agree_on_error(*ctx, prefix_error(C::check_consistency(*ctx, args, prep), fn), fn);
    }
    if (rc != MPI_SUCCESS) return rc;
    TUCOLL_TRY(prefix_error(ctx->run_started(), fn));
    record::Call recorded;
    if (record::active()) record_before<C>(*ctx, args, prep, *selection, &recorded);
    CallStats &stats = ctx->begin_call(C::registry(args).collective());
    rc = prefix_error(ctx->requests().finish(C::run(*ctx, *selection, args, prep, stats)), fn);
    if (recorded.on) record::after(*ctx, recorded, stats, rc);
    return rc;
}

}  // namespace tucoll
