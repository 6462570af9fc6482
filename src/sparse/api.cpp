// tucoll_alltoall_crs / tucoll_alltoallv_crs and their _with forms: checks, the byte view of the
// send side, selection, the exchange, and the typed, source-sorted results the caller owns.
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/copy.h"
#include "core/datatype.h"
#include "core/driver.h"
#include "core/errors.h"
#include "core/p2p.h"
#include "core/validate.h"
#include "ipc/backend.h"
#include "sparse/sparse.h"
#include "tucoll.h"

namespace tucoll::sparse {
namespace {

struct Args {
    bool variable;
    int send_nnz, send_size;
    const int *dest;
    int sendcount;            // alltoall_crs
    const int *sendcounts;    // alltoallv_crs
    const int *sdispls;       // alltoallv_crs
    MPI_Datatype sendtype;
    const void *sendvals;
    int *recv_nnz;
    int *recv_size;           // alltoallv_crs
    int **src;
    int recvcount;            // alltoall_crs
    int **recvcounts, **rdispls;  // alltoallv_crs
    MPI_Datatype recvtype;
    void **recvvals;
    MPI_Comm comm;
    const char *fn;
};

// Storage of the packed send side, when the send type is not contiguous.
struct SendPacking {
    std::vector<char> bytes;
    std::vector<int64_t> offsets;
    std::vector<int64_t> counts, displs;  // the messages' elements
    std::vector<int64_t> expected;    // TUCOLL_CHECK=global
    std::vector<int64_t> to_each;     // TUCOLL_CHECK=global: (messages, bytes) per destination
};

int check(Context &ctx, const Args &a, TypeInfo *st, TypeInfo *rt) {
    const int p = ctx.size();
    const char *fn = a.fn;
    if (a.send_nnz < 0) return failf(MPI_ERR_COUNT, "%s: send_nnz = %d is negative", fn, a.send_nnz);
    if (a.send_nnz > 0 && a.dest == nullptr) return failf(MPI_ERR_ARG, "%s: dest is NULL", fn);
    for (int i = 0; i < a.send_nnz; ++i) {
        if (a.dest[i] < 0 || a.dest[i] >= p) {
            return failf(MPI_ERR_RANK, "%s: dest[%d] = %d is not a rank of the communicator (size %d)", fn, i,
                         a.dest[i], p);
        }
    }
    if (a.recv_nnz == nullptr || a.src == nullptr || a.recvvals == nullptr ||
        (a.variable && (a.recv_size == nullptr || a.recvcounts == nullptr || a.rdispls == nullptr))) {
        return failf(MPI_ERR_ARG, "%s: an output pointer is NULL", fn);
    }
    if (*a.recv_nnz < -1) return failf(MPI_ERR_COUNT, "%s: recv_nnz = %d (use -1 for unknown)", fn, *a.recv_nnz);
    if (a.variable && *a.recv_size < -1) return failf(MPI_ERR_COUNT, "%s: recv_size = %d (use -1 for unknown)", fn, *a.recv_size);
    TUCOLL_TRY(prefix_error(TypeInfo::query(a.sendtype, st), {fn, ": sendtype: "}));
    TUCOLL_TRY(prefix_error(TypeInfo::query(a.recvtype, rt), {fn, ": recvtype: "}));
    // tucoll allocates the receive side, element k at k * extent + true_lb from its start.
    if (rt->true_lb < 0) return failf(MPI_ERR_TYPE, "%s: recvtype with a negative lower bound is not supported", fn);
    if (rt->extent < 0) return failf(MPI_ERR_TYPE, "%s: recvtype with a negative extent is not supported", fn);
    int64_t elements = 0;
    if (a.variable) {
        if (a.send_nnz > 0 && (a.sendcounts == nullptr || a.sdispls == nullptr)) {
            return failf(MPI_ERR_ARG, "%s: sendcounts or sdispls is NULL", fn);
        }
        for (int i = 0; i < a.send_nnz; ++i) {
            if (a.sendcounts[i] < 0) return failf(MPI_ERR_COUNT, "%s: sendcounts[%d] = %d is negative", fn, i, a.sendcounts[i]);
            if (a.sdispls[i] < 0 || static_cast<int64_t>(a.sdispls[i]) + a.sendcounts[i] > a.send_size) {
                return failf(MPI_ERR_ARG, "%s: message %d (elements %d..%lld) lies outside send_size = %d", fn, i,
                             a.sdispls[i], static_cast<long long>(a.sdispls[i]) + a.sendcounts[i], a.send_size);
            }
            elements += a.sendcounts[i];
        }
    } else {
        if (a.sendcount < 0) return failf(MPI_ERR_COUNT, "%s: sendcount = %d is negative", fn, a.sendcount);
        if (a.recvcount < 0) return failf(MPI_ERR_COUNT, "%s: recvcount = %d is negative", fn, a.recvcount);
        // A rank without messages may pass any sendcount (check_consistency below).
        if (a.send_nnz > 0 && a.sendcount * st->size != a.recvcount * rt->size) {
            return failf(MPI_ERR_TRUNCATE, "%s: messages of %lld bytes are received as %lld", fn,
                         static_cast<long long>(a.sendcount * st->size), static_cast<long long>(a.recvcount * rt->size));
        }
        elements = static_cast<int64_t>(a.sendcount) * a.send_nnz;
    }
    // The exchanges read, pack and send the values on the host; the receive side is host memory
    // that tucoll allocates.
    if (elements > 0 && ipc::is_device_buffer(a.sendvals)) {
        return failf(MPI_ERR_BUFFER, "%s: sendvals is GPU memory; the sparse exchanges take host memory", fn);
    }
    return check_buffer(fn, "sendvals", a.sendvals, elements * st->size, *st);
}

// The send side as bytes: in place for contiguous types, packed otherwise.
int outgoing(Context &ctx, const Args &a, const TypeInfo &st, Outgoing *out) {
    out->count = a.send_nnz;
    out->dest = a.dest;
    out->bytes.resize(a.send_nnz);
    out->data.resize(a.send_nnz);
    out->constant = !a.variable;
    out->constant_bytes = a.variable ? 0 : a.sendcount * st.size;
    SendPacking &pack = ctx.workspace<SendPacking>();
    std::vector<int64_t> &counts = pack.counts, &displs = pack.displs;
    counts.resize(a.send_nnz);
    displs.resize(a.send_nnz);
    for (int i = 0; i < a.send_nnz; ++i) {
        counts[i] = a.variable ? a.sendcounts[i] : a.sendcount;
        displs[i] = a.variable ? a.sdispls[i] : static_cast<int64_t>(i) * a.sendcount;
        out->bytes[i] = counts[i] * st.size;
    }
    if (st.contiguous) {
        const char *base = static_cast<const char *>(a.sendvals) + st.true_lb;
        for (int i = 0; i < a.send_nnz; ++i) out->data[i] = base + displs[i] * st.extent;
        return MPI_SUCCESS;
    }
    pack.offsets.resize(a.send_nnz);
    int64_t total = 0;
    for (int i = 0; i < a.send_nnz; ++i) {
        pack.offsets[i] = total;
        total += out->bytes[i];
    }
    pack.bytes.resize(static_cast<size_t>(total));
    ctx.stats().pack_bytes += total;
    TUCOLL_TRY(pack_blocks(a.sendvals, a.sendtype, st, a.send_nnz, counts.data(), displs.data(), pack.bytes.data(),
                           pack.offsets.data(), ctx.comm()));
    for (int i = 0; i < a.send_nnz; ++i) out->data[i] = pack.bytes.data() + pack.offsets[i];
    return MPI_SUCCESS;
}

template <class T>
T *allocate(int64_t n, bool *failed) {
    if (n <= 0) return nullptr;
    T *p = static_cast<T *>(std::malloc(static_cast<size_t>(n) * sizeof(T)));
    if (p == nullptr) *failed = true;
    return p;
}

// The element counts and displacements of the received messages, kept from call to call.
struct Delivery {
    std::vector<int64_t> counts, displs;
};

// Typed results, sorted by source, in memory the caller releases with tucoll_free.
int deliver(Context &ctx, const Args &a, const TypeInfo &rt, Inbox &inbox) {
    inbox.sort_by_source();
    const int64_t n = static_cast<int64_t>(inbox.size());
    if (*a.recv_nnz >= 0 && n != *a.recv_nnz) {
        return failf(MPI_ERR_OTHER, "%s: recv_nnz = %d was given but %lld messages arrived", a.fn, *a.recv_nnz,
                     static_cast<long long>(n));
    }
    Delivery &d = ctx.workspace<Delivery>();
    std::vector<int64_t> &counts = d.counts, &displs = d.displs;
    counts.resize(n);
    displs.resize(n);
    int64_t elements = 0;
    for (int64_t i = 0; i < n; ++i) {
        const int64_t bytes = inbox.bytes(i);
        // A message of a zero-size type carries its element count only in the sender's
        // arguments: the receiver takes recvcount (alltoall_crs) or none (alltoallv_crs).
        const int64_t count = rt.size > 0 ? bytes / rt.size : a.variable ? 0 : a.recvcount;
        if ((rt.size == 0 && bytes != 0) || (rt.size > 0 && bytes % rt.size != 0) ||
            (!a.variable && count != a.recvcount)) {
            return failf(MPI_ERR_TRUNCATE, "%s: a %lld-byte message from rank %d does not match recvtype/recvcount",
                         a.fn, static_cast<long long>(bytes), inbox.source(i));
        }
        counts[i] = count;
        displs[i] = elements;
        elements += count;
    }
    // alltoallv_crs hands back counts, displacements and their total as ints.
    if (a.variable && elements > detail::count_limit()) {
        return failf(MPI_ERR_COUNT, "%s: %lld elements arrived, more than recv_size and rdispls (int) can describe",
                     a.fn, static_cast<long long>(elements));
    }
    if (a.variable && *a.recv_size >= 0 && elements != *a.recv_size) {
        return failf(MPI_ERR_OTHER, "%s: recv_size = %d was given but %lld elements arrived", a.fn, *a.recv_size,
                     static_cast<long long>(elements));
    }
    bool failed = false;
    int *src = allocate<int>(n, &failed);
    int *rcounts = a.variable ? allocate<int>(n, &failed) : nullptr;
    int *rdispls = a.variable ? allocate<int>(n, &failed) : nullptr;
    // Element k of the result lies at k * extent + true_lb; the last one ends true_extent later.
    const int64_t vals_bytes = elements > 0 ? (elements - 1) * rt.extent + rt.true_lb + rt.true_extent : 0;
    char *vals = allocate<char>(vals_bytes, &failed);
    if (failed) {
        std::free(src);
        std::free(rcounts);
        std::free(rdispls);
        std::free(vals);
        return failf(MPI_ERR_NO_MEM, "%s: cannot allocate the receive side", a.fn);
    }
    for (int64_t i = 0; i < n; ++i) {
        src[i] = inbox.source(i);
        if (a.variable) {
            rcounts[i] = static_cast<int>(counts[i]);
            rdispls[i] = static_cast<int>(displs[i]);
        }
        if (rt.contiguous) {
            local_copy(vals + rt.true_lb + displs[i] * rt.extent, inbox.data(i), inbox.bytes(i));
        } else {
            const int64_t zero = 0;
            const int rc = unpack_blocks(inbox.data(i), &zero, vals, a.recvtype, rt, 1, &counts[i], &displs[i], ctx.comm());
            if (rc != MPI_SUCCESS) {
                std::free(src);
                std::free(rcounts);
                std::free(rdispls);
                std::free(vals);
                return rc;
            }
        }
    }
    *a.recv_nnz = static_cast<int>(n);
    *a.src = src;
    *a.recvvals = vals;
    if (a.variable) {
        *a.recv_size = static_cast<int>(elements);
        *a.recvcounts = rcounts;
        *a.rdispls = rdispls;
    }
    return MPI_SUCCESS;
}

struct Prepared {
    TypeInfo send_type, recv_type;
};

struct SparseExchange {
    using Args = sparse::Args;
    using Prepared = sparse::Prepared;

