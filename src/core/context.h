// Per-communicator state, cached as an MPI attribute on the user's communicator and released
// by its delete callback: a private duplicate (library messages never match user messages),
// the node topology, the resolved algorithm choices, the call's traffic, the workspaces in which
// algorithms keep what they reuse, and the last call's statistics.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/operation.h"
#include "core/p2p.h"
#include "core/record.h"
#include "core/registry.h"
#include "core/request.h"
#include "core/stats.h"

namespace tucoll {

struct Topology {
    enum Source { kSplitType = 0, kEnv = 1, kApi = 2, kNodeIds = 3 };
    int node = 0;
    int local_rank = 0;
    int local_size = 1;
    int num_nodes = 1;
    int ppn = 1;             // ranks per node if all nodes are equal, else 0
    int max_local_size = 1;  // largest node
    bool regular = true;     // ppn > 0 and rank r sits on node r / ppn
    Source source = kSplitType;
    std::vector<int> node_of;        // node of every rank of the communicator
    std::vector<int> local_rank_of;  // rank within its node of every rank
    std::vector<int> node_first;     // ranks of node n are node_ranks[node_first[n] .. node_first[n+1])
    std::vector<int> node_ranks;     // every rank, grouped by node, in local order

    // The rank holding local index `local` on `node`.
    int rank_of(int node, int local) const { return node_ranks[node_first[node] + local]; }
    int node_size(int node) const { return node_first[node + 1] - node_first[node]; }
};

// A data buffer an algorithm reuses from call to call: 64-byte aligned, grown to the largest
// request, released with its owner (platform::allocate: SMPI shared allocations in simulations of
// thousands of ranks).
class ScratchBuffer {
  public:
    ScratchBuffer() = default;
    ~ScratchBuffer();
    ScratchBuffer(const ScratchBuffer &) = delete;
    ScratchBuffer &operator=(const ScratchBuffer &) = delete;

    // At least `bytes` bytes; nullptr when memory runs out (bytes > 0). Contents are not kept
    // when it grows.
    char *get(size_t bytes);
    size_t capacity() const { return capacity_; }

    // How many buffers have been allocated in this process (tests check that a steady-state call
    // takes none), and a test hook: the next `count` allocations fail.
    static uint64_t allocations();
    static void fail_next_allocations(int count);

  private:
    char *data_ = nullptr;
    size_t capacity_ = 0;
};

class Context {
  public:
    // The context of `comm`, created on first use (collective over `comm` in that case).
    static int get(MPI_Comm comm, Context **out);
    // The context of `comm` if one exists; never communicates.
    static Context *peek(MPI_Comm comm);

    ~Context();
    Context(const Context &) = delete;
    Context &operator=(const Context &) = delete;

    MPI_Comm comm() const { return comm_; }  // private duplicate, errors returned
    MPI_Comm user_comm() const { return user_; }  // the program's communicator (for its name only)
    // The program freed its communicator; persistent plans made on it still start (core/persistent.h).
    bool retired() const { return retired_; }
    int rank() const { return rank_; }
    int size() const { return size_; }
    const Topology &topology() const { return topo_; }
    // What parameter bounds are evaluated against on this communicator.
    Scope scope() const { return Scope{size_, topo_.max_local_size}; }

    // Collective: declares `ppn` ranks per node (0 = detect again).
    int set_ppn(int ppn);
    // Collective: each rank declares the node it sits on (any non-negative id).
    int set_node(int node_id);

    // The choice for `registry` on this communicator: the call's spec, else the registry's
    // environment variable, else its default (registry.h: select_algorithm), resolved once per
    // communicator and text and then reused, so a call neither parses nor scans the registry.
    int select(const RegistryBase &registry, const char *explicit_spec, const Selection **out);

    // Starts a collective call on the active operation: its statistics reset for `collective`,
    // its traffic's error state cleared and its tags those of the next call number.
    CallStats &begin_call(const char *collective);
    // The traffic of the operation running now (a blocking call's, or the nonblocking one being
    // advanced: core/operation.h).
    Requests &requests() { return active_->requests(); }

    // The operation blocking calls run on, and the pool nonblocking calls take theirs from (a
    // pending call keeps its operation's scratch, so a steady state allocates nothing).
    Operation &blocking_operation() { return blocking_; }
    CollectiveOrder &collective_order() { return collective_order_; }
    Pending *acquire_pending();
    void release_pending(Pending *call);
    // The requests the program holds on this communicator (nonblocking calls not yet completed,
    // persistent plans). A nonblocking call still held when the communicator is freed has
    // completed (the free completes it) and is orphaned; a persistent plan keeps the context
    // alive, as MPI's persistent requests keep their communicator: it ends with the last one.
    int adopt_request(tucoll_plan *request);
    void forget_request(tucoll_plan *request);

    // Completes every operation outstanding on this communicator (not those running on the
    // stack): before anything collective that does not go through them — a blocking MPI
    // collective of the library's own, a change of topology or scratch — since their traffic,
    // which only tucoll advances, could not go on while it waits.
    void quiesce() { engine::complete_all(*this); }

    // A communicator of this rank's node (ranks in local order), split from the private
    // communicator on first use — collective then — and kept until the topology changes.
    int node_comm(MPI_Comm *out);

    // An RMA window of `bytes` bytes (disp_unit 1) over the private communicator, kept for the
    // next call. Collective; every rank must pass the same size.
    int window(size_t bytes, MPI_Win *win, char **base);

