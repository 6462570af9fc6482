// TUCOLL_PROGRESS=thread (MPI_THREAD_MULTIPLE): a progress thread advances nonblocking calls while
// the program is outside tucoll — here rank 0 sits in a plain MPI_Recv that the others answer
// only once their part of the exchange has completed, which without the thread they could not;
// and with the thread running, results still match the MPI's for operations outstanding at once,
// completed by waits and tests in any order, beside blocking calls on another communicator.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "test_util.h"
#include "tucoll.h"

int tucoll_test_thread_level() { return MPI_THREAD_MULTIPLE; }

namespace {
// Set before MPI_Init (and so before tucoll reads it at its first nonblocking start).
const bool progress_thread_asked = setenv("TUCOLL_PROGRESS", "thread", 1) == 0;
}  // namespace

namespace tucoll::test {
namespace {

bool thread_multiple() {
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    return level >= MPI_THREAD_MULTIPLE;
}

int start(const char *spec, TypedExchange &x, tucoll_request_t *request, MPI_Comm comm = MPI_COMM_WORLD) {
    bench::AlltoallvBuffers &b = x.buffers;
    return tucoll_ialltoallv_with(spec, b.send.data(), b.sendcounts.data(), b.sdispls.data(), x.types.send,
                                  b.recv.data(), b.recvcounts.data(), b.rdispls.data(), x.types.recv, comm, request);
}

TEST(ProgressThread, AdvancesCallsWhileTheProgramIsOutsideTucoll) {
    ASSERT_TRUE(progress_thread_asked);
    if (!thread_multiple()) GTEST_SKIP() << "the MPI does not provide MPI_THREAD_MULTIPLE";
    if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
    for (const char *spec : {"tuna:radix=2", "bruck2", "pairwise"}) {  // several rounds each
        TypedExchange x;
        TUCOLL_ASSERT_SETUP(build_exchange("powerlaw", "char", 64, 17, &x));
        const bench::Bytes want = vendor_alltoallv(x);
        tucoll_request_t r = TUCOLL_REQUEST_NULL;
        ASSERT_EQ(start(spec, x, &r), MPI_SUCCESS);
        bool completed_alone = true;
        if (world_rank() == 0) {
            // Not in tucoll until every other rank has completed its part.
            for (int j = 1; j < world_size(); ++j) {
                int done = 0;
                MPI_Recv(&done, 1, MPI_INT, MPI_ANY_SOURCE, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
        } else {
            // Tests with a deadline (instead of a wait that would hang): rank 0's rounds can only
            // come from its progress thread.
            const double deadline = MPI_Wtime() + 60;
            int flag = 0;
            while (!flag && MPI_Wtime() < deadline) EXPECT_EQ(tucoll_test(&r, &flag), MPI_SUCCESS);
            completed_alone = flag != 0;
            int done = 1;
            MPI_Send(&done, 1, MPI_INT, 0, 77, MPI_COMM_WORLD);
        }
        EXPECT_EQ(tucoll_wait(&r), MPI_SUCCESS);
        EXPECT_TRUE(all_ranks(completed_alone)) << spec << ": not completed while rank 0 was outside tucoll";
        EXPECT_TRUE(all_ranks(x.buffers.recv == want)) << spec;
    }
}

TEST(ProgressThread, ResultsMatchTheVendorWithOperationsOutstandingAtOnce) {
    if (!thread_multiple()) GTEST_SKIP() << "the MPI does not provide MPI_THREAD_MULTIPLE";
    const char *specs[] = {"tuna:radix=2", "bruck2", "vendor", "linear", "tuna_coalesced:radix=2,block_count=1"};
    constexpr int n = 5;
    MPI_Comm other = MPI_COMM_NULL;
    MPI_Comm_dup(MPI_COMM_WORLD, &other);
    for (int repeat = 0; repeat < 3; ++repeat) {
        TypedExchange x[n];
        bench::Bytes want[n];
        for (int i = 0; i < n; ++i) {
            TUCOLL_ASSERT_SETUP(build_exchange(i % 2 ? "uniform" : "powerlaw", i % 2 ? "int-permuted" : "char", 48,
                                               30 + repeat * n + i, &x[i]));
            want[i] = vendor_alltoallv(x[i]);
        }
        tucoll_request_t r[n] = {};
        for (int i = 0; i < n; ++i) ASSERT_EQ(start(specs[i], x[i], &r[i]), MPI_SUCCESS) << specs[i];
        // Blocking calls on another communicator meanwhile, and statistics read.
        EXPECT_TRUE(uniform_int_alltoallv("tuna:radix=2", 3, other));
        tucoll_stats_t stats{};
        EXPECT_EQ(tucoll_get_stats(other, &stats), MPI_SUCCESS);
        for (int k = 0; k < n; ++k) {
            const int i = (world_rank() + repeat) % 2 ? n - 1 - k : k;
            if (k % 2) {
                int flag = 0;
                while (!flag) ASSERT_EQ(tucoll_test(&r[i], &flag), MPI_SUCCESS);
            } else {
                EXPECT_EQ(tucoll_wait(&r[i]), MPI_SUCCESS);
            }
        }
        for (int i = 0; i < n; ++i) EXPECT_TRUE(all_ranks(x[i].buffers.recv == want[i])) << specs[i];
    }
    MPI_Comm_free(&other);
}

}  // namespace
}  // namespace tucoll::test