    static const char *function(const Args &a) { return a.fn; }
    static MPI_Comm comm(const Args &a) { return a.comm; }
    static const RegistryBase &registry(const Args &a) {
        return a.variable ? alltoallv_crs_registry() : alltoall_crs_registry();
    }
    static int check(Context &ctx, const Args &a, Prepared *prep) {
        return sparse::check(ctx, a, &prep->send_type, &prep->recv_type);
    }
    // Collective, under TUCOLL_CHECK=global: every rank makes the same calls, whatever it finds, and
    // reports what it found after them. Knowing the receive count is a choice every rank makes
    // alike (the ranks that know it skip the discovery that the others wait in), and a count or
    // size given must be the one that arrives; for constant-size exchanges, every rank that sends
    // uses the size every rank expects.
    static int check_consistency(Context &ctx, const Args &a, const Prepared &prep) {
        const int p = ctx.size();
        const int knows = *a.recv_nnz >= 0 ? 1 : 0, knows_size = a.variable && *a.recv_size >= 0 ? 1 : 0;
        // MAX of each: whether any rank knows its count, whether any does not, whether any knows its size.
        int mine[3] = {knows, -knows, knows_size}, any[3] = {0, 0, 0};
        ctx.quiesce();
        TUCOLL_MPI(PMPI_Allreduce(mine, any, 3, MPI_INT, MPI_MAX, ctx.comm()));
        if (any[0] != -any[1]) {
            return failf(MPI_ERR_ARG, "recv_nnz is given on some ranks and -1 on others: give it on every rank or on "
                         "none (TUCOLL_CHECK=global)");
        }
        SendPacking &pack = ctx.workspace<SendPacking>();
        int64_t arriving[2] = {0, 0};  // messages and bytes sent to this rank
        if (any[0] || any[2]) {
            std::vector<int64_t> &to_each = pack.to_each;
            to_each.assign(2 * static_cast<size_t>(p), 0);
            for (int i = 0; i < a.send_nnz; ++i) {
                const int64_t elements = a.variable ? a.sendcounts[i] : a.sendcount;
                to_each[2 * a.dest[i]] += 1;
                to_each[2 * a.dest[i] + 1] += elements * prep.send_type.size;
            }
            TUCOLL_MPI(PMPI_Reduce_scatter_block(to_each.data(), arriving, 2, MPI_INT64_T, MPI_SUM, ctx.comm()));
        }
        if (!a.variable) {
            const int64_t expected = static_cast<int64_t>(a.recvcount) * prep.recv_type.size;
            const int64_t sent = static_cast<int64_t>(a.sendcount) * prep.send_type.size;
            pack.expected.assign(p, expected);
            // A rank without messages may pass any sendcount: it announces the expected size.
            TUCOLL_TRY(check_gathered_bytes(ctx, a.send_nnz > 0 ? sent : expected, pack.expected.data()));
        }
        if (knows && arriving[0] != *a.recv_nnz) {
            return failf(MPI_ERR_OTHER, "recv_nnz = %d was given but %lld messages are sent to rank %d "
                         "(TUCOLL_CHECK=global)", *a.recv_nnz, static_cast<long long>(arriving[0]), ctx.rank());
        }
        const int64_t size = prep.recv_type.size;
        if (knows_size && size > 0 && arriving[1] != *a.recv_size * size) {
            return failf(MPI_ERR_OTHER, "recv_size = %d was given but %lld elements are sent to rank %d "
                         "(TUCOLL_CHECK=global)", *a.recv_size, static_cast<long long>(arriving[1] / size), ctx.rank());
        }
        return MPI_SUCCESS;
    }
    static int run(Context &ctx, const Selection &sel, const Args &a, Prepared &prep, CallStats &stats) {
        const Algorithm &alg = a.variable ? alltoallv_crs_registry()[sel.index] : alltoall_crs_registry()[sel.index];
        stats.algorithm = sel.spec;
        stats.path = prep.send_type.contiguous ? "direct" : "packed send";
        Outgoing &out = ctx.workspace<Outgoing>();
        TUCOLL_TRY(outgoing(ctx, a, prep.send_type, &out));
        Inbox &inbox = ctx.workspace<Inbox>();
        inbox.clear();
        Known known;
        known.recv_nnz = *a.recv_nnz;
        const int rc = alg.run(ctx, out, inbox, known, stats);
        // Every send completes before the results are handed over.
        ctx.requests().fault(rc);
        ctx.requests().wait_all();
        if (ctx.requests().failed()) return MPI_SUCCESS;  // the driver returns the recorded error
        return deliver(ctx, a, prep.recv_type, inbox);
    }
};

int run(const char *spec, const Args &a) { return drive<SparseExchange>(spec, a); }

}  // namespace
}  // namespace tucoll::sparse

