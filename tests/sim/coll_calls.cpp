// Times one call of each of a few MPI operations in simulation and prints, on rank 0, one line
// per operation: "NAME SECONDS" (simulated time, from after a barrier to the call's end).
// tests/python/test_sim.py runs it with and without smpi/coll-call-cost
// (sim/simgrid-patches/coll-call-cost.patch) and holds the differences against the charge:
// once per collective the program calls, blocking or nonblocking, however the simulated
// algorithm is built of other collectives; nothing for point-to-point or local operations.
#include <mpi.h>

#include <cstdio>
#include <vector>

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<int> send(size, rank), recv(size), counts(size, 1), displs(size);
  for (int i = 0; i < size; ++i)
    displs[i] = i;
  int one = rank, sum = 0;
  const int peer = rank ^ 1;

  auto timed = [&](const char* name, auto&& op) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    op();
    const double seconds = MPI_Wtime() - start;
    if (rank == 0)
      std::printf("%s %.12g\n", name, seconds);
  };
  auto wait = [](MPI_Request& request) { MPI_Wait(&request, MPI_STATUS_IGNORE); };
  MPI_Request request;

  timed("barrier", [&] { MPI_Barrier(MPI_COMM_WORLD); });
  timed("ibarrier", [&] { MPI_Ibarrier(MPI_COMM_WORLD, &request); wait(request); });
  // The test selects an allreduce made of a reduce and a bcast (smpi/allreduce:redbcast).
  timed("allreduce", [&] { MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD); });
  timed("iallreduce", [&] { MPI_Iallreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &request); wait(request); });
  timed("alltoallv", [&] {
    MPI_Alltoallv(send.data(), counts.data(), displs.data(), MPI_INT, recv.data(), counts.data(), displs.data(),
                  MPI_INT, MPI_COMM_WORLD);
  });
  timed("ialltoallv", [&] {
    MPI_Ialltoallv(send.data(), counts.data(), displs.data(), MPI_INT, recv.data(), counts.data(), displs.data(),
                   MPI_INT, MPI_COMM_WORLD, &request);
    wait(request);
  });
  timed("sendrecv", [&] {
    if (peer < size)
      MPI_Sendrecv(&one, 1, MPI_INT, peer, 0, &sum, 1, MPI_INT, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  });
  timed("reduce_local", [&] { MPI_Reduce_local(&one, &sum, 1, MPI_INT, MPI_SUM); });
  MPI_Finalize();
  return 0;
}
