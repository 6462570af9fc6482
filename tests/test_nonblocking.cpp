// Nonblocking alltoallv, alltoall, allgather and allgatherv (tucoll_ialltoallv, ...) and the schedules
// behind them: every algorithm's result matches the MPI's on the same buffers, completed by
// tucoll_wait or by tucoll_test alone; a start is local (it returns before any other rank has
// started); operations outstanding at once on a communicator, and blocking calls between a start
// and its wait, are completed in any order per rank without crossing; tucoll_progress advances
// them for a rank that waits on a request of its own; a persistent start posts its first round
// at once; the caller may free the call's datatypes or its communicator before
// the wait, as MPI allows.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "test_util.h"
#include "tucoll.h"
#include "typed_buffers.h"
#include "workload.h"

namespace tucoll::test {
namespace {

int start(const char *spec, TypedExchange &x, tucoll_request_t *request, MPI_Comm comm = MPI_COMM_WORLD) {
    bench::AlltoallvBuffers &b = x.buffers;
    return tucoll_ialltoallv_with(spec, b.send.data(), b.sendcounts.data(), b.sdispls.data(), x.types.send,
                                  b.recv.data(), b.recvcounts.data(), b.rdispls.data(), x.types.recv, comm, request);
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
                TypedExchange x;
                TUCOLL_ASSERT_SETUP(build_exchange(dist, type, 40, 5, &x));
                const bench::Bytes want = vendor_alltoallv(x);
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

// The first nonblocking call on a communicator (a new request from its pool) and a later one.
TEST_P(Nonblocking, AStartIsLocal) {
    if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
    MPI_Comm comm = fresh_communicator();
    // ipc's first call on a communicator agrees on its backend, blocking at its start (documented).
    if (std::string(GetParam()).rfind("ipc", 0) == 0) {
        EXPECT_TRUE(uniform_int_alltoallv(GetParam(), 1, comm));
    }
    TypedExchange x;
    TUCOLL_ASSERT_SETUP(build_exchange("powerlaw", "char", 64, 5, &x));
    const bench::Bytes want = vendor_alltoallv(x);
    for (int call = 0; call < 2; ++call) {
        tucoll_request_t request = TUCOLL_REQUEST_NULL;
        const int rc = start_before_rank_1_starts([&] { return start(GetParam(), x, &request, comm); });
        if (out_of_range(rc)) {
            MPI_Comm_free(&comm);
            GTEST_SKIP() << GetParam() << " is not valid at P = " << world_size();
        }
        EXPECT_EQ(rc, MPI_SUCCESS) << tucoll_error_string(rc);
        EXPECT_EQ(tucoll_wait(&request), MPI_SUCCESS);
        EXPECT_TRUE(all_ranks(x.buffers.recv == want)) << "call " << call;
        x.buffers.fill_recv_sentinel();
    }
    MPI_Comm_free(&comm);
}

INSTANTIATE_TEST_SUITE_P(Specs, Nonblocking,
                         ::testing::Values("vendor", "linear", "pairwise", "spreadout", "scattered:block_count=2",
                                           "xor", "tuna:radix=2", "tuna:radix=3", "bruck2",
                                           "tuna_coalesced:radix=2,block_count=1", "tuna_staggered:radix=2,block_count=2",
                                           "staged", "auto", "ipc", "ipc:ipc_threshold=0,uniform_check=1",
                                           "ipc:ipc_threshold=0,overlap=0"),
                         [](const ::testing::TestParamInfo<const char *> &info) { return sanitize(info.param); });

// Three exchanges started in order on `comm`, outstanding at once; `between` runs after the
// starts; then rank 0 completes them last to first, the others first to last.
void complete_in_opposite_orders(const char *const (&specs)[3], const char *const (&dists)[3], MPI_Comm comm,
                                 const std::function<void()> &between) {
    TypedExchange x[3];
    bench::Bytes want[3];
    for (int i = 0; i < 3; ++i) {
        TUCOLL_ASSERT_SETUP(build_exchange(dists[i], "int-permuted", 48, 5, &x[i]));
        want[i] = vendor_alltoallv(x[i]);
    }
    tucoll_request_t r[3] = {};
    for (int i = 0; i < 3; ++i) ASSERT_EQ(start(specs[i], x[i], &r[i], comm), MPI_SUCCESS);
    between();
    for (int k = 0; k < 3; ++k) {
        const int i = world_rank() == 0 ? 2 - k : k;
        EXPECT_EQ(tucoll_wait(&r[i]), MPI_SUCCESS);
    }
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(all_ranks(x[i].buffers.recv == want[i])) << specs[i];
}

TEST(NonblockingOperations, OutstandingAtOnceCompleteInAnyOrder) {
    // With a blocking call on another communicator between the starts and the waits.
    MPI_Comm other = MPI_COMM_NULL;
    MPI_Comm_dup(MPI_COMM_WORLD, &other);
    complete_in_opposite_orders({"tuna:radix=2", "bruck2", "pairwise"}, {"uniform", "powerlaw", "onehuge"},
                                MPI_COMM_WORLD,
                                [other] { EXPECT_TRUE(uniform_int_alltoallv("tuna:radix=2", 3, other)); });
    MPI_Comm_free(&other);
}

TEST(NonblockingOperations, IpcOperationsOutstandingAtOnceCompleteInAnyOrder) {
    // Each ipc operation has its node's slots and flags of its own: two outstanding at once, with
    // a round-based one between them.
    MPI_Comm comm = fresh_communicator();
    EXPECT_TRUE(uniform_int_alltoallv("ipc:ipc_threshold=0", 1, comm));  // the first call agrees
    tucoll_stats_t stats{};
    tucoll_get_stats(comm, &stats);
    EXPECT_NE(std::string(stats.path).find("ipc"), std::string::npos) << stats.path;
    complete_in_opposite_orders({"ipc:ipc_threshold=0", "tuna:radix=2", "ipc:ipc_threshold=0,uniform_check=1"},
                                {"powerlaw", "uniform", "onehuge"}, comm, [] {});
    MPI_Comm_free(&comm);
}

TEST(NonblockingOperations, ABlockingCallOnTheCommunicatorBetweenStartAndWait) {
    // The blocking call completes what was started before it; rank 0 waits before it, the others
    // after.
    TypedExchange a;
    TUCOLL_ASSERT_SETUP(build_exchange("normal", "char", 32, 5, &a));
    const bench::Bytes want = vendor_alltoallv(a);
    tucoll_request_t r = TUCOLL_REQUEST_NULL;
    ASSERT_EQ(start("tuna:radix=2", a, &r), MPI_SUCCESS);
    if (world_rank() == 0) {
        EXPECT_EQ(tucoll_wait(&r), MPI_SUCCESS);
    }
    EXPECT_TRUE(uniform_int_alltoallv("bruck2", 5, MPI_COMM_WORLD));
    if (world_rank() != 0) {
        int flag = 0;
        EXPECT_EQ(tucoll_test(&r, &flag), MPI_SUCCESS);
        EXPECT_EQ(flag, 1);  // the blocking call completed it
    }
    EXPECT_TRUE(all_ranks(a.buffers.recv == want));
}

TEST(NonblockingOperations, ProgressAdvancesWhatAWaitForAnotherRequestNeeds) {
    // MPI's progress rule: rank 1 waits for a message that rank 0 sends only once the exchange has
    // completed there, polling MPI_Test and tucoll_progress, which advances the exchange's rounds
    // here without completing its request (a plain MPI_Wait would wait for ever).
    if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
    for (const char *spec : {"tuna:radix=2", "bruck2", "pairwise"}) {
        TypedExchange x;
        TUCOLL_ASSERT_SETUP(build_exchange("powerlaw", "char", 64, 23, &x));
        const bench::Bytes want = vendor_alltoallv(x);
        tucoll_request_t r = TUCOLL_REQUEST_NULL;
        ASSERT_EQ(start(spec, x, &r), MPI_SUCCESS);
        int token = 0, pending = -1;
        bool arrived = true;
        if (world_rank() == 1) {
            MPI_Request message = MPI_REQUEST_NULL;
            MPI_Irecv(&token, 1, MPI_INT, 0, 78, MPI_COMM_WORLD, &message);
            const double deadline = MPI_Wtime() + 60;  // a test with a deadline, not a hang
            int flag = 0;
            while (!flag && MPI_Wtime() < deadline) {
                MPI_Test(&message, &flag, MPI_STATUS_IGNORE);
                if (!flag) {
                    EXPECT_EQ(tucoll_progress(&pending), MPI_SUCCESS);
                }
            }
            arrived = flag != 0;
            if (!arrived) MPI_Cancel(&message), MPI_Request_free(&message);
            EXPECT_NE(r, TUCOLL_REQUEST_NULL);  // still this rank's to complete
        }
        EXPECT_EQ(tucoll_wait(&r), MPI_SUCCESS);
        if (world_rank() == 0) MPI_Send(&token, 1, MPI_INT, 1, 78, MPI_COMM_WORLD);
        EXPECT_TRUE(all_ranks(arrived)) << spec << ": the exchange did not advance while rank 1 polled";
        EXPECT_TRUE(all_ranks(x.buffers.recv == want)) << spec;
        EXPECT_EQ(tucoll_progress(&pending), MPI_SUCCESS);
        EXPECT_EQ(pending, 0);
        EXPECT_EQ(tucoll_progress(nullptr), MPI_SUCCESS);
    }
}

TEST(NonblockingOperations, SteadyStateReusesItsRequests) {
    // The same nonblocking call again and again: the request objects and their scratch come back
    // from the communicator's pool.
    TypedExchange x;
    TUCOLL_ASSERT_SETUP(build_exchange("powerlaw", "char", 64, 5, &x));
    const bench::Bytes want = vendor_alltoallv(x);
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
    for (const char *spec : {"vendor", "tuna:radix=2", "spreadout", "bruck2", "auto", "ipc", "ipc:ipc_threshold=0"}) {
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
    TypedExchange x;
    TUCOLL_ASSERT_SETUP(build_exchange("powerlaw", "char", 64, 5, &x));
    const bench::Bytes want = vendor_alltoallv(x);
    bench::AlltoallvBuffers &b = x.buffers;
    tucoll_request_t plan = TUCOLL_REQUEST_NULL;
    ASSERT_EQ(tucoll_alltoallv_init_with("tuna:radix=2", b.send.data(), b.sendcounts.data(), b.sdispls.data(),
                                         x.types.send, b.recv.data(), b.recvcounts.data(), b.rdispls.data(),
                                         x.types.recv, MPI_COMM_WORLD, MPI_INFO_NULL, &plan),
              MPI_SUCCESS);
    for (int s = 0; s < 2; ++s) {
        EXPECT_EQ(start_before_rank_1_starts([&] { return tucoll_start(&plan); }), MPI_SUCCESS);
        EXPECT_EQ(test_until_done(&plan), MPI_SUCCESS);
        EXPECT_NE(plan, TUCOLL_REQUEST_NULL);  // persistent: inactive, not freed
        EXPECT_TRUE(all_ranks(b.recv == want));
        b.fill_recv_sentinel();
    }
    EXPECT_EQ(tucoll_request_free(&plan), MPI_SUCCESS);
}

TEST(NonblockingOperations, ALibraryCollectiveAtAStartCompletesWhatIsOutstandingFirst) {
    // auto's first call on a communicator agrees on its table in a blocking reduction. Rank 0
    // starts two calls and only then waits; the others wait for the first before they start the
    // second. Were rank 0 to enter the reduction with the first call outstanding, the others
    // would wait for its part of that call, and it for them in the reduction.
    MPI_Comm comm = fresh_communicator();
    TypedExchange a, b;
    TUCOLL_ASSERT_SETUP(build_exchange("powerlaw", "char", 48, 5, &a));
    TUCOLL_ASSERT_SETUP(build_exchange("uniform", "int-permuted", 16, 5, &b));
    const bench::Bytes want_a = vendor_alltoallv(a), want_b = vendor_alltoallv(b);
    tucoll_request_t ra = TUCOLL_REQUEST_NULL, rb = TUCOLL_REQUEST_NULL;
    ASSERT_EQ(start("tuna:radix=2", a, &ra, comm), MPI_SUCCESS);
    if (world_rank() != 0) {
        EXPECT_EQ(tucoll_wait(&ra), MPI_SUCCESS);
    }
    ASSERT_EQ(start("auto", b, &rb, comm), MPI_SUCCESS);
    EXPECT_EQ(tucoll_wait(&ra), MPI_SUCCESS);  // rank 0's: done already, by its second start
    EXPECT_EQ(tucoll_wait(&rb), MPI_SUCCESS);
    EXPECT_TRUE(all_ranks(a.buffers.recv == want_a));
    EXPECT_TRUE(all_ranks(b.buffers.recv == want_b));
    MPI_Comm_free(&comm);
}

TEST(NonblockingOperations, TheCallersDatatypesMayBeFreedAfterTheStart) {
    // MPI lets a program free a datatype that an outstanding operation uses: the call holds its
    // own handle (the receive side is unpacked with it at the end).
    TypedExchange x;
    TUCOLL_ASSERT_SETUP(build_exchange("powerlaw", "int-permuted", 40, 5, &x));
    const bench::Bytes want = vendor_alltoallv(x);
    bench::AlltoallvBuffers &b = x.buffers;
    for (const char *spec : {"tuna:radix=2", "vendor"}) {
        MPI_Datatype send = MPI_DATATYPE_NULL, recv = MPI_DATATYPE_NULL;
        MPI_Type_dup(x.types.send, &send);
        MPI_Type_dup(x.types.recv, &recv);
        tucoll_request_t r = TUCOLL_REQUEST_NULL;
        ASSERT_EQ(tucoll_ialltoallv_with(spec, b.send.data(), b.sendcounts.data(), b.sdispls.data(), send,
                                         b.recv.data(), b.recvcounts.data(), b.rdispls.data(), recv, MPI_COMM_WORLD,
                                         &r),
                  MPI_SUCCESS);
        MPI_Type_free(&send);
        MPI_Type_free(&recv);
        // A datatype made now may take the freed one's place in a careless implementation.
        MPI_Datatype other = MPI_DATATYPE_NULL;
        MPI_Type_contiguous(3, MPI_DOUBLE, &other);
        MPI_Type_commit(&other);
        EXPECT_EQ(tucoll_wait(&r), MPI_SUCCESS);
        MPI_Type_free(&other);
        EXPECT_TRUE(all_ranks(b.recv == want)) << spec;
        b.fill_recv_sentinel();
    }
}

TEST(NonblockingOperations, FreeingTheCommunicatorCompletesWhatWasStartedOnIt) {
    // MPI_Comm_free lets outstanding operations complete: the wait after it reports the call.
    // A persistent request keeps the communicator, as MPI's do (test_persistent has more).
    TypedExchange x;
    TUCOLL_ASSERT_SETUP(build_exchange("normal", "char", 32, 5, &x));
    const bench::Bytes want = vendor_alltoallv(x);
    bench::AlltoallvBuffers &b = x.buffers;
    MPI_Comm comm = fresh_communicator();
    tucoll_request_t r = TUCOLL_REQUEST_NULL, plan = TUCOLL_REQUEST_NULL;
    ASSERT_EQ(tucoll_alltoallv_init_with("tuna:radix=2", b.send.data(), b.sendcounts.data(), b.sdispls.data(),
                                         x.types.send, b.recv.data(), b.recvcounts.data(), b.rdispls.data(),
                                         x.types.recv, comm, MPI_INFO_NULL, &plan),
              MPI_SUCCESS);
    ASSERT_EQ(start("bruck2", x, &r, comm), MPI_SUCCESS);
    MPI_Comm_free(&comm);
    EXPECT_EQ(tucoll_wait(&r), MPI_SUCCESS);
    EXPECT_EQ(r, TUCOLL_REQUEST_NULL);
    EXPECT_TRUE(all_ranks(b.recv == want));
    b.fill_recv_sentinel();
    EXPECT_EQ(tucoll_start(&plan), MPI_SUCCESS);
    EXPECT_EQ(tucoll_wait(&plan), MPI_SUCCESS);
    EXPECT_TRUE(all_ranks(b.recv == want));
    EXPECT_EQ(tucoll_request_free(&plan), MPI_SUCCESS);
}

TEST(NonblockingOperations, BadArgumentsAreRefusedAtTheStart) {
    TypedExchange x;
    TUCOLL_ASSERT_SETUP(build_exchange("uniform", "char", 8, 5, &x));
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
