// tucoll_allgather(v) and their _with forms: checks, selection, byte view, run, statistics.
#include <string>
#include <vector>

#include "allgather/allgather.h"
#include "core/copy.h"
#include "core/datatype.h"
#include "core/driver.h"
#include "core/errors.h"
#include "core/persistent.h"
#include "core/validate.h"
#include "ipc/backend.h"
#include "tucoll.h"

namespace tucoll::allgather {
namespace {

// The byte view of a call and what is behind it, kept on the communicator: element counts and
// displacements of every block in the user's receive buffer (in units of recvtype, 64-bit: an
// allgather's block j starts at j * recvcount), their byte forms, and the packing buffer.
struct ByteView {
    std::vector<int64_t> elements, element_displs, counts, displs;
    ScratchBuffer pack;
};

// What the argument checks reuse (Context::call_scratch: they run before the engine's lock).
struct CheckScratch {
    std::vector<int> order;         // check_disjoint's
    std::vector<int64_t> expected;  // TUCOLL_CHECK=global
};

struct Prepared {
    TypeInfo send_type, recv_type;
    bool in_place = false;
};

// The byte view: blocks in the user's receive buffer when its type is contiguous, else in a
// packed scratch buffer; this rank's block is put in place first.
Task run_bytes(Context &ctx, const Algorithm &alg, const Selection &sel, const TypedArgs &a, const Prepared &prep,
              CallStats &stats) {
    const int p = ctx.size(), me = ctx.rank();
    const TypeInfo &rt = prep.recv_type;
    ByteView &view = ctx.workspace<ByteView>();
    std::vector<int64_t> &counts = view.counts, &displs = view.displs;
    std::vector<int64_t> &elements = view.elements, &element_displs = view.element_displs;
    counts.resize(p);
    displs.resize(p);
    elements.resize(p);
    element_displs.resize(p);
    for (int j = 0; j < p; ++j) {
        elements[j] = a.vector ? a.recvcounts[j] : *a.recvcounts;
        element_displs[j] = a.vector ? a.rdispls[j] : static_cast<int64_t>(j) * *a.recvcounts;
        counts[j] = elements[j] * rt.size;
    }
    const bool packed = !rt.contiguous;
    char *base = nullptr;
    if (!packed) {
        base = static_cast<char *>(a.recvbuf) + rt.true_lb;
        for (int j = 0; j < p; ++j) displs[j] = element_displs[j] * rt.extent;
    } else {
        int64_t offset = 0;
        for (int j = 0; j < p; ++j) {
            displs[j] = offset;
            offset += counts[j];
        }
        base = view.pack.get(static_cast<size_t>(offset));
        if (base == nullptr && offset > 0) {
            co_return failf(MPI_ERR_NO_MEM, "cannot allocate %lld bytes to pack", static_cast<long long>(offset));
        }
        stats.pack_bytes += offset;
    }
    // This rank's block.
    if (prep.in_place) {
        if (packed) {
            TUCOLL_CO_TRY(pack_blocks(a.recvbuf, a.recvtype, rt, 1, &elements[me], &element_displs[me], base, &displs[me],
                                   ctx.comm()));
        }
    } else if (prep.send_type.contiguous) {
        local_copy(base + displs[me], static_cast<const char *>(a.sendbuf) + prep.send_type.true_lb, counts[me]);
    } else {
        const int zero = 0;
        TUCOLL_CO_TRY(pack_blocks(a.sendbuf, a.sendtype, prep.send_type, 1, &a.sendcount, &zero, base, &displs[me],
                               ctx.comm()));
    }
    stats.path = prep.in_place ? (packed ? "in-place, packed recv" : "in-place") : packed ? "packed recv" : "direct";
    const Call call{a, base, counts.data(), displs.data(), !a.vector};
    const int rc = co_await alg.run(ctx, call, sel.params, stats);
    // Whatever the algorithm met, its requests complete before the receive side is unpacked.
    ctx.requests().fault(rc);
    co_await ctx.requests().completion();
    if (packed && !ctx.requests().failed()) {
        TUCOLL_CO_TRY(unpack_blocks(base, displs.data(), a.recvbuf, a.recvtype, rt, p, elements.data(),
                                    element_displs.data(), ctx.comm()));
    }
    co_return MPI_SUCCESS;
}

struct Allgather {
    using Args = TypedArgs;
    using Prepared = allgather::Prepared;

    static const char *function(const Args &a) { return a.vector ? "tucoll_allgatherv" : "tucoll_allgather"; }
    static MPI_Comm comm(const Args &a) { return a.comm; }
    static const RegistryBase &registry(const Args &a) {
        return a.vector ? allgatherv_registry() : allgather_registry();
    }

