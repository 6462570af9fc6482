// tucoll_alltoall / tucoll_alltoall_with: MPI_Alltoall as the alltoallv of uniform counts. Every
// alltoallv algorithm serves it; its registry (TUCOLL_ALLTOALL) is alltoallv's with a `vendor`
// that calls the MPI's MPI_Alltoall, and algorithms learn from Call::uniform that every block is
// the same size at displacement j (the IPC family then gathers no displacements).
#include <climits>
#include <vector>

#include "alltoallv/alltoallv.h"
#include "core/context.h"
#include "core/errors.h"
#include "core/mpi_step.h"
#include "core/p2p.h"
#include "core/platform.h"
#include "tucoll.h"

namespace tucoll::alltoallv {
namespace {

constexpr const char *kFn = "tucoll_alltoall";

// The messages any exchange needs at least (the vendor's schedule is not visible).
void account(Context &ctx, const UniformArgs &a, CallStats &stats) {
    platform::charge_packing(a.recvtype, static_cast<int64_t>(ctx.size()) * a.recvcount);
    if (a.sendbuf == MPI_IN_PLACE || a.sendcount == 0) return;
    MPI_Count size = 0;
    MPI_Type_size_x(a.sendtype, &size);
    for (int i = 0; i < ctx.size() - 1; ++i) stats.count_send(static_cast<int64_t>(a.sendcount) * size);
}

Task run_vendor(Context &ctx, const Call &call, const Params &, CallStats &stats) {
    const UniformArgs &a = *call.typed.alltoall;
    // The MPI packs non-contiguous blocks as it sends them and unpacks those it receives.
    if (a.sendbuf != MPI_IN_PLACE) platform::charge_packing(a.sendtype, static_cast<int64_t>(ctx.size()) * a.sendcount);
    return mpi_step(
        ctx,
        [&ctx, &a](MPI_Request *req) {
            const int rc = req ? PMPI_Ialltoall(a.sendbuf, a.sendcount, a.sendtype, a.recvbuf, a.recvcount, a.recvtype,
                                                ctx.comm(), req)
                               : PMPI_Alltoall(a.sendbuf, a.sendcount, a.sendtype, a.recvbuf, a.recvcount, a.recvtype,
                                               ctx.comm());
            return rc == MPI_SUCCESS ? rc : mpi_fail(rc, req ? "PMPI_Ialltoall" : "PMPI_Alltoall");
        },
        [&ctx, &a, &stats] { account(ctx, a, stats); });
}

// One side of the call as alltoallv arguments, kept per communicator (its state): counts `count` and
// displacements j * count while they fit an int; beyond, one element of a contiguous type of
// `count` elements per block (cached with the type it was made for), displacements j.
struct UniformSide {
    std::vector<int> counts, displs;
    int count = -1;
    MPI_Datatype base = MPI_DATATYPE_NULL, block = MPI_DATATYPE_NULL;
    ~UniformSide() {
        if (block != MPI_DATATYPE_NULL) MPI_Type_free(&block);
    }

    int describe(int p, int n, MPI_Datatype type, MPI_Datatype *as) {
        const bool large = n > 0 && static_cast<int64_t>(p - 1) * n > INT_MAX;
        *as = type;
        if (!large) {
            if (count != n || static_cast<int>(counts.size()) != p || block != MPI_DATATYPE_NULL) {
                counts.assign(p, n);
                displs.resize(p);
                for (int j = 0; j < p; ++j) displs[j] = j * n;
                count = n;
                if (block != MPI_DATATYPE_NULL) MPI_Type_free(&block);
            }
            return MPI_SUCCESS;
        }
        if (block == MPI_DATATYPE_NULL || base != type || count != n || static_cast<int>(counts.size()) != p) {
            if (block != MPI_DATATYPE_NULL) MPI_Type_free(&block);
            TUCOLL_MPI(MPI_Type_contiguous(n, type, &block));
            TUCOLL_MPI(MPI_Type_commit(&block));
            base = type;
            count = n;
            counts.assign(p, 1);
            displs.resize(p);
            for (int j = 0; j < p; ++j) displs[j] = j;
        }
        *as = block;
        return MPI_SUCCESS;
    }
};

struct UniformView {
    UniformSide send, recv;
};

}  // namespace

const Registry<Algorithm> &alltoall_registry() {
    static const Registry<Algorithm> instance = [] {
        std::vector<Algorithm> entries(registry().begin(), registry().end());
        for (Algorithm &a : entries) {
            if (a.name != "vendor") continue;
            a.summary = "the MPI library's MPI_Alltoall (via PMPI)";
            a.run = run_vendor;
        }
        return Registry<Algorithm>("alltoall", "TUCOLL_ALLTOALL", "auto", std::move(entries));
    }();
    return instance;
}

}  // namespace tucoll::alltoallv

