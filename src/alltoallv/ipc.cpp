// ipc: seed 002's all-to-all over inter-process copies. Each rank exposes its receive buffer to the
// ranks of its node; a sender copies its block for every local peer straight into that peer's
// buffer at the peer's receive displacement (gathered first, §III-C), in the order self, local+1,
// local+2, ... so that each receiver is written by one sender at a time (§III-A). Blocks for
// ranks on other nodes go as messages, posted before the copies so that they fly while the copies
// run (§III-B). Blocks below `ipc_threshold` bytes go as messages inside the node too (a copy
// costs a handle and a synchronisation that small messages do not repay); above, `copy` picks the
// engine (kernel, memcpy, or hybrid: kernel below `memcpy_threshold`, the copy engine from there).
//
// What "expose" and "copy into" are belongs to a backend (ipc/backend.h): process_vm_writev
// between host processes, CUDA IPC handles on GPUs, direct copies in a SimGrid simulation.
//
// Device buffers with an MPI that does not take them (ipc::mpi_takes_device_buffers): nothing on
// a device buffer may reach MPI, so every block of the node is copied (ipc_threshold 0), and
// what copies cannot serve is staged through host memory by `staged`, on every rank alike:
// communicators of several nodes, send and receive buffers in different memories (MPI_IN_PLACE
// arrives so: its send side is copied out first), managed memory, a backend refused, and a rank
// of the node that could not expose its buffer (it publishes an invalid descriptor, so that no
// rank waits for another in a collective it skipped). With a CUDA-aware MPI a rank that could not
// expose its buffer receives its node's blocks as messages. Every rank passes buffers of the same
// kind (a pointer with nothing behind it counts as the other buffer's kind).
//
// Synchronisation per call, by messages between the ranks of a node on the context's
// communicator (never the node's collectives: a nonblocking call posts them from later steps of its
// schedule, and MPI matches a communicator's collectives by the order in which each rank starts
// them, which concurrent operations' later steps would not keep): each rank sends every local peer
// where it wants that peer's block (which also tells a sender that its receiver has entered the
// call and exposed a live buffer), and at the end its error flag, sent once its copies have landed:
// the flags of all its local peers tell a rank that every copy into it has landed, and carry one
// rank's failure (a block larger than its place) to every rank of the node. The first call on a
// communicator also agrees, in one MPI_Allreduce, whether the backend is usable: that call blocks
// at its start; later ones are schedules whose start is local.
#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>

#include "alltoallv/common.h"
#include "core/errors.h"
#include "core/mpi_step.h"
#include "ipc/backend.h"

namespace tucoll::alltoallv {
namespace {

// What a receiver tells each sender of its node: where its block goes and how large it must be,
// and what its buffers are, so that every rank of the node decides alike how the call runs.
enum SlotFlags : int32_t {
    kExposed = 1,  // `where` is valid (else the receiver could not expose its buffer)
    kDevice = 2,   // its buffers are device memory
    kStaging = 4,  // only `staged` can serve it (mixed memories, managed memory)
    kNothing = 8,  // it receives nothing: nothing to expose, nothing to copy into it
};
struct Slot {
    ipc::Descriptor where;
    int64_t offset;
    int64_t bytes;
    int32_t flags;
    int32_t unused;
};

// Owners of what backends open (ipc/opened_cache.h): one per communicator's workspace.
std::atomic<uint64_t> next_owner{1};

struct IpcWorkspace {
    IpcWorkspace() = default;
    IpcWorkspace(const IpcWorkspace &) = delete;
    IpcWorkspace &operator=(const IpcWorkspace &) = delete;
    // The communicator is freed: what only it opened is closed.
    ~IpcWorkspace() {
        for (ipc::Backend *b : used) b->release(owner);
    }
    const uint64_t owner = next_owner++;
    std::vector<ipc::Backend *> used;  // the backends that opened peers for it
    Selection staged;                  // resolved on first use