    static int check(Context &ctx, const Args &a, Prepared *prep) {
        const int p = ctx.size(), me = ctx.rank();
        const char *fn = function(a);
        if (a.recvbuf == MPI_IN_PLACE) return failf(MPI_ERR_BUFFER, "%s: recvbuf cannot be MPI_IN_PLACE", fn);
        if (a.vector) {
            TUCOLL_TRY(check_counts(fn, "recvcounts", a.recvcounts, p));
            TUCOLL_TRY(check_displs(fn, "displs", a.rdispls));
        } else if (*a.recvcounts < 0) {
            return failf(MPI_ERR_COUNT, "%s: recvcount = %d is negative", fn, *a.recvcounts);
        }
        TUCOLL_TRY(prefix_error(TypeInfo::query(a.recvtype, &prep->recv_type), {fn, ": recvtype: "}));
        if (a.vector && prep->recv_type.size > 0) {
            // Overlapping blocks are erroneous, and a forwarding algorithm would spread whichever
            // copy won on each rank: different contents everywhere, with no error.
            TUCOLL_TRY(check_disjoint(fn, "recvbuf", a.recvcounts, a.rdispls, p, ctx.call_scratch<CheckScratch>().order));
        }
        const int64_t recv_total = a.vector ? total_bytes(a.recvcounts, p, prep->recv_type.size)
                                            : static_cast<int64_t>(*a.recvcounts) * p * prep->recv_type.size;
        TUCOLL_TRY(check_buffer(fn, "recvbuf", a.recvbuf, recv_total, prep->recv_type));
        const int64_t own_recv = static_cast<int64_t>(a.vector ? a.recvcounts[me] : *a.recvcounts) * prep->recv_type.size;

        prep->in_place = a.sendbuf == MPI_IN_PLACE;
        if (prep->in_place) return MPI_SUCCESS;
        if (a.sendcount < 0) return failf(MPI_ERR_COUNT, "%s: sendcount = %d is negative", fn, a.sendcount);
        TUCOLL_TRY(prefix_error(TypeInfo::query(a.sendtype, &prep->send_type), {fn, ": sendtype: "}));
        const int64_t own_send = static_cast<int64_t>(a.sendcount) * prep->send_type.size;
        TUCOLL_TRY(check_buffer(fn, "sendbuf", a.sendbuf, own_send, prep->send_type));
        if (own_send != own_recv) {
            return failf(MPI_ERR_TRUNCATE, "%s: rank %d sends %lld bytes but its block in recvbuf holds %lld", fn, me,
                         static_cast<long long>(own_send), static_cast<long long>(own_recv));
        }
        // Both MPI_BOTTOM: datatypes of absolute addresses, which may name separate memory.
        if (a.sendbuf == a.recvbuf && a.sendbuf != MPI_BOTTOM && own_send > 0) {
            return failf(MPI_ERR_BUFFER, "%s: sendbuf and recvbuf are the same buffer (use MPI_IN_PLACE)", fn);
        }
        return MPI_SUCCESS;
    }

    static int check_consistency(Context &ctx, const Args &a, const Prepared &prep) {
        const int p = ctx.size(), me = ctx.rank();
        std::vector<int64_t> &expected = ctx.call_scratch<CheckScratch>().expected;
        expected.resize(p);
        for (int j = 0; j < p; ++j) expected[j] = static_cast<int64_t>(a.vector ? a.recvcounts[j] : *a.recvcounts) * prep.recv_type.size;
        const int64_t sent = prep.in_place ? expected[me] : static_cast<int64_t>(a.sendcount) * prep.send_type.size;
        return check_gathered_bytes(ctx, sent, expected.data());
    }

    // Every rank receives this rank's block: its row of the byte matrix is that size throughout.
    static void recorded_row(Context &ctx, const Args &a, const Prepared &prep, std::vector<int64_t> *row,
                             int64_t *type_size) {
        const int me = ctx.rank();
        const bool in_place = prep.in_place;
        *type_size = in_place ? prep.recv_type.size : prep.send_type.size;
        const int64_t own = in_place ? static_cast<int64_t>(a.vector ? a.recvcounts[me] : *a.recvcounts) * prep.recv_type.size
                                     : static_cast<int64_t>(a.sendcount) * prep.send_type.size;
        row->assign(ctx.size(), own);
    }

