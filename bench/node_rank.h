// Which rank of its node this process is: ranks share the node's GPUs in turn by it (a world rank
// would put every rank of the second node on the GPUs in the first node's order).
#pragma once

namespace tucoll::bench {

// This rank's index among the ranks of MPI_COMM_WORLD on its node; asked of MPI once.
int node_local_rank();

}  // namespace tucoll::bench