    // An object of type W (default-constructed on first use) in which an algorithm keeps what
    // it reuses from call to call: buffers, vectors, round plans. It belongs to the running
    // operation, so that operations outstanding at once never share one. Each algorithm family
    // names its own W, with named members.
    template <class W>
    W &workspace() {
        return active_->scratch().get<W>();
    }
    // An object of type W that lives as long as the communicator's context, shared by all its
    // operations: what is learnt about the communicator (auto's agreed table, opened IPC peers).
    template <class W>
    W &state() {
        return state_.get<W>();
    }
    // An object of type W for what a call's argument checks and preparation reuse in the
    // calling thread (check_disjoint's order, TUCOLL_CHECK=global's sizes, alltoall's uniform
    // counts). Neither the running operation's workspace nor the shared state: they run before
    // the call takes the engine's lock, while a progress thread may be advancing another of the
    // communicator's operations (which it makes the active one) and using the state. MPI lets one
    // thread at a time call a collective on a communicator, so nothing else touches these.
    template <class W>
    W &call_scratch() {
        return call_scratch_.get<W>();
    }
    // Frees every workspace and state (tucoll_comm_release_scratch); they are rebuilt on the
    // next call.
    void release_scratch();

    // What the environment says for this communicator: TUCOLL_CHECK=global, and the spec of
    // TUCOLL_<COLLECTIVE> (nullptr when unset or empty). Read when tucoll first uses the
    // communicator and again at tucoll_comm_release_scratch, not at every call: a getenv scans
    // the whole environment, which costs more than a small call's own checks.
    bool global_checks() const { return settings_.global_checks; }
    const char *environment_spec(const RegistryBase &registry) const;
    void read_settings();

    // The running operation's statistics; the last completed call's (tucoll_get_stats).
    CallStats &stats() { return active_->stats(); }
    const CallStats &last_stats() const { return *last_stats_; }
    bool has_stats() const { return !last_stats_->collective.empty(); }
    // A completed call's statistics become the last call's: a blocking call's stay where they
    // are (nothing copied per call), a nonblocking one's are copied (its operation is reused).
    void publish_stats(const CallStats &stats) {
        if (&stats == &blocking_.stats()) {
            last_stats_ = &stats;  // the usual case: nothing copied
        } else {
            publish_copy(stats);
        }
        if (log_choices_) log_choice(stats);
    }

    // The recording of this communicator's calls (TUCOLL_RECORD), made on its first recorded call.
    record::RecorderPtr &recorder() { return recorder_; }
    // Where this communicator's schedules keep their coroutine frames (core/task.h).
    FramePool &frames() { return frames_; }
    // Contexts are made in the same order on every rank (making one is collective).
    uint64_t creation_order() const { return created_; }

  private:
    Context() = default;
    int init(MPI_Comm user);
    int init_topology();  // TUCOLL_PPN, else detected (context_topology.cpp)
    int compute_topology(int requested_ppn, Topology::Source source);
    int topology_from_node_ids(int my_node_id, int requested_ppn, Topology::Source source);
    void release_window();  // collective: MPI_Win_free
    // The program's communicator is being freed (collectively): what is collective in the
    // context's end happens now. True when nothing holds the context any more.
    bool retire();
    void publish_copy(const CallStats &stats);
    // TUCOLL_VERBOSE: what ran, said by rank 0 once per collective and algorithm.
    void log_choice(const CallStats &stats);

    struct Settings {
        bool global_checks = false;
        std::vector<std::pair<const RegistryBase *, std::string>> specs;  // the set ones
    };

    struct CachedSelection {
        const RegistryBase *registry;
        bool explicit_spec;  // given in the call (strict), or from the environment/default (lenient)
        std::string text;
        Selection selection;
    };

    MPI_Comm comm_ = MPI_COMM_NULL;
    MPI_Comm user_ = MPI_COMM_NULL;
    int rank_ = 0;
    int size_ = 1;
    Topology topo_;
    Settings settings_;
    std::deque<CachedSelection> selections_;  // a deque: references stay valid as it grows
    uint64_t calls_ = 0;
    FramePool frames_;  // before the operations: their schedules' frames return to it
    CollectiveOrder collective_order_;  // the operations' places (core/collective_order.h)
    Operation blocking_{*this, /*deferred=*/false};
    Operation *active_ = &blocking_;
    std::vector<std::unique_ptr<Pending>> idle_pending_;
    std::vector<tucoll_plan *> live_requests_;
    CallStats completed_stats_;                       // the last nonblocking call's
    const CallStats *last_stats_ = &blocking_.stats();
    MPI_Comm node_comm_ = MPI_COMM_NULL;
    MPI_Win window_ = MPI_WIN_NULL;
    char *window_base_ = nullptr;
    void *window_memory_ = nullptr;  // MPI_Alloc_mem'd memory under MPI_Win_create, where used
    size_t window_bytes_ = 0;
    Workspaces state_;
    Workspaces call_scratch_;
    record::RecorderPtr recorder_;
    uint64_t created_ = 0;  // creation order, for releasing contexts alike on every rank
    bool retired_ = false;  // the program's communicator is freed; persistent plans hold it
    bool log_choices_ = false;        // rank 0 under TUCOLL_VERBOSE
    std::set<std::string> logged_;   // "alltoallv tuna:radix=2": what it has said

    friend class ActiveOperation;
    friend int delete_context(MPI_Comm, int, void *, void *);
    friend int cleanup_at_finalize(MPI_Comm, int, void *, void *);
};

}  // namespace tucoll
