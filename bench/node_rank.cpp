#include "node_rank.h"

#include <ctime>

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

bool on_one_node(MPI_Comm comm) {
    int size = 0, on_node = 0;
    MPI_Comm_size(comm, &size);
    MPI_Comm node;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &on_node);
    MPI_Comm_free(&node);
    return on_node == size;
}

int64_t monotonic_ns() {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    return static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

}  // namespace tucoll::bench
