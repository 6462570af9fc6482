/* A program built against an installed tucoll, as a user's would be (C, not C++). */
#include <stdio.h>
#include <stdlib.h>
#include <tucoll.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size);
    int *sendbuf = malloc(sizeof(int) * size), *recvbuf = malloc(sizeof(int) * size);
    for (int i = 0; i < size; ++i) {
        counts[i] = 1;
        displs[i] = i;
        sendbuf[i] = rank * 100 + i;
    }
    int rc = tucoll_alltoallv_with("pairwise", sendbuf, counts, displs, MPI_INT, recvbuf, counts, displs, MPI_INT,
                                   MPI_COMM_WORLD);
    int ok = rc == MPI_SUCCESS;
    for (int i = 0; i < size; ++i) ok = ok && recvbuf[i] == i * 100 + rank;
    if (!ok) fprintf(stderr, "rank %d: %s\n", rank, tucoll_error_string(rc));
    MPI_Finalize();
    return ok ? 0 : 1;
}
