// The context's topology: which ranks share a node (detected, TUCOLL_PPN, tucoll_comm_set_ppn or
// tucoll_comm_set_node), agreed on by every rank, and the node communicator split from it.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <vector>

#include "core/context.h"
#include "core/errors.h"
#include "core/spec.h"

namespace tucoll {

namespace {

// TUCOLL_PPN: ranks per node to pretend, 0 when unset.
int env_ppn(int *out) {
    const char *text = std::getenv("TUCOLL_PPN");
    *out = 0;
    if (text == nullptr || *text == '\0') return MPI_SUCCESS;
    long value = 0;
    if (!parse_value(text, &value) || value <= 0 || value > (1L << 30)) {
        return failf(MPI_ERR_ARG, "TUCOLL_PPN=%s is not a positive integer", text);
    }
    *out = static_cast<int>(value);
    return MPI_SUCCESS;
}

}  // namespace

int Context::init_topology() {
    int ppn = 0;
    int rc = env_ppn(&ppn);
    // Every rank takes part in the topology exchange even when its TUCOLL_PPN is malformed, so
    // that no rank is left waiting; the error is reported afterwards.
    int rc2 = compute_topology(rc == MPI_SUCCESS ? ppn : 0, ppn > 0 ? Topology::kEnv : Topology::kSplitType);
    return rc != MPI_SUCCESS ? rc : rc2;
}

int Context::set_ppn(int ppn) {
    quiesce();  // outstanding schedules were planned on the old topology
    int bounds[2] = {ppn, -ppn};
    TUCOLL_MPI(MPI_Allreduce(MPI_IN_PLACE, bounds, 2, MPI_INT, MPI_MAX, comm_));
    if (bounds[0] != -bounds[1]) {
        return failf(MPI_ERR_ARG, "tucoll_comm_set_ppn: ranks passed different values (%d .. %d)",
                     -bounds[1], bounds[0]);
    }
    if (ppn < 0) return failf(MPI_ERR_ARG, "tucoll_comm_set_ppn: ppn=%d is negative", ppn);
    if (ppn > 0) return compute_topology(ppn, Topology::kApi);
    int env = 0;
    TUCOLL_TRY(env_ppn(&env));
    return compute_topology(env, env > 0 ? Topology::kEnv : Topology::kSplitType);
}

int Context::set_node(int node_id) {
    if (node_id < 0) return failf(MPI_ERR_ARG, "tucoll_comm_set_node: node id %d is negative", node_id);
    quiesce();
    return topology_from_node_ids(node_id, 0, Topology::kNodeIds);
}

int Context::compute_topology(int requested_ppn, Topology::Source source) {
    if (requested_ppn > 0) return topology_from_node_ids(rank_ / requested_ppn, requested_ppn, source);
    // A node is named by its lowest rank; topology_from_node_ids numbers nodes from there.
    MPI_Comm node_comm = MPI_COMM_NULL;
    TUCOLL_MPI(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node_comm));
    int lowest = rank_;
    const int rc = MPI_Allreduce(&rank_, &lowest, 1, MPI_INT, MPI_MIN, node_comm);
    MPI_Comm_free(&node_comm);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Allreduce");
    return topology_from_node_ids(lowest, 0, source);
}

int Context::topology_from_node_ids(int my_node_id, int requested_ppn, Topology::Source source) {
    // Each rank contributes (node id, its requested ppn) so that a TUCOLL_PPN set differently on
    // different ranks is caught before it can make ranks disagree about the schedule. PMPI: under
    // the interposer (libtucoll_preload) MPI_Allgather would come back into tucoll.
    int mine[2] = {my_node_id, requested_ppn};
    std::vector<int> all(2 * static_cast<size_t>(size_));
    TUCOLL_MPI(PMPI_Allgather(mine, 2, MPI_INT, all.data(), 2, MPI_INT, comm_));
    for (int r = 0; r < size_; ++r) {
        if (all[2 * r + 1] != requested_ppn) {
            return failf(MPI_ERR_ARG, "ranks per node differ between ranks (%d on rank %d, %d on rank %d); "
                         "set TUCOLL_PPN identically everywhere", requested_ppn, rank_, all[2 * r + 1], r);
        }
    }
    Topology t;
    t.source = source;
    t.node_of.resize(size_);
    t.local_rank_of.resize(size_);
    // Nodes are numbered in the order of their lowest rank, whatever ids the ranks gave.
    std::map<int, int> index_of_id;
    std::vector<int> node_sizes;
    for (int r = 0; r < size_; ++r) {
        auto [it, added] = index_of_id.emplace(all[2 * r], static_cast<int>(node_sizes.size()));
        if (added) node_sizes.push_back(0);
        t.node_of[r] = it->second;
        t.local_rank_of[r] = node_sizes[it->second]++;
    }
    t.num_nodes = static_cast<int>(node_sizes.size());
    t.node = t.node_of[rank_];
    t.local_rank = t.local_rank_of[rank_];
    t.local_size = node_sizes[t.node];
    t.max_local_size = *std::max_element(node_sizes.begin(), node_sizes.end());
    const bool equal = std::all_of(node_sizes.begin(), node_sizes.end(), [&](int n) { return n == node_sizes[0]; });
    t.ppn = equal ? node_sizes[0] : 0;
    t.regular = equal;
    for (int r = 0; r < size_ && t.regular; ++r) t.regular = (t.node_of[r] == r / t.ppn);
    t.node_first.assign(t.num_nodes + 1, 0);
    for (int n = 0; n < t.num_nodes; ++n) t.node_first[n + 1] = t.node_first[n] + node_sizes[n];
    t.node_ranks.resize(size_);
    for (int r = 0; r < size_; ++r) t.node_ranks[t.node_first[t.node_of[r]] + t.local_rank_of[r]] = r;
    topo_ = std::move(t);
    if (node_comm_ != MPI_COMM_NULL) TUCOLL_MPI(MPI_Comm_free(&node_comm_));  // nodes changed
    return MPI_SUCCESS;
}

int Context::node_comm(MPI_Comm *out) {
    if (node_comm_ == MPI_COMM_NULL) {
        quiesce();
        TUCOLL_MPI(MPI_Comm_split(comm_, topo_.node, topo_.local_rank, &node_comm_));
        TUCOLL_MPI(MPI_Comm_set_errhandler(node_comm_, MPI_ERRORS_RETURN));
    }
    *out = node_comm_;
    return MPI_SUCCESS;
}

}  // namespace tucoll
