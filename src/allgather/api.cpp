// tucoll_allgather(v) and their _with forms: checks, selection, byte view, run, statistics.
#include <string>
#include <vector>

#include "allgather/allgather.h"
#include "core/copy.h"
#include "core/datatype.h"
#include "core/errors.h"
#include "core/validate.h"
#include "tucoll.h"

namespace tucoll::allgather {
namespace {

// Element counts and displacements of every block in the user's receive buffer (in units of
// recvtype), kept on the communicator between calls.
struct ElementLayout {
    std::vector<int> counts, displs;
};

struct Prepared {
    TypeInfo send_type, recv_type;
    bool in_place = false;
    Selection selection;
};

int check_arguments(Context &ctx, const TypedArgs &a, const char *fn, Prepared *prep) {
    const int p = ctx.size(), me = ctx.rank();
    if (a.recvbuf == MPI_IN_PLACE) return failf(MPI_ERR_BUFFER, "%s: recvbuf cannot be MPI_IN_PLACE", fn);
    if (a.vector) {
        TUCOLL_TRY(check_counts(fn, "recvcounts", a.recvcounts, p));
        TUCOLL_TRY(check_displs(fn, "displs", a.rdispls));
    } else if (*a.recvcounts < 0) {
        return failf(MPI_ERR_COUNT, "%s: recvcount = %d is negative", fn, *a.recvcounts);
    }
    TUCOLL_TRY(prefix_error(TypeInfo::query(a.recvtype, &prep->recv_type), std::string(fn) + ": recvtype: "));
    const int64_t recv_total = a.vector ? total_bytes(a.recvcounts, p, prep->recv_type.size)
                                        : static_cast<int64_t>(*a.recvcounts) * p * prep->recv_type.size;
    TUCOLL_TRY(check_buffer(fn, "recvbuf", a.recvbuf, recv_total, prep->recv_type));
    const int64_t own_recv = static_cast<int64_t>(a.vector ? a.recvcounts[me] : *a.recvcounts) * prep->recv_type.size;

    prep->in_place = a.sendbuf == MPI_IN_PLACE;
    if (prep->in_place) return MPI_SUCCESS;
    if (a.sendcount < 0) return failf(MPI_ERR_COUNT, "%s: sendcount = %d is negative", fn, a.sendcount);
    TUCOLL_TRY(prefix_error(TypeInfo::query(a.sendtype, &prep->send_type), std::string(fn) + ": sendtype: "));
    const int64_t own_send = static_cast<int64_t>(a.sendcount) * prep->send_type.size;
    TUCOLL_TRY(check_buffer(fn, "sendbuf", a.sendbuf, own_send, prep->send_type));
    if (own_send != own_recv) {
        return failf(MPI_ERR_TRUNCATE, "%s: rank %d sends %lld bytes but its block in recvbuf holds %lld", fn, me,
                     static_cast<long long>(own_send), static_cast<long long>(own_recv));
    }
    if (a.sendbuf == a.recvbuf && own_send > 0) {
        return failf(MPI_ERR_BUFFER, "%s: sendbuf and recvbuf are the same buffer (use MPI_IN_PLACE)", fn);
    }
    return MPI_SUCCESS;
}

// The byte view: blocks in the user's receive buffer when its type is contiguous, else in a
// packed scratch buffer; this rank's block is put in place first.
int run_bytes(Context &ctx, const Algorithm &alg, const TypedArgs &a, const Prepared &prep, CallStats &stats) {
    const int p = ctx.size(), me = ctx.rank();
    const TypeInfo &rt = prep.recv_type;
    std::vector<int64_t> &counts = ctx.index(IndexSlot::kRecvCounts, p);
    std::vector<int64_t> &displs = ctx.index(IndexSlot::kRecvDispls, p);
    ElementLayout &elements = ctx.workspace<ElementLayout>();
    std::vector<int> &user_counts = elements.counts, &user_displs = elements.displs;
    user_counts.resize(p);
    user_displs.resize(p);
    for (int j = 0; j < p; ++j) {
        user_counts[j] = a.vector ? a.recvcounts[j] : *a.recvcounts;
        user_displs[j] = a.vector ? a.rdispls[j] : j * *a.recvcounts;
        counts[j] = user_counts[j] * rt.size;
    }
    const bool packed = !rt.contiguous;
    char *base = nullptr;
    if (!packed) {
        base = static_cast<char *>(a.recvbuf) + rt.true_lb;
        for (int j = 0; j < p; ++j) displs[j] = static_cast<int64_t>(user_displs[j]) * rt.extent;
    } else {
        int64_t offset = 0;
        for (int j = 0; j < p; ++j) {
            displs[j] = offset;
            offset += counts[j];
        }
        base = ctx.scratch(Slot::kPackRecv, static_cast<size_t>(offset));
        if (base == nullptr && offset > 0) return failf(MPI_ERR_NO_MEM, "cannot allocate %lld bytes to pack", static_cast<long long>(offset));
        stats.pack_bytes += offset;
    }
    // This rank's block.
    if (prep.in_place) {
        if (packed) {
            TUCOLL_TRY(pack_blocks(a.recvbuf, a.recvtype, rt, 1, &user_counts[me], &user_displs[me], base,
                                   &displs[me], ctx.comm()));
        }
    } else if (prep.send_type.contiguous) {
        local_copy(base + displs[me], static_cast<const char *>(a.sendbuf) + prep.send_type.true_lb, counts[me]);
    } else {
        const int zero = 0;
        TUCOLL_TRY(pack_blocks(a.sendbuf, a.sendtype, prep.send_type, 1, &a.sendcount, &zero, base, &displs[me],
                               ctx.comm()));
    }
    stats.path = prep.in_place ? (packed ? "in-place, packed recv" : "in-place") : packed ? "packed recv" : "direct";
    const Call call{a, base, counts.data(), displs.data(), !a.vector};
    TUCOLL_TRY(alg.run(ctx, call, prep.selection.params, stats));
    if (packed) {
        TUCOLL_TRY(unpack_blocks(base, displs.data(), a.recvbuf, a.recvtype, rt, p, user_counts.data(),
                                 user_displs.data(), ctx.comm()));
    }
    return MPI_SUCCESS;
}

int run(const char *spec, const TypedArgs &a) {
    const char *fn = a.vector ? "tucoll_allgatherv" : "tucoll_allgather";
    const Registry<Algorithm> &registry = a.vector ? allgatherv_registry() : allgather_registry();
    Context *ctx = nullptr;
    TUCOLL_TRY(prefix_error(Context::get(a.comm, &ctx), std::string(fn) + ": "));
    Prepared prep;
    int rc = check_arguments(*ctx, a, fn, &prep);
    if (rc == MPI_SUCCESS) {
        const Scope scope{ctx->size(), ctx->topology().max_local_size};
        rc = prefix_error(select_algorithm(registry, spec, scope, &prep.selection), std::string(fn) + ": ");
    }
    if (global_checks_enabled()) rc = agree_on_error(*ctx, rc, fn);
    if (rc != MPI_SUCCESS) return rc;

    const Algorithm &alg = registry[prep.selection.index];
    CallStats &stats = ctx->stats();
    stats.reset(registry.collective());
    stats.algorithm = prep.selection.spec;
    if (alg.typed) {
        stats.path = "typed";
        const Call call{a, nullptr, nullptr, nullptr, !a.vector};
        return alg.run(*ctx, call, prep.selection.params, stats);
    }
    return run_bytes(*ctx, alg, a, prep, stats);
}

}  // namespace
}  // namespace tucoll::allgather

extern "C" int tucoll_allgather_with(const char *spec, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                     void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
    const tucoll::allgather::TypedArgs args{sendbuf, sendcount, sendtype, recvbuf, &recvcount, nullptr, recvtype,
                                            comm, false};
    return tucoll::allgather::run(spec, args);
}

extern "C" int tucoll_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
    return tucoll_allgather_with(nullptr, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

extern "C" int tucoll_allgatherv_with(const char *spec, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                      void *recvbuf, const int recvcounts[], const int displs[],
                                      MPI_Datatype recvtype, MPI_Comm comm) {
    const tucoll::allgather::TypedArgs args{sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                                            comm, true};
    return tucoll::allgather::run(spec, args);
}

extern "C" int tucoll_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                 const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
    return tucoll_allgatherv_with(nullptr, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
}
