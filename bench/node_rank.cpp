#include "node_rank.h"

#include <mpi.h>

namespace tucoll::bench {

int node_local_rank() {
    static const int local = [] {
        MPI_Comm node;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
        int r = 0;
        MPI_Comm_rank(node, &r);
        MPI_Comm_free(&node);
        return r;
    }();
    return local;
}

}  // namespace tucoll::bench
