// Nonblocking alltoallv, alltoall, allgather and allgatherv (tucoll_ialltoallv, ...) and the schedules
// behind them: every algorithm's result matches the MPI's on the same buffers, completed by
// tucoll_wait or by tucoll_test alone; a start is local (it returns before any other rank has
// started); operations outstanding at once on a communicator, and blocking calls between a start
// and its wait, are completed in any order per rank without crossing; a persistent start posts
// its first round at once.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_util.h"
#include "tucoll.h"
#include "typed_buffers.h"
#include "workload.h"

namespace tucoll::test {
namespace {

struct Exchange {
    bench::TypePair types;
    bench::AlltoallvBuffers buffers;
};

std::string build(const std::string &dist, const std::string &type, int64_t max_block, Exchange *out) {
    bench::Workload w;
    std::string err = bench::Workload::create(dist, max_block, world_size(), 5, &w);
    if (err.empty()) err = bench::TypePair::create(type, &out->types);
    if (err.empty()) err = bench::build_alltoallv(w, out->types, world_rank(), bench::Layout::kScattered, &out->buffers);
    return err;
}

// The MPI's MPI_Alltoallv of `x`; the receive buffer is refilled with its sentinel.
bench::Bytes vendor_result(Exchange &x) {
    bench::AlltoallvBuffers &b = x.buffers;
    MPI_Alltoallv(b.send.data(), b.sendcounts.data(), b.sdispls.data(), x.types.send, b.recv.data(),
                  b.recvcounts.data(), b.rdispls.data(), x.types.recv, MPI_COMM_WORLD);
    bench::Bytes result = b.recv;
    b.fill_recv_sentinel();
    return result;
}

int start(const char *spec, Exchange &x, tucoll_request_t *request) {
    bench::AlltoallvBuffers &b = x.buffers;
    return tucoll_ialltoallv_with(spec, b.send.data(), b.sendcounts.data(), b.sdispls.data(), x.types.send,
                                  b.recv.data(), b.recvcounts.data(), b.rdispls.data(), x.types.recv,
                                  MPI_COMM_WORLD, request);
}

// Completes `request` by tucoll_test alone; returns its result.
int test_until_done(tucoll_request_t *request) {
    int flag = 0, rc = MPI_SUCCESS;
    while (!flag && rc == MPI_SUCCESS) rc = tucoll_test(request, &flag);
    return rc;
}

bool out_of_range(int rc) {
    return rc != MPI_SUCCESS && std::string(tucoll_error_string(rc)).find("out of range") != std::string::npos;
}

class Nonblocking : public ::testing::TestWithParam<const char *> {};

TEST_P(Nonblocking, MatchesTheVendorCompletedByWaitOrByTests) {
    for (const char *dist : {"uniform", "zeros", "onehuge", "powerlaw"}) {
        for (const char *type : {"char", "vector", "int-permuted"}) {
            for (bool by_tests : {false, true}) {
                Exchange x;
                TUCOLL_ASSERT_SETUP(build(dist, type, 40, &x));
                const bench::Bytes want = vendor_result(x);
                tucoll_request_t request = TUCOLL_REQUEST_NULL;
                const int rc_start = start(GetParam(), x, &request);
                if (out_of_range(rc_start)) GTEST_SKIP() << GetParam() << " is not valid at P = " << world_size();
                ASSERT_TRUE(all_ranks(rc_start == MPI_SUCCESS)) << tucoll_error_string(rc_start);
                const int rc = by_tests ? test_until_done(&request) : tucoll_wait(&request);
                EXPECT_EQ(rc, MPI_SUCCESS) << tucoll_error_string(rc);
                EXPECT_EQ(request, TUCOLL_REQUEST_NULL);
                EXPECT_TRUE(all_ranks(x.buffers.recv == want)) << dist << " " << type << (by_tests ? " tests" : " wait");
            }
        }
    }
    tucoll_stats_t stats{};
    tucoll_get_stats(MPI_COMM_WORLD, &stats);
    EXPECT_STREQ(stats.collective, "alltoallv");
}

// Rank 0 starts, then sends rank 1 the token that rank 1 waits for before it starts: a start
// that waited for the other ranks would never return.
TEST_P(Nonblocking, AStartIsLocal) {
    if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
    EXPECT_TRUE(uniform_int_alltoallv("pairwise", 1, MPI_COMM_WORLD));  // the communicator's context exists
    Exchange x;
    TUCOLL_ASSERT_SETUP(build("powerlaw", "char", 64, &x));
    const bench::Bytes want = vendor_result(x);
    tucoll_request_t request = TUCOLL_REQUEST_NULL;
    int token = 7, rc = MPI_SUCCESS;
    if (world_rank() == 1) MPI_Recv(&token, 1, MPI_INT, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    rc = start(GetParam(), x, &request);
    if (world_rank() == 0) MPI_Send(&token, 1, MPI_INT, 1, 99, MPI_COMM_WORLD);
    if (out_of_range(rc)) GTEST_SKIP() << GetParam() << " is not valid at P = " << world_size();
    EXPECT_EQ(rc, MPI_SUCCESS) << tucoll_error_string(rc);
    EXPECT_EQ(tucoll_wait(&request), MPI_SUCCESS);
    EXPECT_TRUE(all_ranks(x.buffers.recv == want));
}

INSTANTIATE_TEST_SUITE_P(Specs, Nonblocking,
                         ::testing::Values("vendor", "linear", "pairwise", "spreadout", "scattered:block_count=2",
                                           "xor", "tuna:radix=2", "tuna:radix=3", "bruck2",
                                           "tuna_coalesced:radix=2,block_count=1", "tuna_staggered:radix=2,block_count=2",
                                           "staged"),
                         [](const ::testing::TestParamInfo<const char *> &info) { return sanitize(info.param); });

TEST(NonblockingOperations, OutstandingAtOnceCompleteInAnyOrder) {
    // Three exchanges outstanding at once on one communicator; rank 0 completes them last to
    // first, the others first to last, with a blocking call on another communicator between.
    Exchange x[3];
    const char *specs[3] = {"tuna:radix=2", "bruck2", "pairwise"};
    const char *dists[3] = {"uniform", "powerlaw", "onehuge"};
    bench::Bytes want[3];
    for (int i = 0; i < 3; ++i) {
        TUCOLL_ASSERT_SETUP(build(dists[i], "int-permuted", 48, &x[i]));
        want[i] = vendor_result(x[i]);
    }
    MPI_Comm other = MPI_COMM_NULL;
    MPI_Comm_dup(MPI_COMM_WORLD, &other);
    tucoll_request_t r[3] = {};
    for (int i = 0; i < 3; ++i) ASSERT_EQ(start(specs[i], x[i], &r[i]), MPI_SUCCESS);
    EXPECT_TRUE(uniform_int_alltoallv("tuna:radix=2", 3, other));
    for (int k = 0; k < 3; ++k) {
        const int i = world_rank() == 0 ? 2 - k : k;
        EXPECT_EQ(tucoll_wait(&r[i]), MPI_SUCCESS);
    }
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(all_ranks(x[i].buffers.recv == want[i])) << specs[i];
    MPI_Comm_free(&other);
}

TEST(NonblockingOperations, ABlockingCallOnTheCommunicatorBetweenStartAndWait) {
    // The blocking call completes what was started before it; rank 0 waits before it, the others
    // after.
    Exchange a;
    TUCOLL_ASSERT_SETUP(build("normal", "char", 32, &a));
    const bench::Bytes want = vendor_result(a);
    tucoll_request_t r = TUCOLL_REQUEST_NULL;
    ASSERT_EQ(start("tuna:radix=2", a, &r), MPI_SUCCESS);
    if (world_rank() == 0) EXPECT_EQ(tucoll_wait(&r), MPI_SUCCESS);
    EXPECT_TRUE(uniform_int_alltoallv("bruck2", 5, MPI_COMM_WORLD));
    if (world_rank() != 0) {
        int flag = 0;
        EXPECT_EQ(tucoll_test(&r, &flag), MPI_SUCCESS);
        EXPECT_EQ(flag, 1);  // the blocking call completed it
    }
    EXPECT_TRUE(all_ranks(a.buffers.recv == want));
}

TEST(NonblockingOperations, SteadyStateReusesItsRequests) {
    // The same nonblocking call again and again: the request objects and their scratch come back
    // from the communicator's pool.
    Exchange x;
    TUCOLL_ASSERT_SETUP(build("powerlaw", "char", 64, &x));
    const bench::Bytes want = vendor_result(x);
    tucoll_request_t first = TUCOLL_REQUEST_NULL;
    ASSERT_EQ(start("tuna:radix=2", x, &first), MPI_SUCCESS);
    const tucoll_request_t handle = first;
    ASSERT_EQ(tucoll_wait(&first), MPI_SUCCESS);
    for (int i = 0; i < 5; ++i) {
        x.buffers.fill_recv_sentinel();
        tucoll_request_t again = TUCOLL_REQUEST_NULL;
        ASSERT_EQ(start("tuna:radix=2", x, &again), MPI_SUCCESS);
        EXPECT_EQ(again, handle);
        ASSERT_EQ(tucoll_wait(&again), MPI_SUCCESS);
    }
    EXPECT_TRUE(all_ranks(x.buffers.recv == want));
}

TEST(NonblockingOperations, IalltoallMatchesTheVendor) {
    const int p = world_size(), n = 5;
    for (const char *spec : {"vendor", "tuna:radix=2", "spreadout", "bruck2", "auto"}) {
        std::vector<int> send(static_cast<size_t>(p) * n), got(send.size(), -1), want(send.size(), -2);
        for (size_t k = 0; k < send.size(); ++k) send[k] = world_rank() * 1000 + static_cast<int>(k);
        MPI_Alltoall(send.data(), n, MPI_INT, want.data(), n, MPI_INT, MPI_COMM_WORLD);
        tucoll_request_t r = TUCOLL_REQUEST_NULL;
        ASSERT_EQ(tucoll_ialltoall_with(spec, send.data(), n, MPI_INT, got.data(), n, MPI_INT, MPI_COMM_WORLD, &r),
                  MPI_SUCCESS);
        // A blocking alltoall of other sizes meanwhile reshapes the communicator's uniform counts:
        // the started call kept its own.
        std::vector<int> s2(static_cast<size_t>(p) * 2, 1), r2(s2.size());
        EXPECT_EQ(tucoll_alltoall_with("pairwise", s2.data(), 2, MPI_INT, r2.data(), 2, MPI_INT, MPI_COMM_WORLD),
                  MPI_SUCCESS);
        EXPECT_EQ(test_until_done(&r), MPI_SUCCESS);
        EXPECT_TRUE(all_ranks(got == want)) << spec;
    }
}

TEST(NonblockingOperations, IallgatherAndIallgathervMatchTheVendor) {
    const int p = world_size(), me = world_rank();
    std::vector<int> counts(p), displs(p);
    int total = 0;
    for (int j = 0; j < p; ++j) {
        counts[j] = (j * 3) % 4;  // zero-size blocks too
        displs[j] = total + 1;    // a gap before each block
        total += counts[j] + 1;
    }
    for (const char *spec : {"vendor", "ring", "neighbor", "recdoubling", "bruck", "sparbit"}) {
        const int n = 3;
        std::vector<int> mine(n), got(static_cast<size_t>(p) * n, -1), want(got.size(), -2);
        for (int k = 0; k < n; ++k) mine[k] = me * 100 + k;
        MPI_Allgather(mine.data(), n, MPI_INT, want.data(), n, MPI_INT, MPI_COMM_WORLD);
        tucoll_request_t r = TUCOLL_REQUEST_NULL;
        int rc = tucoll_iallgather_with(spec, mine.data(), n, MPI_INT, got.data(), n, MPI_INT, MPI_COMM_WORLD, &r);
        ASSERT_EQ(rc, MPI_SUCCESS) << spec << ": " << tucoll_error_string(rc);
        EXPECT_EQ(test_until_done(&r), MPI_SUCCESS);
        EXPECT_TRUE(all_ranks(got == want)) << spec;

        const std::string name = spec;
        if (name == "bruck" || name == "neighbor" || name == "recdoubling") continue;  // allgather only
        std::vector<int> vmine(counts[me], me), vgot(total, -1), vwant(total, -1);
        MPI_Allgatherv(vmine.data(), counts[me], MPI_INT, vwant.data(), counts.data(), displs.data(), MPI_INT,
                       MPI_COMM_WORLD);
        rc = tucoll_iallgatherv_with(spec, vmine.data(), counts[me], MPI_INT, vgot.data(), counts.data(),
                                     displs.data(), MPI_INT, MPI_COMM_WORLD, &r);
        ASSERT_EQ(rc, MPI_SUCCESS) << spec << ": " << tucoll_error_string(rc);
        EXPECT_EQ(tucoll_wait(&r), MPI_SUCCESS);
        EXPECT_TRUE(all_ranks(vgot == vwant)) << spec << " (v)";
    }
}

TEST(NonblockingOperations, APersistentStartIsLocal) {
    if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
    Exchange x;
    TUCOLL_ASSERT_SETUP(build("powerlaw", "char", 64, &x));
    const bench::Bytes want = vendor_result(x);
    bench::AlltoallvBuffers &b = x.buffers;
    tucoll_request_t plan = TUCOLL_REQUEST_NULL;
    ASSERT_EQ(tucoll_alltoallv_init_with("tuna:radix=2", b.send.data(), b.sendcounts.data(), b.sdispls.data(),
                                         x.types.send, b.recv.data(), b.recvcounts.data(), b.rdispls.data(),
                                         x.types.recv, MPI_COMM_WORLD, MPI_INFO_NULL, &plan),
              MPI_SUCCESS);
    for (int s = 0; s < 2; ++s) {
        int token = s;
        if (world_rank() == 1) MPI_Recv(&token, 1, MPI_INT, 0, 98, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        EXPECT_EQ(tucoll_start(&plan), MPI_SUCCESS);
        if (world_rank() == 0) MPI_Send(&token, 1, MPI_INT, 1, 98, MPI_COMM_WORLD);
        EXPECT_EQ(test_until_done(&plan), MPI_SUCCESS);
        EXPECT_NE(plan, TUCOLL_REQUEST_NULL);  // persistent: inactive, not freed
        EXPECT_TRUE(all_ranks(b.recv == want));
        b.fill_recv_sentinel();
    }
    EXPECT_EQ(tucoll_request_free(&plan), MPI_SUCCESS);
}

TEST(NonblockingOperations, BadArgumentsAreRefusedAtTheStart) {
    Exchange x;
    TUCOLL_ASSERT_SETUP(build("uniform", "char", 8, &x));
    bench::AlltoallvBuffers &b = x.buffers;
    tucoll_request_t r = TUCOLL_REQUEST_NULL;
    EXPECT_EQ(tucoll_ialltoallv_with("tuna", b.send.data(), nullptr, b.sdispls.data(), MPI_BYTE, b.recv.data(),
                                     b.recvcounts.data(), b.rdispls.data(), MPI_BYTE, MPI_COMM_WORLD, &r),
              MPI_ERR_ARG);
    EXPECT_EQ(r, TUCOLL_REQUEST_NULL);
    EXPECT_EQ(tucoll_ialltoallv(b.send.data(), b.sendcounts.data(), b.sdispls.data(), MPI_BYTE, b.recv.data(),
                                b.recvcounts.data(), b.rdispls.data(), MPI_BYTE, MPI_COMM_WORLD, nullptr),
              MPI_ERR_ARG);
    int flag = 0;
    EXPECT_EQ(tucoll_test(&r, nullptr), MPI_ERR_ARG);
    EXPECT_EQ(tucoll_test(nullptr, &flag), MPI_ERR_ARG);
}

}  // namespace
}  // namespace tucoll::test
