// The blocking collectives' C bindings: tucoll's, except on the communicators it does not serve.
#include "interpose.h"

using namespace tucoll::preload;

TUCOLL_EXPORT int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                                void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                                MPI_Comm comm) {
    if (pass_through(comm)) {
        return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
    }
    return finish("MPI_Alltoallv", comm,
                  tucoll_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm));
}

TUCOLL_EXPORT int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                               MPI_Datatype recvtype, MPI_Comm comm) {
    if (pass_through(comm)) return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    return finish("MPI_Alltoall", comm, tucoll_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm));
}

TUCOLL_EXPORT int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                                MPI_Datatype recvtype, MPI_Comm comm) {
    if (pass_through(comm)) return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    return finish("MPI_Allgather", comm,
                  tucoll_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm));
}

TUCOLL_EXPORT int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                 const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
    if (pass_through(comm)) {
        return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
    }
    return finish("MPI_Allgatherv", comm,
                  tucoll_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm));
}
