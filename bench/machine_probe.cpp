#include "machine_probe.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <vector>

#include "node_rank.h"
#include "tucoll.h"

namespace tucoll::bench {
namespace {

constexpr int kDone = 1 << 20;  // tag of the receiver's acknowledgement, above every probe tag

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// One-way time of a message of `bytes`: half a round trip, `reps` round trips per sample. Each
// rank sends from one buffer and receives into another, as osu_latency does: sending back the
// buffer just received would have each message read lines still dirty in the other core's cache,
// which an alltoallv's send buffer, written before the call, is not.
double pingpong(MPI_Comm comm, int rank, int bytes, int reps, int iters) {
    std::vector<char> out(std::max(bytes, 1), 1), in(std::max(bytes, 1));
    std::vector<double> samples;
    for (int it = 0; it < iters + 1; ++it) {  // the first round warms up
        MPI_Barrier(comm);
        const double t0 = MPI_Wtime();
        for (int r = 0; r < reps; ++r) {
            if (rank == 0) {
                MPI_Send(out.data(), bytes, MPI_BYTE, 1, 0, comm);
                MPI_Recv(in.data(), bytes, MPI_BYTE, 1, 0, comm, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(in.data(), bytes, MPI_BYTE, 0, 0, comm, MPI_STATUS_IGNORE);
                MPI_Send(out.data(), bytes, MPI_BYTE, 0, 0, comm);
            }
        }
        if (it > 0) samples.push_back((MPI_Wtime() - t0) / (2.0 * reps));
    }
    return median(samples);
}

// `count` 8-byte messages from rank 0 to rank 1, all outstanding at once; rank 1 posts its receives
// first, tagged 0..count-1, and rank 0 sends them in that order (`reversed`: last tag first, so
// that each arrival walks the whole posted queue to match). Time from the first send to rank 1's
// acknowledgement that all arrived.
double burst(MPI_Comm comm, int rank, int count, bool reversed, int iters) {
    std::vector<long> data(count);
    std::vector<MPI_Request> reqs(count);
    std::vector<double> samples;
    for (int it = 0; it < iters + 1; ++it) {
        if (rank == 1)
            for (int i = 0; i < count; ++i) MPI_Irecv(&data[i], 1, MPI_LONG, 0, i, comm, &reqs[i]);
        MPI_Barrier(comm);  // the receives are posted before any send starts
        const double t0 = MPI_Wtime();
        if (rank == 0) {
            for (int i = 0; i < count; ++i) {
                const int tag = reversed ? count - 1 - i : i;
                MPI_Isend(&data[tag], 1, MPI_LONG, 1, tag, comm, &reqs[i]);
            }
            MPI_Waitall(count, reqs.data(), MPI_STATUSES_IGNORE);
            MPI_Recv(nullptr, 0, MPI_BYTE, 1, kDone, comm, MPI_STATUS_IGNORE);
            if (it > 0) samples.push_back(MPI_Wtime() - t0);
        } else if (rank == 1) {
            MPI_Waitall(count, reqs.data(), MPI_STATUSES_IGNORE);
            MPI_Send(nullptr, 0, MPI_BYTE, 0, kDone, comm);
        }
    }
    return samples.empty() ? 0.0 : median(samples);
}

// One core's memcpy of `bytes` (the local copies inside the algorithms), on the calling rank, the
// same buffers each time: 1 MiB stays in cache, as a repeated call's buffers of that size do;
// 64 MiB does not.
double copy_time(long bytes, int iters) {
    std::vector<char> src(bytes, 1), dst(bytes);
    const int reps = std::max<long>(1, (16L << 20) / bytes);
    std::vector<double> samples;
    for (int it = 0; it < iters + 1; ++it) {
        const double t0 = MPI_Wtime();
        for (int r = 0; r < reps; ++r) {
            std::memcpy(dst.data(), src.data(), bytes);
            // Nor may the compiler drop a copy whose destination the next one overwrites.
            asm volatile("" : : "r"(dst.data()) : "memory");
        }
        if (it > 0) samples.push_back((MPI_Wtime() - t0) / reps);
    }
    if (dst[bytes / 2] != 1) return 0.0;  // keeps the copy from being optimised away
    return median(samples);
}

// One core's copy of `pieces` small blocks that are not adjacent (a cache line apart) into one
// packed buffer, as an algorithm packs the blocks of a round: seconds per call. Their sizes run
// from 1 to 15 bytes (8 on average, as a 16 B uniform alltoallv's; none empty, since an empty
// block is no piece to copy) and are known only at run time, as an algorithm's are, so that each
// is a call of memcpy rather than one inlined move.
double piece_copy_time(int pieces, int iters) {
    constexpr int kStride = 64;
    std::vector<char> src(static_cast<size_t>(pieces) * kStride, 1), dst(static_cast<size_t>(pieces) * 16);
    std::vector<size_t> sizes(pieces);
    for (int i = 0; i < pieces; ++i) sizes[i] = static_cast<size_t>(1 + i % 15);
    const int reps = 200;
    std::vector<double> samples;
    for (int it = 0; it < iters + 1; ++it) {
        const double t0 = MPI_Wtime();
        for (int r = 0; r < reps; ++r) {
            char *out = dst.data();
            for (int i = 0; i < pieces; ++i) {
                std::memcpy(out, src.data() + static_cast<size_t>(i) * kStride, sizes[i]);
                out += sizes[i];
            }
            asm volatile("" : : "r"(dst.data()) : "memory");
        }
        if (it > 0) samples.push_back((MPI_Wtime() - t0) / reps);
    }
    return median(samples);
}

// Seconds per call of an alltoallv of one 16-byte block on MPI_COMM_SELF: through tucoll's
// dispatch (`through_tucoll`: its checks, the communicator's context and selection, the vendor's
// call) or the MPI's own call alone (PMPI_: not through tucoll's interposer, were it preloaded).
// No message moves, so the difference is what a tucoll call costs before its exchange, which a
// simulation charges as such (platform::charge_call).
double call_time(bool through_tucoll, int reps, int iters) {
    char send[16] = {}, recv[16];
    const int count = 16, displ = 0;
    std::vector<double> samples;
    for (int it = 0; it < iters + 1; ++it) {
        const double t0 = MPI_Wtime();
        int rc = MPI_SUCCESS;
        for (int r = 0; r < reps && rc == MPI_SUCCESS; ++r) {
            rc = through_tucoll ? tucoll_alltoallv_with("vendor", send, &count, &displ, MPI_BYTE, recv, &count,
                                                        &displ, MPI_BYTE, MPI_COMM_SELF)
                                : PMPI_Alltoallv(send, &count, &displ, MPI_BYTE, recv, &count, &displ, MPI_BYTE,
                                                 MPI_COMM_SELF);
        }
        if (rc != MPI_SUCCESS) {  // a time of the error path would be no time of the call
            std::fprintf(stderr, "tucoll-bench machine: alltoallv on MPI_COMM_SELF failed (%d)\n", rc);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        if (it > 0) samples.push_back((MPI_Wtime() - t0) / reps);
    }
    return median(samples);
}

// The MPI's own alltoallv (PMPI_, as call_time's) of one 1-byte block to each of the
// communicator's ranks. Not empty blocks: an MPI sends some algorithms' empty blocks as empty
// messages, whose time the ping-pong's pieces do not hold (SimGrid charges them no overheads).
class ByteAlltoallv {
  public:
    explicit ByteAlltoallv(MPI_Comm comm) : comm_(comm) {
        int size = 0;
        MPI_Comm_size(comm, &size);
        counts_.assign(size, 1);
        displs_.resize(size);
        std::iota(displs_.begin(), displs_.end(), 0);
        send_.assign(size, 1);
        recv_.resize(size);
    }

    void operator()() {
        const int rc = PMPI_Alltoallv(send_.data(), counts_.data(), displs_.data(), MPI_BYTE, recv_.data(),
                                      counts_.data(), displs_.data(), MPI_BYTE, comm_);
        if (rc != MPI_SUCCESS) {
            std::fprintf(stderr, "tucoll-bench machine: alltoallv of 1-byte blocks failed (%d)\n", rc);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }

  private:
    MPI_Comm comm_;
    std::vector<int> counts_, displs_;
    std::vector<char> send_, recv_;
};

// Seconds per call of ByteAlltoallv on all the probe's ranks, calls back to back: what the MPI
// spends in a collective call besides its messages, which a simulation charges as
// smpi/coll-call-cost, is this time less the same loop simulated without it.
double small_alltoallv_time(MPI_Comm comm, int reps, int iters) {
    ByteAlltoallv alltoallv(comm);
    std::vector<double> samples;
    for (int it = 0; it < iters + 1; ++it) {
        MPI_Barrier(comm);
        const double t0 = MPI_Wtime();
        for (int r = 0; r < reps; ++r) alltoallv();
        if (it > 0) samples.push_back((MPI_Wtime() - t0) / reps);
    }
    return median(samples);
}

// Seconds between the first and the last rank leaving MPI_Barrier, each call just after a
// ByteAlltoallv (as the bench times a call after the previous one's barrier): the
// median over calls. tucoll-bench starts each rank's clock as it leaves the barrier and keeps the
// slowest rank's time, so a measured call holds this spread; a real barrier releases its ranks a
// message apart (Hunold and Carpen-Amarie, IEEE TPDS 2016). Read off the node's monotonic clock,
// not MPI_Wtime (Open MPI's counts from each process's own start), so only where every rank is on
// one node; -1 elsewhere.
double barrier_exit_spread(MPI_Comm comm, int reps, int iters) {
    if (!on_one_node(comm)) return -1.0;
    ByteAlltoallv alltoallv(comm);
    std::vector<double> samples;
    for (int it = 0; it < (iters + 1) * reps; ++it) {
        alltoallv();
        MPI_Barrier(comm);
        const int64_t left = monotonic_ns();
        int64_t ends[2] = {left, -left}, most[2];
        MPI_Allreduce(ends, most, 2, MPI_INT64_T, MPI_MAX, comm);
        if (it >= reps) samples.push_back(1e-9 * static_cast<double>(most[0] + most[1]));  // the first reps warm up
    }
    return median(samples);
}

}  // namespace

int run_machine_probe(MPI_Comm user_comm, int iters) {
    MPI_Comm comm;
    MPI_Comm_dup(user_comm, &comm);
    int rank = 0, size = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (size < 2) {
        if (rank == 0) std::fprintf(stderr, "tucoll-bench machine: needs 2 ranks or more\n");
        MPI_Comm_free(&comm);
        return 2;
    }
    if (rank == 0) std::printf("test,bytes,count,seconds\n");
    // Every power of 4 from 16 B, and of 2 about the sizes where MPIs switch protocol (eager to
    // rendezvous, copy-in/copy-out to single copy): the point-to-point time by size, as the
    // platform's factors hold it piece by piece.
    for (int bytes : {0, 16, 64, 256, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 262144, 1048576}) {
        const int reps = bytes >= 262144 ? 20 : 200;
        const double t = pingpong(comm, rank, bytes, reps, iters);
        if (rank == 0) std::printf("pingpong,%d,1,%.9g\n", bytes, t);
    }
    for (int count : {1, 16, 64, 256, 1024}) {
        for (bool reversed : {false, true}) {
            const double t = burst(comm, rank, count, reversed, iters);
            if (rank == 0) std::printf("%s,8,%d,%.9g\n", reversed ? "burst_reversed" : "burst", count, t);
        }
    }
    for (long bytes : {1L << 20, 64L << 20}) {
        if (rank == 0) std::printf("copy,%ld,1,%.9g\n", bytes, copy_time(bytes, iters));
    }
    const double alltoallv = small_alltoallv_time(comm, 2000, iters);
    if (rank == 0) std::printf("alltoallv_mpi,1,%d,%.9g\n", size, alltoallv);
    const double spread = barrier_exit_spread(comm, 200, iters);
    if (rank == 0 && spread >= 0) std::printf("barrier_spread,0,%d,%.9g\n", size, spread);
    if (rank == 0) std::printf("copy_pieces,8,4096,%.9g\n", piece_copy_time(4096, iters));
    if (rank == 0) {  // one rank alone, as copy: the others wait at the barrier below
        for (bool through_tucoll : {false, true}) {
            std::printf("%s,16,1,%.9g\n", through_tucoll ? "call_tucoll" : "call_mpi",
                        call_time(through_tucoll, 2000, iters));
        }
    }
    MPI_Barrier(comm);
    MPI_Comm_free(&comm);
    return 0;
}

}  // namespace tucoll::bench
