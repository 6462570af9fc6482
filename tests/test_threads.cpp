// MPI_THREAD_MULTIPLE: two threads of every rank run collectives on two communicators at once —
// the contexts are created concurrently on first use, and alltoallv, allgather and the sparse
// exchanges (probing for their messages) run side by side without taking each other's messages;
// a thread polls a nonblocking exchange while another's blocking calls advance it.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"
#include "tucoll.h"

int tucoll_test_thread_level() { return MPI_THREAD_MULTIPLE; }

namespace tucoll::test {
namespace {

// Repeated exchanges on `comm`; true when every result was right. Nothing here communicates on
// another communicator, so the two threads never share one.
bool exchanges(MPI_Comm comm, int salt, int repeats) {
    int p = 1, me = 0;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &me);
    auto value = [salt](int from, int to, int k) { return salt * 1000000 + from * 10000 + to * 100 + k; };
    bool ok = true;
    for (int round = 0; round < repeats; ++round) {
        for (const char *spec : {"linear", "tuna:radix=2", "tuna_coalesced:radix=2", "bruck2"}) {
            std::vector<int> counts(p), displs(p), rcounts(p), rdispls(p);
            for (int j = 0; j < p; ++j) {
                counts[j] = (me + j + round) % 5;
                rcounts[j] = (j + me + round) % 5;
            }
            std::exclusive_scan(counts.begin(), counts.end(), displs.begin(), 0);
            std::exclusive_scan(rcounts.begin(), rcounts.end(), rdispls.begin(), 0);
            std::vector<int> send(std::accumulate(counts.begin(), counts.end(), 0) + 1);
            std::vector<int> recv(std::accumulate(rcounts.begin(), rcounts.end(), 0) + 1, -1);
            for (int j = 0; j < p; ++j) {
                for (int k = 0; k < counts[j]; ++k) send[displs[j] + k] = value(me, j, k);
            }
            ok = ok && tucoll_alltoallv_with(spec, send.data(), counts.data(), displs.data(), MPI_INT, recv.data(),
                                             rcounts.data(), rdispls.data(), MPI_INT, comm) == MPI_SUCCESS;
            for (int j = 0; j < p; ++j) {
                for (int k = 0; k < rcounts[j]; ++k) ok = ok && recv[rdispls[j] + k] == value(j, me, k);
            }
        }
        std::vector<int> all(p, -1);
        const int mine = value(me, me, round);
        ok = ok && tucoll_allgather_with("sparbit", &mine, 1, MPI_INT, all.data(), 1, MPI_INT, comm) == MPI_SUCCESS;
        for (int j = 0; j < p; ++j) ok = ok && all[j] == value(j, j, round);

        for (const char *spec : {"nbx", "personalized"}) {
            const int dest[2] = {(me + 1) % p, (me + 2) % p};
            const int nnz = p > 2 ? 2 : p > 1 ? 1 : 0;
            const int vals[2] = {value(me, dest[0], round), value(me, dest[1], round)};
            int got = -1, *src = nullptr;
            void *out = nullptr;
            ok = ok && tucoll_alltoall_crs_with(spec, nnz, dest, 1, MPI_INT, vals, &got, &src, 1, MPI_INT, &out, comm) ==
                           MPI_SUCCESS;
            ok = ok && got == nnz;
            for (int i = 0; ok && i < got; ++i) ok = static_cast<int *>(out)[i] == value(src[i], me, round);
            tucoll_free(src);
            tucoll_free(out);
        }
    }
    return ok;
}

TEST(Threads, TwoCommunicatorsAtOnce) {
    int provided = 0;
    MPI_Query_thread(&provided);
    if (provided < MPI_THREAD_MULTIPLE) GTEST_SKIP() << "the MPI library does not provide MPI_THREAD_MULTIPLE";
    MPI_Comm a, b;
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    MPI_Comm_dup(MPI_COMM_WORLD, &b);
    if (world_size() >= 2) {
        // Two nodes on one of them, for the hierarchical algorithm and the locality-aware paths.
        ASSERT_EQ(tucoll_comm_set_ppn(b, (world_size() + 1) / 2), MPI_SUCCESS);
    }
    bool ok_a = false, ok_b = false;
    std::thread first([&] { ok_a = exchanges(a, 1, 10); });
    std::thread second([&] { ok_b = exchanges(b, 2, 10); });
    first.join();
    second.join();
    EXPECT_TRUE(ok_a);
    EXPECT_TRUE(ok_b);
    EXPECT_TRUE(all_ranks(ok_a && ok_b));
    MPI_Comm_free(&a);
    MPI_Comm_free(&b);
}

// One thread polls a nonblocking exchange on one communicator while another runs blocking ones on
// another, no progress thread: the blocking calls advance the engine's outstanding operations,
// the other thread's among them, which therefore locks under MPI_THREAD_MULTIPLE (it did not:
// two threads resumed one schedule at once, a crash, a hang or wrong data).
TEST(Threads, PollingANonblockingCallBesideBlockingOnesElsewhere) {
    int provided = 0;
    MPI_Query_thread(&provided);
    if (provided < MPI_THREAD_MULTIPLE) GTEST_SKIP() << "the MPI library does not provide MPI_THREAD_MULTIPLE";
    const int p = world_size(), me = world_rank(), n = 4;
    auto loop = [&](MPI_Comm comm, bool nonblocking, int repeats) {
        std::vector<int> counts(p, n), displs(p), send(p * n), recv(p * n);
        for (int j = 0; j < p; ++j) displs[j] = j * n;
        for (int it = 0; it < repeats; ++it) {
            for (int k = 0; k < p * n; ++k) send[k] = (me * 1000 + k / n) * 7 + it;
            std::fill(recv.begin(), recv.end(), -1);
            int rc = MPI_SUCCESS;
            if (nonblocking) {
                tucoll_request_t request;
                rc = tucoll_ialltoallv_with("bruck2", send.data(), counts.data(), displs.data(), MPI_INT, recv.data(),
                                            counts.data(), displs.data(), MPI_INT, comm, &request);
                for (int done = 0; rc == MPI_SUCCESS && !done;) rc = tucoll_test(&request, &done);
            } else {
                rc = tucoll_alltoallv_with("pairwise", send.data(), counts.data(), displs.data(), MPI_INT, recv.data(),
                                           counts.data(), displs.data(), MPI_INT, comm);
            }
            if (rc != MPI_SUCCESS) return false;
            for (int k = 0; k < p * n; ++k) {
                if (recv[k] != (k / n * 1000 + me) * 7 + it) return false;
            }
        }
        return true;
    };
    MPI_Comm a, b;
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    MPI_Comm_dup(MPI_COMM_WORLD, &b);
    bool ok_a = loop(a, true, 1) && loop(b, false, 1);  // each communicator's first (collective) use
    bool ok_b = false;
    // Busy-polling MPIs (the quick matrix) a tenth as often: two polling threads a rank at P = 4 on
    // 2 cores took MPICH 4.0 69 s for 3000 exchanges each (Open MPI: 1 s).
    const int repeats = quick_matrix() ? 300 : 3000;
    std::thread first([&] { ok_a = loop(a, true, repeats) && ok_a; });
    std::thread second([&] { ok_b = loop(b, false, repeats); });
    first.join();
    second.join();
    EXPECT_TRUE(ok_a) << "nonblocking on one communicator";
    EXPECT_TRUE(ok_b) << "blocking on the other";
    EXPECT_TRUE(all_ranks(ok_a && ok_b));
    MPI_Comm_free(&a);
    MPI_Comm_free(&b);
}

}  // namespace
}  // namespace tucoll::test