namespace tucoll::alltoallv {
namespace {

enum class Mode { blocking, nonblocking, persistent };

// tucoll_alltoall(_with), tucoll_ialltoall(_with) and tucoll_alltoall_init(_with): the call as an
// alltoallv of uniform counts. The counts and displacements are the communicator's (a
// nonblocking call keeps its own copy, Alltoallv::keep; a persistent one too, Plan).
int alltoall(Mode mode, const char *spec, const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
             int recvcount, MPI_Datatype recvtype, MPI_Comm comm, tucoll_request_t *request) {
    const char *fn = mode == Mode::nonblocking ? "tucoll_ialltoall"
                     : mode == Mode::persistent ? "tucoll_alltoall_init"
                                                : kFn;
    if (mode != Mode::blocking) {
        if (request == nullptr) return failf(MPI_ERR_ARG, "%s: request is NULL", fn);
        *request = TUCOLL_REQUEST_NULL;
    }
    if (sendbuf != MPI_IN_PLACE && sendcount < 0) return failf(MPI_ERR_COUNT, "%s: sendcount %d < 0", fn, sendcount);
    if (recvcount < 0) return failf(MPI_ERR_COUNT, "%s: recvcount %d < 0", fn, recvcount);
    Context *ctx = nullptr;
    TUCOLL_TRY(prefix_error(Context::get(comm, &ctx), fn));
    UniformView &view = ctx->call_scratch<UniformView>();  // in this thread, before the engine's lock
    MPI_Datatype stype = sendtype, rtype = recvtype;
    if (sendbuf != MPI_IN_PLACE) TUCOLL_TRY(prefix_error(view.send.describe(ctx->size(), sendcount, sendtype, &stype), fn));
    TUCOLL_TRY(prefix_error(view.recv.describe(ctx->size(), recvcount, recvtype, &rtype), fn));
    const UniformArgs uniform{sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype};
    const bool in_place = sendbuf == MPI_IN_PLACE;
    const TypedArgs args{sendbuf,
                         in_place ? nullptr : view.send.counts.data(),
                         in_place ? nullptr : view.send.displs.data(),
                         stype,
                         recvbuf,
                         view.recv.counts.data(),
                         view.recv.displs.data(),
                         rtype,
                         comm,
                         uniform};
    switch (mode) {
        case Mode::blocking: return run(spec, args);
        case Mode::nonblocking: return start_nonblocking(spec, args, request);
        case Mode::persistent: return init_persistent(spec, args, request);
    }
    return MPI_ERR_INTERN;
}

}  // namespace
}  // namespace tucoll::alltoallv

extern "C" int tucoll_alltoall_with(const char *spec, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                    void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
    return tucoll::alltoallv::alltoall(tucoll::alltoallv::Mode::blocking, spec, sendbuf, sendcount, sendtype, recvbuf,
                                       recvcount, recvtype, comm, nullptr);
}

extern "C" int tucoll_ialltoall_with(const char *spec, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                     void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                                     tucoll_request_t *request) {
    return tucoll::alltoallv::alltoall(tucoll::alltoallv::Mode::nonblocking, spec, sendbuf, sendcount, sendtype,
                                       recvbuf, recvcount, recvtype, comm, request);
}

extern "C" int tucoll_ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                int recvcount, MPI_Datatype recvtype, MPI_Comm comm, tucoll_request_t *request) {
    return tucoll_ialltoall_with(nullptr, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request);
}

extern "C" int tucoll_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                               int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
    return tucoll_alltoall_with(nullptr, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

extern "C" int tucoll_alltoall_init_with(const char *spec, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                         void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info,
                                         tucoll_request_t *request) {
    return tucoll::alltoallv::alltoall(tucoll::alltoallv::Mode::persistent, spec, sendbuf, sendcount, sendtype, recvbuf,
                                       recvcount, recvtype, comm, request);
}

extern "C" int tucoll_alltoall_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                    int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                    tucoll_request_t *request) {
    return tucoll_alltoall_init_with(nullptr, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info,
                                     request);
}
