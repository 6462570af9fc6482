#include "test_util.h"

#include <map>
#include <vector>

#include "tucoll.h"
#include "workload.h"

namespace tucoll::test {

std::string build_exchange(const std::string &dist, const std::string &type, int64_t max_block, uint64_t seed,
                           TypedExchange *out) {
    bench::Workload w;
    std::string err = bench::Workload::create(dist, max_block, world_size(), seed, &w);
    if (err.empty()) err = bench::TypePair::create(type, &out->types);
    if (err.empty()) err = bench::build_alltoallv(w, out->types, world_rank(), bench::Layout::kScattered, &out->buffers);
    return err;
}

bench::Bytes vendor_alltoallv(TypedExchange &x) {
    bench::AlltoallvBuffers &b = x.buffers;
    MPI_Alltoallv(b.send.data(), b.sendcounts.data(), b.sdispls.data(), x.types.send, b.recv.data(),
                  b.recvcounts.data(), b.rdispls.data(), x.types.recv, MPI_COMM_WORLD);
    bench::Bytes result = b.recv;
    b.fill_recv_sentinel();
    return result;
}

bool setup_agreed(const std::string &err, MPI_Comm comm) {
    int rank = 0, p = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    int mine = err.empty() ? p : rank, first = p;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
    if (first == p) return true;
    int length = first == rank ? static_cast<int>(err.size()) : 0;
    MPI_Bcast(&length, 1, MPI_INT, first, comm);
    std::string reason = first == rank ? err : std::string(static_cast<size_t>(length), '\0');
    MPI_Bcast(reason.data(), length, MPI_CHAR, first, comm);
    const bool also_here = !err.empty() && first != rank;
    ADD_FAILURE() << "set-up failed on rank " << first << ": " << reason
                  << (also_here ? "; on rank " + std::to_string(rank) + ": " + err : std::string());
    return false;
}

MPI_Comm fresh_communicator() {
    MPI_Comm comm = MPI_COMM_NULL;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    EXPECT_TRUE(uniform_int_alltoallv("pairwise", 1, comm));
    return comm;
}

bool uniform_int_alltoallv(const std::string &spec, int n, MPI_Comm comm) {
    int p = 1, me = 0;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &me);
    std::vector<int> send(static_cast<size_t>(p) * n), recv(send.size(), -1), counts(p, n), displs(p);
    for (int j = 0; j < p; ++j) displs[j] = j * n;
    for (size_t k = 0; k < send.size(); ++k) send[k] = me * 1000000 + static_cast<int>(k);
    const int rc = tucoll_alltoallv_with(spec.c_str(), send.data(), counts.data(), displs.data(), MPI_INT, recv.data(),
                                         counts.data(), displs.data(), MPI_INT, comm);
    bool ok = rc == MPI_SUCCESS;
    for (int j = 0; ok && j < p; ++j) {
        for (int k = 0; k < n; ++k) ok = ok && recv[j * n + k] == j * 1000000 + me * n + k;
    }
    EXPECT_EQ(rc, MPI_SUCCESS) << spec << ": " << tucoll_error_string(rc);
    return all_ranks(ok, comm);
}

MPI_Comm comm_with_ppn(int q) {
    static std::map<int, MPI_Comm> comms;
    auto it = comms.find(q);
    if (it != comms.end()) return it->second;
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    if (q > 0) {
        EXPECT_EQ(tucoll_comm_set_ppn(c, q), MPI_SUCCESS);
    }
    return comms[q] = c;
}

bench::Bytes reference_alltoallv(const bench::Workload &w, const bench::TypePair &t, int me, bench::Layout layout,
                                 const bench::AlltoallvBuffers &mine) {
    bench::Bytes expected(mine.recv.size(), 0xA5);
    std::vector<char> packed;
    bench::Bytes block;
    for (int j = 0; j < w.nprocs(); ++j) {
        // Sender j's layout, and the bytes of its block for `me` only.
        bench::AlltoallvBuffers theirs;
        EXPECT_EQ(bench::build_alltoallv(w, t, j, layout, &theirs, /*with_data=*/false), "");
        const int count = theirs.sendcounts[me];
        const size_t first = static_cast<size_t>(theirs.sdispls[me]) * t.send_extent;
        block.resize(static_cast<size_t>(count + 1) * t.send_extent);
        for (size_t k = 0; k < block.size(); ++k) block[k] = bench::alltoallv_send_byte(j, first + k);
        int bytes = 0;
        MPI_Pack_size(count, t.send, MPI_COMM_SELF, &bytes);
        packed.resize(static_cast<size_t>(bytes) + 1);
        int position = 0;
        MPI_Pack(block.data(), count, t.send, packed.data(), bytes, &position, MPI_COMM_SELF);
        const int filled = position;
        position = 0;
        MPI_Unpack(packed.data(), filled, &position,
                   expected.data() + static_cast<int64_t>(mine.rdispls[j]) * t.recv_extent, mine.recvcounts[j],
                   t.recv, MPI_COMM_SELF);
    }
    return expected;
}

bool alltoallv_matches(const std::string &spec, MPI_Comm comm, const std::string &dist, const std::string &type,
                       bench::Layout layout, int64_t max_block, uint64_t seed, tucoll_stats_t *stats) {
    int rank = 0, p = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    bench::Workload w;
    bench::TypePair t;
    bench::AlltoallvBuffers b;
    std::string err = bench::Workload::create(dist, max_block, p, seed, &w);
    if (err.empty()) err = bench::TypePair::create(type, &t);
    if (err.empty()) err = bench::build_alltoallv(w, t, rank, layout, &b);
    if (!setup_agreed(err, comm)) return false;
    const bench::Bytes expected = reference_alltoallv(w, t, rank, layout, b);

    // The vendor on the same input: the harness and the MPI agree with the reference.
    b.fill_recv_sentinel();
    const int vendor_rc = MPI_Alltoallv(b.send.data(), b.sendcounts.data(), b.sdispls.data(), t.send, b.recv.data(),
                                        b.recvcounts.data(), b.rdispls.data(), t.recv, comm);
    const int64_t vendor_diff = bench::first_difference(b.recv, expected);
    EXPECT_EQ(vendor_diff, -1) << "the vendor's MPI_Alltoallv differs from the reference on rank " << rank
                               << " at byte " << vendor_diff << " (" << dist << ", " << type << ")";

    b.fill_recv_sentinel();
    const int rc = tucoll_alltoallv_with(spec.c_str(), b.send.data(), b.sendcounts.data(), b.sdispls.data(), t.send,
                                         b.recv.data(), b.recvcounts.data(), b.rdispls.data(), t.recv, comm);
    EXPECT_EQ(rc, MPI_SUCCESS) << spec << ": " << tucoll_error_string(rc);
    const int64_t diff = bench::first_difference(b.recv, expected);
    EXPECT_EQ(diff, -1) << spec << " (" << dist << ", " << type << ") on rank " << rank << ": first difference at byte "
                        << diff;
    if (stats != nullptr) tucoll_get_stats(comm, stats);
    return all_ranks(vendor_rc == MPI_SUCCESS && vendor_diff < 0 && rc == MPI_SUCCESS && diff < 0, comm);
}

}  // namespace tucoll::test