    // Whether every rank of the communicator can copy into the ranks of its node with the backend:
    // agreed on the first call (-1: not yet), then kept. 0: every call exchanges by messages.
    int usable = -1;
};

// What one call's ranks of a node tell each other (an operation's own: calls outstanding at once on
// a communicator each have theirs).
struct IpcCallSlots {
    std::vector<Slot> wanted;    // per local peer: what this rank wants from it
    std::vector<Slot> owed;      // per local peer: what it wants from this rank
    std::vector<Slot> exposed;   // uniform path: every local rank's descriptor and block size
    std::vector<int32_t> failed;  // per local peer: its error flag at the end (this rank's at its own index)
};

// This rank's buffers: device memory or not, and whether they need staging. A null pointer
// takes the other buffer's kind.
struct Buffers {
    bool device = false;
    bool staging = false;
};

Buffers buffers_of(const Call &call) {
    const ipc::Memory none = ipc::Memory::kHost;
    ipc::Memory send = call.sbuf != nullptr ? ipc::memory_of(call.sbuf) : none;
    ipc::Memory recv = call.rbuf != nullptr ? ipc::memory_of(call.rbuf) : none;
    if (call.sbuf == nullptr) send = recv;
    if (call.rbuf == nullptr) recv = send;
    Buffers b;
    b.device = send != none || recv != none;
    b.staging = b.device && (send != recv || send == ipc::Memory::kManaged);
    return b;
}

struct Settings {
    ipc::CopyMode copy;
    int64_t ipc_threshold, memcpy_threshold;
    bool overlap, uniform_check;
};

Settings settings_of(const Params &params) {
    return {static_cast<ipc::CopyMode>(params.get("copy")), params.get("ipc_threshold"),
            params.get("memcpy_threshold"), params.get("overlap") != 0, params.get("uniform_check") != 0};
}

// Every block the same size B at offset j * B on every rank, on both sides? Known without
// communication for MPI_Alltoall (tucoll_alltoall builds exactly that layout); for alltoallv one
// MPI_Allreduce of min and max (seed 002), when asked for: the schedule's first step, started at
// the call's start (blocking where `block`).
Task uniform_block(Context &ctx, const Call &call, bool check, bool block, int64_t *out) {
    *out = -1;
    const int p = ctx.size();
    if (call.uniform) {
        for (int j = 0; j < p; ++j) TUCOLL_ASSERT(call.rdispls[j] == j * call.rcounts[0]);
        *out = call.rcounts[0];
        co_return MPI_SUCCESS;
    }
    if (!check) co_return MPI_SUCCESS;
    int64_t lo = call.scounts[0], hi = call.scounts[0];
    bool regular = true;
    for (int j = 0; j < p; ++j) {
        lo = std::min({lo, call.scounts[j], call.rcounts[j]});
        hi = std::max({hi, call.scounts[j], call.rcounts[j]});
        regular = regular && call.rdispls[j] == j * call.rcounts[0];
    }
    // min of lo, max of hi, max of "irregular here" in one reduction.
    int64_t mine[3] = {lo, -hi, regular ? 0 : -1}, all[3];
    TUCOLL_CO_TRY(co_await allreduce_step(ctx, mine, all, 3, MPI_INT64_T, MPI_MIN, block));
    if (all[2] == 0 && all[0] == -all[1]) *out = all[0];
    co_return MPI_SUCCESS;
}

// The first call on a communicator: can every rank copy into every rank of its node? The answer
// is the same on all ranks (one MPI_Allreduce); a refusal is logged once, by the ranks that met it.
// Only what this call's buffers say about the backend counts: a rank that stages this call votes
// yes without asking, and a peer with buffers of the other kind is not asked (the call then ends
// in an error about the kinds, not in a backend refused for the communicator's later calls).
int agree_usable(Context &ctx, ipc::Backend &backend, const IpcWorkspace &ws, const IpcCallSlots &slots,
                 const Buffers &mine, bool device_only, int local_size, int local_rank, int *usable) {
    ipc::Refusal why;
    int ok = mine.staging || backend.available(&why) ? 1 : 0;
    for (int j = 0; ok && !mine.staging && j < local_size; ++j) {
        const int32_t flags = slots.owed[j].flags;
        if (j == local_rank || !(flags & kExposed) || ((flags & kDevice) != 0) != mine.device) continue;
        const int rc = backend.verify(slots.owed[j].where, ws.owner);
        if (rc != MPI_SUCCESS) {
            ok = 0;
            std::snprintf(why.reason, sizeof why.reason, "%s", last_message(rc).c_str());
        }
    }
    ctx.quiesce();
    TUCOLL_MPI(MPI_Allreduce(&ok, usable, 1, MPI_INT, MPI_MIN, ctx.comm()));
    if (!ok && verbose()) {
        log_line(std::string("ipc: rank ") + std::to_string(ctx.rank()) + ": the " + backend.name() +
                 " backend is refused (" + why.reason + "): this communicator exchanges by " +
                 (device_only ? "staging through host memory" : "messages"));
    }
    return MPI_SUCCESS;
}

// One message of the node's protocol to or from a local peer, in this call's tags. Raw requests,
// not Requests' data messages: a rank that has failed still sends what it says (Requests would
// send it empty).
int post_node_message(Context &ctx, void *buf, int bytes, int local_peer, Tag phase, bool send) {
    const int peer = ctx.topology().rank_of(ctx.topology().node, local_peer);
    Requests &reqs = ctx.requests();
    MPI_Request req = MPI_REQUEST_NULL;
    if (send) {
        TUCOLL_MPI(MPI_Isend(buf, bytes, MPI_BYTE, peer, reqs.tag(phase), ctx.comm(), &req));
    } else {
        TUCOLL_MPI(MPI_Irecv(buf, bytes, MPI_BYTE, peer, reqs.tag(phase), ctx.comm(), &req));
    }
    reqs.adopt(req);
    return MPI_SUCCESS;
}

// Where this rank wants each local peer's block, and what each wants from it: posted here, read by
// read_slots once they have arrived. A buffer the backend cannot expose is published as such (no
// kExposed), never skipped: every rank of the node takes part in the exchange whatever it met.
int post_slots(Context &ctx, const Call &call, ipc::Backend &backend, const Buffers &mine, int64_t uniform,
               IpcCallSlots &slots) {
    const Topology &topo = ctx.topology();
    const int q = topo.local_size, me = topo.local_rank;
    int64_t extent = 0;
    for (int j = 0; j < ctx.size(); ++j) {
        if (call.rcounts[j] > 0) extent = std::max(extent, call.rdispls[j] + call.rcounts[j]);
    }
    ipc::Descriptor where{};
    int32_t flags = (mine.device ? kDevice : 0) | (mine.staging ? kStaging : 0);
    if (extent == 0) {
        flags |= kNothing;
    } else if (!mine.staging) {
        const int rc = backend.expose(call.rbuf, extent, &where);
        if (rc == MPI_SUCCESS) {
            flags |= kExposed;
        } else if (verbose()) {
            log_line("ipc: rank " + std::to_string(ctx.rank()) + " cannot expose its receive buffer (" +
                     last_message(rc) + "): its node serves it otherwise");
        }
    }
    slots.wanted.resize(q);
    slots.owed.resize(q);
    slots.exposed.resize(q);
    for (int j = 0; j < q; ++j) {
        const int from = topo.rank_of(topo.node, j);
        // Uniform: offsets follow from the ranks, so only each receiver's descriptor and block size
        // travel (the size, so that a rank whose blocks are larger than its receivers' is caught).
        slots.wanted[j] = uniform >= 0 ? Slot{where, from * uniform, uniform, flags, 0}
                                       : Slot{where, call.rdispls[from], call.rcounts[from], flags, 0};
    }
    slots.exposed[me] = Slot{where, 0, uniform, flags, 0};
    slots.owed[me] = slots.wanted[me];
    std::vector<Slot> &out = uniform >= 0 ? slots.exposed : slots.wanted;
    std::vector<Slot> &in = uniform >= 0 ? slots.exposed : slots.owed;
    for (int j = 0; j < q; ++j) {
        if (j == me) continue;
        TUCOLL_TRY(post_node_message(ctx, &in[j], sizeof(Slot), j, kTagMeta, /*send=*/false));
        TUCOLL_TRY(post_node_message(ctx, &out[uniform >= 0 ? me : j], sizeof(Slot), j, kTagMeta, /*send=*/true));
    }
    return MPI_SUCCESS;
}

void read_slots(Context &ctx, int64_t uniform, IpcCallSlots &slots) {
    if (uniform < 0) return;  // the owed slots arrived as such
    const int me = ctx.rank();
    for (size_t j = 0; j < slots.owed.size(); ++j) {
        const Slot &e = slots.exposed[j];
        slots.owed[j] = Slot{e.where, me * e.bytes, e.bytes, e.flags, 0};
    }
}

// Whether a block `bytes` long that `slot`'s receiver expects goes as a message inside the node:
// the receiver could not expose its buffer, or the block is below ipc_threshold. Both sides ask it
// of the receiver's slot, so they agree.
bool local_message(const Slot &slot, int64_t bytes, const Settings &s) {
    return bytes > 0 && (!(slot.flags & kExposed) || bytes < s.ipc_threshold);
}

// Messages to and from the ranks of other nodes (remote), or of this node where local_message
// says so, all posted at once in spread-out order. The sender sends what it has, so a
// disagreement ends in an error on the receiver, never in a wait.
void post_messages(Context &ctx, const Call &call, const Settings &s, const IpcCallSlots &slots, bool remote,
                   CallStats &stats) {
    const Topology &topo = ctx.topology();
    const int p = ctx.size(), me = ctx.rank();
    Requests &reqs = ctx.requests();
    for (int i = 1; i < p; ++i) {
        const int from = (me - i + p) % p;
        const bool is_remote = topo.node_of[from] != topo.node;
        if (is_remote != remote) continue;
        const int64_t bytes = call.rcounts[from];
        if (remote ? bytes > 0 : local_message(slots.wanted[topo.local_rank_of[from]], bytes, s)) {
            reqs.recv(call.rbuf + call.rdispls[from], bytes, from, kTagData, ctx.comm());
        }
    }
    for (int i = 1; i < p; ++i) {
        const int to = (me + i) % p;
        const bool is_remote = topo.node_of[to] != topo.node;
        if (is_remote != remote) continue;
        const int64_t bytes = call.scounts[to];
        const Slot &slot = slots.owed[topo.local_rank_of[to]];
        if (remote ? bytes > 0 : local_message(slot, slot.bytes, s)) {
            stats.count_send(bytes);
            reqs.send(call.sbuf + call.sdispls[to], bytes, to, kTagData, ctx.comm());
        }
    }
}

// The intra-node copies, self first, then local+1, local+2, ...
void copy_into_node(Context &ctx, const Call &call, const Settings &s, ipc::Backend &backend, const IpcWorkspace &ws,
                    const IpcCallSlots &slots, CallStats &stats) {
    const Topology &topo = ctx.topology();
    const int q = topo.local_size;
    Requests &reqs = ctx.requests();
    for (int step = 0; step < q; ++step) {
        const int j = ipc::peer_at(topo.local_rank, q, step);
        const int to = topo.rank_of(topo.node, j);
        const Slot &slot = slots.owed[j];
        const int64_t have = call.scounts[to];
        if (to != ctx.rank() && local_message(slot, slot.bytes, s)) continue;  // posted by post_messages
        if (have != slot.bytes) {
            // Nothing is copied; the node's closing reduction tells the receiver.
            reqs.fault(failf(have > slot.bytes ? MPI_ERR_TRUNCATE : MPI_ERR_COUNT,
                             "rank %d has %lld bytes for rank %d, which expects %lld", ctx.rank(),
                             static_cast<long long>(have), to, static_cast<long long>(slot.bytes)));
            continue;
        }
        if (slot.bytes == 0 || reqs.failed()) continue;
        if (to == ctx.rank()) {
            reqs.fault(backend.copy_self(call.rbuf + slot.offset, call.sbuf + call.sdispls[to], slot.bytes,
                                         ipc::engine_for(slot.bytes, s.copy, s.memcpy_threshold)));
            continue;
        }
        int rc = backend.open(slot.where, ws.owner);
        if (rc == MPI_SUCCESS) {
            rc = backend.put(slot.where, slot.offset, call.sbuf + call.sdispls[to], slot.bytes,
                             ipc::engine_for(slot.bytes, s.copy, s.memcpy_threshold));
        }
        reqs.fault(rc);
        ++stats.rounds;
    }
    reqs.fault(backend.flush());
}

// The exchange by `staged` (host memory, the MPI's messages), for device buffers that copies
// cannot serve with an MPI that does not take them.
Task run_staged(Context &ctx, const Call &call, IpcWorkspace &ws, const char *why, CallStats &stats) {
    if (ws.staged.spec.empty()) TUCOLL_CO_TRY(resolve_spec(registry(), "staged", ctx.scope(), &ws.staged));
    stats.add_path({"ipc: ", why, ": staged"});
    co_return co_await registry()[ws.staged.index].run(ctx, call, ws.staged.params, stats);
}

// By messages only, with no synchronisation of the node: where the backend was refused on this
// communicator, and for MPI_Alltoall below ipc_threshold (seed 002 §III-A: small messages fall
// back to the library's optimised alltoall; every rank knows the block size, so all decide
// alike). A uniform exchange then is the MPI's own MPI_Alltoall on the byte view (its blocks lie
// at j * B on both sides), anything else the spread-out exchange.
Task run_messages(Context &ctx, const Call &call, const char *why, CallStats &stats) {
    stats.add_path(why);
    const int p = ctx.size(), me = ctx.rank();
    if (call.uniform && call.rcounts[0] <= INT_MAX) {
        const int block = static_cast<int>(call.rcounts[0]);
        for (int j = 0; j < p; ++j) TUCOLL_ASSERT(call.sdispls[j] == j * call.scounts[0]);
        if (call.scounts[me] != call.rcounts[me]) {
            co_return failf(MPI_ERR_TRUNCATE, "rank %d sends %lld bytes per block but expects %lld", me,
                            static_cast<long long>(call.scounts[me]), static_cast<long long>(call.rcounts[me]));
        }
        // Started at the call's start (see run), where every rank starts it.
        co_return co_await mpi_step(
            ctx,
            [&ctx, &call, block](MPI_Request *req) {
                const int rc =
                    req ? PMPI_Ialltoall(call.sbuf, block, MPI_BYTE, call.rbuf, block, MPI_BYTE, ctx.comm(), req)
                        : PMPI_Alltoall(call.sbuf, block, MPI_BYTE, call.rbuf, block, MPI_BYTE, ctx.comm());
                return rc == MPI_SUCCESS ? rc : mpi_fail(rc, req ? "PMPI_Ialltoall" : "PMPI_Alltoall");
            },
            [] {});
    }
    co_return co_await windowed_exchange(ctx, call, p - 1, p - 1, [me, p](int i) { return send_up(me, p, i); }, stats);
}

// What the ranks of this node said of their buffers (every rank of the node sees the same slots).
struct NodeBuffers {
    bool any_device = false, all_device = true, any_staging = false, all_exposed = true;
};

NodeBuffers node_buffers(const IpcCallSlots &slots) {
    NodeBuffers n;
    for (const Slot &slot : slots.owed) {
        n.any_device = n.any_device || (slot.flags & kDevice);
        n.all_device = n.all_device && (slot.flags & kDevice);
        n.any_staging = n.any_staging || (slot.flags & kStaging);
        n.all_exposed = n.all_exposed && (slot.flags & (kExposed | kNothing));
    }
    return n;
}

// Every rank of the node sends each local peer its error flag once its own copies have landed, and
// receives theirs: after this step every copy into this rank has landed, and one rank's failure is
// every rank's of the node.
Task close_node(Context &ctx, IpcCallSlots &slots) {
    const Topology &topo = ctx.topology();
    const int q = topo.local_size, me = topo.local_rank;
    Requests &reqs = ctx.requests();
    slots.failed.assign(q, 0);
    slots.failed[me] = reqs.failed() ? 1 : 0;
    for (int j = 0; j < q; ++j) {
        if (j == me) continue;
        TUCOLL_CO_TRY(post_node_message(ctx, &slots.failed[j], sizeof(int32_t), j, kTagInter, /*send=*/false));
        TUCOLL_CO_TRY(post_node_message(ctx, &slots.failed[me], sizeof(int32_t), j, kTagInter, /*send=*/true));
    }
    co_await reqs.completion();
    if (!slots.failed[me] && std::any_of(slots.failed.begin(), slots.failed.end(), [](int32_t f) { return f != 0; })) {
        reqs.fault(failf(MPI_ERR_OTHER, "another rank of this node failed in the ipc exchange"));
    }
    co_return MPI_SUCCESS;
}

Task run(Context &ctx, const Call &call, const Params &params, CallStats &stats) {
    Settings s = settings_of(params);
    const Topology &topo = ctx.topology();
    IpcWorkspace &ws = ctx.state<IpcWorkspace>();
    IpcCallSlots &slots = ctx.workspace<IpcCallSlots>();
    Requests &reqs = ctx.requests();
    const Buffers mine = buffers_of(call);
    // Without an MPI that takes device buffers, nothing on them may reach it: every block of the
    // node is copied, and what copies cannot serve is staged (on every rank alike: a
    // communicator of several nodes is known to all; the rest is seen in the node's slots).
    const bool device_only = mine.device && !ipc::mpi_takes_device_buffers();
    if (device_only) {
        s.ipc_threshold = 0;
        if (topo.num_nodes > 1) {
            co_return co_await run_staged(ctx, call, ws, "device buffers across nodes, MPI not CUDA-aware", stats);
        }
    }
    // The backend of this rank's memory (a rank that receives nothing may pass no receive buffer).
    ipc::Backend &backend = ipc::backend_for(mine.staging ? nullptr : call.rbuf != nullptr ? call.rbuf : call.sbuf);

    if (ws.usable == 0) {
        if (device_only) co_return co_await run_staged(ctx, call, ws, "backend refused, MPI not CUDA-aware", stats);
        co_return co_await run_messages(ctx, call, "ipc refused: messages", stats);
    }
    if (call.uniform && call.rcounts[0] < s.ipc_threshold) {
        co_return co_await run_messages(ctx, call, "ipc below threshold: the MPI's alltoall", stats);
    }
    // The first call agrees on the backend in a collective once the slots have arrived: it
    // completes what is outstanding on the communicator and runs to that collective at its start,
    // so that every rank starts the communicator's collectives in the same order (see the top).
    const bool agreeing = ws.usable < 0;
    if (agreeing) ctx.quiesce();
    int64_t uniform = -1;
    TUCOLL_CO_TRY(co_await uniform_block(ctx, call, s.uniform_check, agreeing, &uniform));
    TUCOLL_CO_TRY(post_slots(ctx, call, backend, mine, uniform, slots));
    if (agreeing) {
        reqs.wait_all();
    } else {
        co_await reqs.completion();
    }
    read_slots(ctx, uniform, slots);
    // From here on the backend may open peers for this communicator (agree_usable verifies them).
    if (std::find(ws.used.begin(), ws.used.end(), &backend) == ws.used.end()) ws.used.push_back(&backend);
    // Decided alike by every rank of the node from the same slots; device_only implies one node,
    // so these returns are the whole communicator's.
    const NodeBuffers n = node_buffers(slots);
    if (n.any_device && !n.all_device) {
        co_return failf(MPI_ERR_BUFFER, "ipc: the ranks of a node pass device and host buffers alike: every rank "
                                        "passes buffers of the same kind");
    }
    if (device_only && n.any_staging) co_return co_await run_staged(ctx, call, ws, "mixed or managed memory", stats);
    if (device_only && !n.all_exposed) {
        co_return co_await run_staged(ctx, call, ws, "a buffer that CUDA IPC cannot export", stats);
    }
    if (agreeing) {
        TUCOLL_CO_TRY(agree_usable(ctx, backend, ws, slots, mine, device_only, topo.local_size, topo.local_rank,
                                   &ws.usable));
        if (ws.usable == 0) co_return co_await run(ctx, call, params, stats);
    }
    if (n.any_staging) co_return co_await run_staged(ctx, call, ws, "mixed or managed memory", stats);
    stats.add_path({"ipc ", backend.name(), uniform >= 0 ? ", uniform" : ""});

    if (s.overlap) post_messages(ctx, call, s, slots, /*remote=*/true, stats);
    post_messages(ctx, call, s, slots, /*remote=*/false, stats);
    copy_into_node(ctx, call, s, backend, ws, slots, stats);
    if (!s.overlap) {
        co_await reqs.completion();
        post_messages(ctx, call, s, slots, /*remote=*/true, stats);
    }
    co_await reqs.completion();
    co_return co_await close_node(ctx, slots);
}

}  // namespace

Algorithm ipc_algorithm() {
    Algorithm a;
    a.name = "ipc";
    a.summary = "seed 002: copies straight into the receive buffers of the node's ranks (host memory: "
                "process_vm_writev; GPU memory: CUDA IPC; simulated: direct copies), inter-node messages overlapped";
    a.params = {
        {"copy", Bound::constant(0), Bound::constant(2), static_cast<long>(ipc::CopyMode::kHybrid),
         "engine of a copy: kernel (the copying processor), memcpy (a copy engine), hybrid (kernel below "
         "memcpy_threshold)",
         Grid::kChoices, Bound::unbounded(), {"kernel", "memcpy", "hybrid"}},
        {"ipc_threshold", Bound::constant(0), Bound::unbounded(), 4096,
         "blocks below this many bytes go as messages inside the node too (seed 002: 4 KiB on ThetaGPU)",
         Grid::kDefault},
        {"memcpy_threshold", Bound::constant(0), Bound::unbounded(), 512 * 1024,
         "hybrid: blocks of this many bytes and more are copied by the copy engine (seed 002: 512 KiB)",
         Grid::kDefault},
        {"overlap", Bound::constant(0), Bound::constant(1), 1,
         "1: messages to other nodes are posted before the copies and fly while they run; 0: after",
         Grid::kDefault},
        {"uniform_check", Bound::constant(0), Bound::constant(1), 0,
         "1: an MPI_Allreduce of min and max counts finds uniform alltoallv calls, which then gather only the "
         "buffers' descriptors (MPI_Alltoall knows it without the reduction)",
         Grid::kDefault},
    };
    a.constraints = "the ranks of a node must be able to copy into each other (host: process_vm_writev allowed, "
                    "as ptrace would be; else every call falls back to messages, logged once); receive types are "
                    "packed when not contiguous";
    a.flows_per_rank = flows_to_all_peers;
    a.skips_empty_blocks = true;
    a.run = run;
    return a;
}

}  // namespace tucoll::alltoallv