extern "C" int tucoll_alltoall_crs_with(const char *spec, int send_nnz, const int dest[], int sendcount,
                                        MPI_Datatype sendtype, const void *sendvals, int *recv_nnz, int **src,
                                        int recvcount, MPI_Datatype recvtype, void **recvvals, MPI_Comm comm) {
    const tucoll::sparse::Args args{false,    send_nnz, 0,        dest,     sendcount, nullptr,     nullptr,
                                    sendtype, sendvals, recv_nnz, nullptr,  src,       recvcount,   nullptr,
                                    nullptr,  recvtype, recvvals, comm,     "tucoll_alltoall_crs"};
    return tucoll::sparse::run(spec, args);
}

extern "C" int tucoll_alltoall_crs(int send_nnz, const int dest[], int sendcount, MPI_Datatype sendtype,
                                   const void *sendvals, int *recv_nnz, int **src, int recvcount,
                                   MPI_Datatype recvtype, void **recvvals, MPI_Comm comm) {
    return tucoll_alltoall_crs_with(nullptr, send_nnz, dest, sendcount, sendtype, sendvals, recv_nnz, src, recvcount,
                                    recvtype, recvvals, comm);
}

extern "C" int tucoll_alltoallv_crs_with(const char *spec, int send_nnz, int send_size, const int dest[],
                                         const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                                         const void *sendvals, int *recv_nnz, int *recv_size, int **src,
                                         int **recvcounts, int **rdispls, MPI_Datatype recvtype, void **recvvals,
                                         MPI_Comm comm) {
    const tucoll::sparse::Args args{true,     send_nnz, send_size, dest,     0,          sendcounts, sdispls,
                                    sendtype, sendvals, recv_nnz,  recv_size, src,       0,          recvcounts,
                                    rdispls,  recvtype, recvvals,  comm,      "tucoll_alltoallv_crs"};
    return tucoll::sparse::run(spec, args);
}

extern "C" int tucoll_alltoallv_crs(int send_nnz, int send_size, const int dest[], const int sendcounts[],
                                    const int sdispls[], MPI_Datatype sendtype, const void *sendvals, int *recv_nnz,
                                    int *recv_size, int **src, int **recvcounts, int **rdispls,
                                    MPI_Datatype recvtype, void **recvvals, MPI_Comm comm) {
    return tucoll_alltoallv_crs_with(nullptr, send_nnz, send_size, dest, sendcounts, sdispls, sendtype, sendvals,
                                     recv_nnz, recv_size, src, recvcounts, rdispls, recvtype, recvvals, comm);
}

extern "C" void tucoll_free(void *ptr) { std::free(ptr); }
