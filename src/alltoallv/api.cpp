// tucoll_alltoallv / tucoll_alltoallv_with: checks, selection, byte view, run, statistics.
#include <string>

#include "alltoallv/alltoallv.h"
#include "core/datatype.h"
#include "core/errors.h"
#include "core/validate.h"
#include "tucoll.h"

namespace tucoll::alltoallv {
namespace {

constexpr const char *kFn = "tucoll_alltoallv";

struct Prepared {
    TypeInfo send_type;
    TypeInfo recv_type;
    bool in_place = false;
    Selection selection;
    int64_t known_max_block = -1;  // M, when a meta-algorithm already reduced it
    std::string note;              // what a meta-algorithm says about its choice
};

int check_arguments(Context &ctx, const TypedArgs &a, Prepared *prep) {
    const int p = ctx.size(), me = ctx.rank();
    if (a.recvbuf == MPI_IN_PLACE) return failf(MPI_ERR_BUFFER, "%s: recvbuf cannot be MPI_IN_PLACE", kFn);
    TUCOLL_TRY(check_counts(kFn, "recvcounts", a.recvcounts, p));
    TUCOLL_TRY(check_displs(kFn, "rdispls", a.rdispls));
    TUCOLL_TRY(prefix_error(TypeInfo::query(a.recvtype, &prep->recv_type), std::string(kFn) + ": recvtype: "));
    const int64_t recv_total = total_bytes(a.recvcounts, p, prep->recv_type.size);
    TUCOLL_TRY(check_buffer(kFn, "recvbuf", a.recvbuf, recv_total, prep->recv_type));

    prep->in_place = a.sendbuf == MPI_IN_PLACE;
    if (prep->in_place) {
        prep->send_type = prep->recv_type;
        return MPI_SUCCESS;
    }
    TUCOLL_TRY(check_counts(kFn, "sendcounts", a.sendcounts, p));
    TUCOLL_TRY(check_displs(kFn, "sdispls", a.sdispls));
    TUCOLL_TRY(prefix_error(TypeInfo::query(a.sendtype, &prep->send_type), std::string(kFn) + ": sendtype: "));
    const int64_t send_total = total_bytes(a.sendcounts, p, prep->send_type.size);
    TUCOLL_TRY(check_buffer(kFn, "sendbuf", a.sendbuf, send_total, prep->send_type));

    const int64_t self_send = static_cast<int64_t>(a.sendcounts[me]) * prep->send_type.size;
    const int64_t self_recv = static_cast<int64_t>(a.recvcounts[me]) * prep->recv_type.size;
    if (self_send != self_recv) {
        return failf(MPI_ERR_TRUNCATE, "%s: rank %d sends %lld bytes to itself but expects %lld", kFn, me,
                     static_cast<long long>(self_send), static_cast<long long>(self_recv));
    }
    if (a.sendbuf == a.recvbuf && send_total > 0 && recv_total > 0) {
        return failf(MPI_ERR_BUFFER, "%s: sendbuf and recvbuf are the same buffer (use MPI_IN_PLACE)", kFn);
    }
    return MPI_SUCCESS;
}

int prepare(Context &ctx, const TypedArgs &a, const char *spec, Prepared *prep) {
    TUCOLL_TRY(check_arguments(ctx, a, prep));
    const Scope scope{ctx.size(), ctx.topology().max_local_size};
    return prefix_error(select_algorithm(registry(), spec, scope, &prep->selection), std::string(kFn) + ": ");
}

// One side of the byte view: used in place when the datatype is contiguous, else packed.
struct Side {
    char *base = nullptr;
    std::vector<int64_t> *counts = nullptr;
    std::vector<int64_t> *displs = nullptr;
    bool packed = false;
};

int byte_side(Context &ctx, void *buf, const int *counts, const int *displs, const TypeInfo &type,
              bool must_copy, IndexSlot count_slot, IndexSlot displ_slot, Slot pack_slot, Side *side) {
    const int p = ctx.size();
    side->counts = &ctx.index(count_slot, p);
    side->displs = &ctx.index(displ_slot, p);
    auto &c = *side->counts;
    auto &d = *side->displs;
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
    side->base = ctx.scratch(pack_slot, static_cast<size_t>(offset));
    if (side->base == nullptr && offset > 0) {
        return failf(MPI_ERR_NO_MEM, "%s: cannot allocate %lld bytes to pack a datatype", kFn,
                     static_cast<long long>(offset));
    }
    ctx.stats().pack_bytes += offset;
    return MPI_SUCCESS;
}

int run_bytes(Context &ctx, const Algorithm &alg, const TypedArgs &a, const Prepared &prep, CallStats &stats) {
    // With MPI_IN_PLACE the data to send lives in recvbuf, laid out by the receive arguments,
    // and is copied out first so that algorithms never read what they are overwriting.
    const void *sbuf = prep.in_place ? a.recvbuf : a.sendbuf;
    const int *scounts = prep.in_place ? a.recvcounts : a.sendcounts;
    const int *sdispls = prep.in_place ? a.rdispls : a.sdispls;
    MPI_Datatype stype = prep.in_place ? a.recvtype : a.sendtype;

    Side send, recv;
    TUCOLL_TRY(byte_side(ctx, const_cast<void *>(sbuf), scounts, sdispls, prep.send_type, prep.in_place,
                         IndexSlot::kSendCounts, IndexSlot::kSendDispls, Slot::kPackSend, &send));
    TUCOLL_TRY(byte_side(ctx, a.recvbuf, a.recvcounts, a.rdispls, prep.recv_type, false, IndexSlot::kRecvCounts,
                         IndexSlot::kRecvDispls, Slot::kPackRecv, &recv));
    if (send.packed) {
        TUCOLL_TRY(pack_blocks(sbuf, stype, prep.send_type, ctx.size(), scounts, sdispls, send.base,
                               send.displs->data(), ctx.comm()));
    }
    stats.path = prep.in_place ? "in-place" : send.packed && recv.packed ? "packed send+recv"
                               : send.packed                 ? "packed send"
                               : recv.packed                 ? "packed recv"
                                                             : "direct";
    if (!prep.note.empty()) stats.path = prep.note + "; " + stats.path;
    const Call call{a, send.base, send.counts->data(), send.displs->data(),
                    recv.base, recv.counts->data(), recv.displs->data(), prep.known_max_block};
    TUCOLL_TRY(alg.run(ctx, call, prep.selection.params, stats));
    if (recv.packed) {
        TUCOLL_TRY(unpack_blocks(recv.base, recv.displs->data(), a.recvbuf, a.recvtype, prep.recv_type,
                                 ctx.size(), a.recvcounts, a.rdispls, ctx.comm()));
    }
    return MPI_SUCCESS;
}

}  // namespace

int run(const char *spec, const TypedArgs &a) {
    Context *ctx = nullptr;
    TUCOLL_TRY(prefix_error(Context::get(a.comm, &ctx), std::string(kFn) + ": "));
    Prepared prep;
    int rc = prepare(*ctx, a, spec, &prep);
    if (global_checks_enabled()) rc = agree_on_error(*ctx, rc, kFn);
    if (rc != MPI_SUCCESS) return rc;

    if (const ChooseFn choose = registry()[prep.selection.index].choose) {
        Choice choice;
        TUCOLL_TRY(prefix_error(choose(*ctx, a, prep.send_type.size, &choice), std::string(kFn) + ": "));
        prep.selection = std::move(choice.selection);
        prep.known_max_block = choice.known_max_block;
        prep.note = std::move(choice.note);
    }
    const Algorithm &alg = registry()[prep.selection.index];
    CallStats &stats = ctx->stats();
    stats.reset("alltoallv");
    stats.algorithm = prep.selection.spec;
    if (alg.typed) {
        stats.path = prep.note.empty() ? "typed" : prep.note + "; typed";
        const Call call{a, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, prep.known_max_block};
        return alg.run(*ctx, call, prep.selection.params, stats);
    }
    return run_bytes(*ctx, alg, a, prep, stats);
}

}  // namespace tucoll::alltoallv

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
