// staged: the exchange for buffers the host algorithms cannot touch (GPU memory with an MPI that is
// not CUDA-aware): every block is copied into host memory, `inner` runs there, and the received
// blocks are copied back. On host buffers it is the same exchange with two extra copies, which is
// how its logic is tested here; on device buffers the copies are cudaMemcpyAsync on tucoll's
// stream (ipc/backend.h: copy_between), one per run of blocks adjacent on both sides (one for a
// packed buffer, not P), and one synchronisation for all of them. Send and receive buffers may be
// in different memories (a device send buffer and a host receive buffer, or the reverse).
// The host buffers are the workspace's, reused from call to call.
#include <algorithm>

#include "alltoallv/alltoallv.h"
#include "core/context.h"
#include "core/errors.h"
#include "ipc/backend.h"

namespace tucoll::alltoallv {
namespace {

// The host algorithms staged can run, in the order of the `inner` parameter's choices.
const char *const kInner[] = {"spreadout", "pairwise", "scattered", "tuna", "bruck2"};

struct StagedWorkspace {
    ScratchBuffer send, recv;
    std::vector<int64_t> sdispls, rdispls;  // back to back in the host buffers
    Selection inner;                        // resolved for this communicator
    int inner_choice = -1;
};

// Lays `n` blocks of `counts` out back to back; returns the total.
int64_t back_to_back(const int64_t counts[], int n, std::vector<int64_t> &displs) {
    displs.resize(n);
    int64_t total = 0;
    for (int i = 0; i < n; ++i) {
        displs[i] = total;
        total += counts[i];
    }
    return total;
}

// Copies block i (counts[i] bytes) from src + src_displs[i] to dst + dst_displs[i] for every i,
// one copy per run of non-empty blocks that follow each other on both sides: each copy across a
// GPU's link costs a launch, which P small copies would pay P times.
int copy_blocks(char *dst, const int64_t dst_displs[], const char *src, const int64_t src_displs[],
                const int64_t counts[], int n, bool device) {
    int i = 0;
    while (i < n) {
        if (counts[i] == 0) {
            ++i;
            continue;
        }
        const int64_t from = src_displs[i], to = dst_displs[i];
        int64_t length = counts[i];
        int j = i + 1;
        for (; j < n; ++j) {
            if (counts[j] == 0) continue;
            if (src_displs[j] != from + length || dst_displs[j] != to + length) break;
            length += counts[j];
        }
        TUCOLL_TRY(ipc::copy_between(dst + to, src + from, length, device));
        i = j;
    }
    return ipc::finish_copies(device);  // one synchronisation for all of them
}

Task run(Context &ctx, const Call &call, const Params &params, CallStats &stats) {
    const int p = ctx.size();
    StagedWorkspace &ws = ctx.workspace<StagedWorkspace>();
    const int choice = static_cast<int>(params.get("inner"));
    if (ws.inner_choice != choice) {
        TUCOLL_CO_TRY(resolve_spec(registry(), kInner[choice], ctx.scope(), &ws.inner));
        ws.inner_choice = choice;
    }
    const int64_t send_total = back_to_back(call.scounts, p, ws.sdispls);
    const int64_t recv_total = back_to_back(call.rcounts, p, ws.rdispls);
    char *send = ws.send.get(static_cast<size_t>(send_total));
    char *recv = ws.recv.get(static_cast<size_t>(recv_total));
    if ((send == nullptr && send_total > 0) || (recv == nullptr && recv_total > 0)) {
        co_return failf(MPI_ERR_NO_MEM, "staged: cannot allocate %lld bytes of host buffers",
                     static_cast<long long>(send_total + recv_total));
    }
    stats.scratch_bytes += send_total + recv_total;
    const bool device = ipc::crosses_device_link(call.sbuf, call.rbuf);
    TUCOLL_CO_TRY(copy_blocks(send, ws.sdispls.data(), call.sbuf, call.sdispls, call.scounts, p, device));
    const Call host{call.typed, send, call.scounts, ws.sdispls.data(), recv, call.rcounts, ws.rdispls.data(),
                    call.known_max_block, call.uniform};
    const Algorithm &inner = registry()[ws.inner.index];
    stats.add_path({"staged through host memory: ", ws.inner.spec});
    const int rc = co_await inner.run(ctx, host, ws.inner.params, stats);
    // The inner exchange's requests complete before its results are copied back.
    ctx.requests().fault(rc);
    co_await ctx.requests().completion();
    if (ctx.requests().failed()) co_return MPI_SUCCESS;
    co_return copy_blocks(call.rbuf, call.rdispls, recv, ws.rdispls.data(), call.rcounts, p, device);
}

}  // namespace

Algorithm staged_algorithm() {
    Algorithm a;
    a.name = "staged";
    a.summary = "copies every block to host memory, runs a host algorithm there, copies the result back "
                "(GPU buffers with an MPI that is not CUDA-aware)";
    a.params = {{"inner", Bound::constant(0), Bound::constant(4), 0, "the host algorithm run on the staged copies",
                 Grid::kDefault, Bound::unbounded(), {kInner, kInner + 5}}};
    a.constraints = "two more copies of every block than `inner`; host buffers of the send and receive totals, "
                    "kept per communicator";
    a.flows_per_rank = [](const Params &params, const Scope &scope) -> int64_t {
        Selection sel;
        if (resolve_spec(registry(), kInner[params.get("inner")], scope, &sel) != MPI_SUCCESS) return -1;
        const AlgorithmInfo &inner = registry().info(sel.index);
        return inner.flows_per_rank ? inner.flows_per_rank(sel.params, scope) : 1;
    };
    a.skips_empty_blocks = true;  // as its default inner, spreadout; tuna and bruck2 post every message
    a.run = run;
    return a;
}

}  // namespace tucoll::alltoallv