    // A nonblocking or persistent call keeps its own copy of an allgather's recvcount (recvcounts
    // points at the caller's argument) and its own handles on derived datatypes (the caller may
    // free theirs).
    struct KeptCount {
        int recvcount = 0;
    };
    template <class Held>  // Pending, or PersistentCall
    static int keep(Context &, Args *a, Held &call) {
        if (!a->vector) {
            KeptCount &k = call.storage().template get<KeptCount>();
            k.recvcount = *a->recvcounts;
            a->recvcounts = &k.recvcount;
        }
        TUCOLL_TRY(call.types().own(&a->recvtype));
        if (a->sendbuf != MPI_IN_PLACE) TUCOLL_TRY(call.types().own(&a->sendtype));
        return MPI_SUCCESS;
    }

    static Task run(Context &ctx, const Selection &sel, const Args &a, Prepared &prep, CallStats &stats) {
        const Algorithm &alg = (a.vector ? allgatherv_registry() : allgather_registry())[sel.index];
        stats.algorithm = sel.spec;
        // Every allgather but the MPI's own copies blocks on the host; device buffers go to the MPI
        // only when it takes them (decided from the buffers alike on every rank of a correct program).
        const bool device = ipc::is_device_buffer(a.recvbuf) || (!prep.in_place && ipc::is_device_buffer(a.sendbuf));
        if (device && !(alg.typed && ipc::mpi_takes_device_buffers())) {
            co_return failf(MPI_ERR_BUFFER, "%s: %s cannot take device buffers (only vendor, with a CUDA-aware MPI)",
                            function(a), alg.name.c_str());
        }
        if (!alg.typed) co_return co_await run_bytes(ctx, alg, sel, a, prep, stats);
        stats.path = "typed";
        const Call call{a, nullptr, nullptr, nullptr, !a.vector};
        co_return co_await alg.run(ctx, call, sel.params, stats);
    }
};

int run(const char *spec, const TypedArgs &a) { return drive<Allgather>(spec, a); }

int start(const char *spec, const TypedArgs &a, tucoll_request_t *request) {
    if (request == nullptr) {
        return failf(MPI_ERR_ARG, "%s: request is NULL", a.vector ? "tucoll_iallgatherv" : "tucoll_iallgather");
    }
    *request = TUCOLL_REQUEST_NULL;
    return drive_nonblocking<Allgather>(spec, a, request);
}

int init(const char *spec, const TypedArgs &a, tucoll_request_t *request) {
    return drive_persistent<Allgather>(a.vector ? "tucoll_allgatherv_init" : "tucoll_allgather_init", spec, a,
                                       request);
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

extern "C" int tucoll_iallgather_with(const char *spec, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                      void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                                      tucoll_request_t *request) {
    const tucoll::allgather::TypedArgs args{sendbuf, sendcount, sendtype, recvbuf, &recvcount, nullptr, recvtype,
                                            comm, false};
    return tucoll::allgather::start(spec, args, request);
}

extern "C" int tucoll_iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm, tucoll_request_t *request) {
    return tucoll_iallgather_with(nullptr, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request);
}

extern "C" int tucoll_iallgatherv_with(const char *spec, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                       void *recvbuf, const int recvcounts[], const int displs[],
                                       MPI_Datatype recvtype, MPI_Comm comm, tucoll_request_t *request) {
    const tucoll::allgather::TypedArgs args{sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                                            comm, true};
    return tucoll::allgather::start(spec, args, request);
}

extern "C" int tucoll_iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                  const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                                  tucoll_request_t *request) {
    return tucoll_iallgatherv_with(nullptr, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm,
                                   request);
}

extern "C" int tucoll_allgather_init_with(const char *spec, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                          void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info,
                                          tucoll_request_t *request) {
    const tucoll::allgather::TypedArgs args{sendbuf, sendcount, sendtype, recvbuf, &recvcount, nullptr, recvtype,
                                            comm, false};
    return tucoll::allgather::init(spec, args, request);
}

extern "C" int tucoll_allgather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                     int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                     tucoll_request_t *request) {
    return tucoll_allgather_init_with(nullptr, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info,
                                      request);
}

extern "C" int tucoll_allgatherv_init_with(const char *spec, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                           void *recvbuf, const int recvcounts[], const int displs[],
                                           MPI_Datatype recvtype, MPI_Comm comm, MPI_Info, tucoll_request_t *request) {
    const tucoll::allgather::TypedArgs args{sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                                            comm, true};
    return tucoll::allgather::init(spec, args, request);
}

extern "C" int tucoll_allgatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                      const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                                      MPI_Info info, tucoll_request_t *request) {
    return tucoll_allgatherv_init_with(nullptr, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                                       comm, info, request);
}
