// Per-communicator state, cached as an MPI attribute on the user's communicator and released
// by its delete callback: a private duplicate (library messages never match user messages),
// the node topology, reusable scratch buffers and the last call's statistics.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <typeindex>
#include <unordered_map>
#include <vector>

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

// Reusable buffers. Data slots hold payload bytes; index slots hold O(P) metadata.
//   kPackSend/kPackRecv  packed forms of non-contiguous datatypes
//   kTemp                blocks held between rounds (TuNA's T)
//   kInter               blocks waiting for the inter-node phase of hierarchical algorithms
//   kStaging             blocks in flight within a round that have nowhere else to be
enum class Slot { kPackSend, kPackRecv, kTemp, kInter, kStaging, kCount };
enum class IndexSlot {
    kSendCounts, kSendDispls, kRecvCounts, kRecvDispls,  // byte view of the user's arguments
    kMeta0, kMeta1, kMeta2, kMeta3,                      // per-algorithm bookkeeping
    kInter,                                              // sizes of blocks waiting for the inter-node phase
    kCount
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
    int rank() const { return rank_; }
    int size() const { return size_; }
    const Topology &topology() const { return topo_; }

    // Collective: declares `ppn` ranks per node (0 = detect again).
    int set_ppn(int ppn);
    // Collective: each rank declares the node it sits on (any non-negative id).
    int set_node(int node_id);

    // A buffer of at least `bytes` bytes for `slot`, 64-byte aligned, reused across calls;
    // nullptr when memory runs out (and possibly when bytes == 0). Contents are not preserved
    // when it grows.
    char *scratch(Slot slot, size_t bytes);
    void release_scratch();

    // A reusable vector of `n` zeroed 64-bit integers.
    std::vector<int64_t> &index(IndexSlot slot, size_t n);

    // A communicator of this rank's node (ranks in local order), split from the private
    // communicator on first use — collective then — and kept until the topology changes.
    int node_comm(MPI_Comm *out);

    // An RMA window of at least `bytes` bytes (disp_unit 1) over the private communicator, kept
    // for the next call. Collective; every rank must ask for the same size.
    int window(size_t bytes, MPI_Win *win, char **base);

    // A per-communicator object of type W (default-constructed on first use) in which an
    // algorithm keeps what it reuses from call to call: vectors, schedules, request arrays.
    template <class W>
    W &workspace() {
        std::shared_ptr<void> &slot = workspaces_[std::type_index(typeid(W))];
        if (!slot) slot = std::make_shared<W>();
        return *static_cast<W *>(slot.get());
    }

    CallStats &stats() { return stats_; }
    bool has_stats() const { return !stats_.collective.empty(); }

  private:
    Context() = default;
    int init(MPI_Comm user);
    int compute_topology(int requested_ppn, Topology::Source source);
    int topology_from_node_ids(int my_node_id, int requested_ppn, Topology::Source source);

    MPI_Comm user_ = MPI_COMM_NULL;
    MPI_Comm comm_ = MPI_COMM_NULL;
    int rank_ = 0;
    int size_ = 1;
    Topology topo_;
    struct Buffer {
        char *data = nullptr;
        size_t capacity = 0;
    };
    Buffer buffers_[static_cast<int>(Slot::kCount)];
    std::vector<int64_t> indices_[static_cast<int>(IndexSlot::kCount)];
    CallStats stats_;
    MPI_Comm node_comm_ = MPI_COMM_NULL;
    MPI_Win window_ = MPI_WIN_NULL;
    char *window_base_ = nullptr;
    size_t window_bytes_ = 0;
    std::unordered_map<std::type_index, std::shared_ptr<void>> workspaces_;

    friend int delete_context(MPI_Comm, int, void *, void *);
};

}  // namespace tucoll
