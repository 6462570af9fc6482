// Persistent collectives (tucoll_alltoallv_init, start, wait, free): every start gives what
// MPI_Alltoallv gives on the buffers' current contents, whatever the algorithm, distribution or
// datatypes; a start communicates nothing but the exchange (auto's decision and TuNA's M were
// made at init); misuse returns MPI_ERR_REQUEST, and a rejected argument on one rank fails the
// init on every rank. tucoll_alltoall_init and tucoll_allgather(v)_init: every start gives what
// the MPI's collective gives, for every registered algorithm.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "allgather/allgather.h"
#include "alltoallv/alltoallv.h"
#include "test_util.h"
#include "tucoll.h"
#include "typed_buffers.h"
#include "workload.h"

// Every MPI_Allreduce of this program (the library's included) is counted.
namespace {
int allreduce_calls = 0;
}  // namespace

extern "C" int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
                             MPI_Comm comm) {
    ++allreduce_calls;
    return PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
}

namespace tucoll::test {
namespace {

// Starts `request` `starts` times, changing the send buffer's contents before each, and checks
// every result against MPI_Alltoallv on the same contents. True on every rank iff all matched.
bool starts_match_the_vendor(tucoll_request_t request, TypedExchange &x, int starts) {
    bench::AlltoallvBuffers &b = x.buffers;
    bool ok = true;
    for (int s = 0; s < starts; ++s) {
        for (size_t k = 0; k < b.send.size(); ++k) b.send[k] = static_cast<unsigned char>(b.send[k] * 31 + s + 1);
        b.fill_recv_sentinel();
        const bench::Bytes want = vendor_alltoallv(x);
        const int rc_start = tucoll_start(&request);
        const int rc_wait = tucoll_wait(&request);
        EXPECT_EQ(rc_start, MPI_SUCCESS) << tucoll_error_string(rc_start);
        EXPECT_EQ(rc_wait, MPI_SUCCESS) << tucoll_error_string(rc_wait);
        ok = ok && rc_start == MPI_SUCCESS && rc_wait == MPI_SUCCESS && b.recv == want;
    }
    return all_ranks(ok);
}

tucoll_request_t init(const char *spec, TypedExchange &x, int *rc) {
    bench::AlltoallvBuffers &b = x.buffers;
    tucoll_request_t request = TUCOLL_REQUEST_NULL;
    *rc = tucoll_alltoallv_init_with(spec, b.send.data(), b.sendcounts.data(), b.sdispls.data(), x.types.send,
                                     b.recv.data(), b.recvcounts.data(), b.rdispls.data(), x.types.recv,
                                     MPI_COMM_WORLD, MPI_INFO_NULL, &request);
    return request;
}

class PersistentAlltoallv : public ::testing::TestWithParam<const char *> {};

TEST_P(PersistentAlltoallv, EveryStartMatchesTheVendor) {
    for (const char *dist : {"uniform", "zeros", "onehuge", "powerlaw"}) {
        for (const char *type : {"char", "vector", "int-permuted"}) {
            TypedExchange x;
            TUCOLL_ASSERT_SETUP(build_exchange(dist, type, 40, 11, &x));
            int rc = MPI_SUCCESS;
            tucoll_request_t request = init(GetParam(), x, &rc);
            if (rc != MPI_SUCCESS && std::string(tucoll_error_string(rc)).find("out of range") != std::string::npos) {
                GTEST_SKIP() << GetParam() << " is not valid at P = " << world_size();
            }
            ASSERT_TRUE(all_ranks(rc == MPI_SUCCESS)) << tucoll_error_string(rc);
            EXPECT_TRUE(starts_match_the_vendor(request, x, 3)) << dist << " " << type;
            tucoll_stats_t stats{};
            tucoll_get_stats(MPI_COMM_WORLD, &stats);
            EXPECT_NE(std::string(stats.path).find("persistent"), std::string::npos) << stats.path;
            EXPECT_EQ(tucoll_request_free(&request), MPI_SUCCESS);
            EXPECT_EQ(request, TUCOLL_REQUEST_NULL);
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Specs, PersistentAlltoallv,
                         ::testing::Values("vendor", "spreadout", "pairwise", "tuna:radix=2", "tuna:radix=3",
                                           "bruck2", "tuna_coalesced:radix=2,block_count=1", "staged", "auto"),
                         [](const ::testing::TestParamInfo<const char *> &info) { return sanitize(info.param); });

TEST(Persistent, AStartCommunicatesOnlyTheExchange) {
    // TuNA needs M, the largest block anywhere: reduced once at init, never at a start.
    TypedExchange x;
    TUCOLL_ASSERT_SETUP(build_exchange("powerlaw", "char", 64, 11, &x));
    int rc = MPI_SUCCESS;
    allreduce_calls = 0;
    tucoll_request_t request = init("tuna:radix=2", x, &rc);
    EXPECT_TRUE(all_ranks(rc == MPI_SUCCESS)) << tucoll_error_string(rc);
    const int at_init = allreduce_calls - 1;  // - all_ranks'
    EXPECT_GE(at_init, 1);
    allreduce_calls = 0;
    for (int s = 0; s < 3; ++s) {
        tucoll_start(&request);
        tucoll_wait(&request);
    }
    EXPECT_EQ(allreduce_calls, 0);
    tucoll_request_free(&request);
}

TEST(Persistent, WaitsInAnyOrderRunTheExchangesInStartOrder) {
    // Rank 0 waits for the second request first, the others for the first: tucoll runs the
    // exchanges of one communicator in start order on every rank, so nothing crosses.
    TypedExchange a, b;
    TUCOLL_ASSERT_SETUP(build_exchange("uniform", "char", 24, 11, &a));
    TUCOLL_ASSERT_SETUP(build_exchange("powerlaw", "int-permuted", 40, 11, &b));
    int rc_a = MPI_SUCCESS, rc_b = MPI_SUCCESS;
    tucoll_request_t ra = init("spreadout", a, &rc_a), rb = init("tuna:radix=2", b, &rc_b);
    ASSERT_TRUE(all_ranks(rc_a == MPI_SUCCESS && rc_b == MPI_SUCCESS));
    for (TypedExchange *x : {&a, &b}) {
        x->buffers.fill_recv_sentinel();
    }
    const bench::Bytes want[2] = {vendor_alltoallv(a), vendor_alltoallv(b)};
    EXPECT_EQ(tucoll_start(&ra), MPI_SUCCESS);
    EXPECT_EQ(tucoll_start(&rb), MPI_SUCCESS);
    if (world_rank() == 0) {
        EXPECT_EQ(tucoll_wait(&rb), MPI_SUCCESS);
        EXPECT_EQ(tucoll_wait(&ra), MPI_SUCCESS);
    } else {
        EXPECT_EQ(tucoll_wait(&ra), MPI_SUCCESS);
        EXPECT_EQ(tucoll_wait(&rb), MPI_SUCCESS);
    }
    EXPECT_TRUE(all_ranks(a.buffers.recv == want[0] && b.buffers.recv == want[1]));
    tucoll_request_free(&ra);
    tucoll_request_free(&rb);
}

TEST(Persistent, ABlockingCallBetweenAStartAndItsWaitMeetsTheSameExchangeEverywhere) {
    // Rank 0 waits before its blocking alltoallv, the others after it: MPI orders collectives by
    // their start, so the blocking call runs the started exchange first wherever it comes first.
    TypedExchange a, b;
    TUCOLL_ASSERT_SETUP(build_exchange("uniform", "char", 24, 11, &a));
    TUCOLL_ASSERT_SETUP(build_exchange("normal", "char", 24, 11, &b));  // the same sizes would hide a mix-up
    int rc = MPI_SUCCESS;
    tucoll_request_t ra = init("spreadout", a, &rc);
    ASSERT_TRUE(all_ranks(rc == MPI_SUCCESS));
    const bench::Bytes want[2] = {vendor_alltoallv(a), vendor_alltoallv(b)};
    auto blocking = [&] {
        bench::AlltoallvBuffers &buf = b.buffers;
        return tucoll_alltoallv_with("tuna:radix=2", buf.send.data(), buf.sendcounts.data(), buf.sdispls.data(),
                                     b.types.send, buf.recv.data(), buf.recvcounts.data(), buf.rdispls.data(),
                                     b.types.recv, MPI_COMM_WORLD);
    };
    EXPECT_EQ(tucoll_start(&ra), MPI_SUCCESS);
    if (world_rank() == 0) {
        EXPECT_EQ(tucoll_wait(&ra), MPI_SUCCESS);
        EXPECT_EQ(blocking(), MPI_SUCCESS);
    } else {
        EXPECT_EQ(blocking(), MPI_SUCCESS);
        EXPECT_EQ(tucoll_wait(&ra), MPI_SUCCESS);  // already run: returns at once
    }
    EXPECT_TRUE(all_ranks(a.buffers.recv == want[0] && b.buffers.recv == want[1]));
    tucoll_request_free(&ra);
}

TEST(Persistent, TheCallersDatatypeMayBeFreedAfterTheInit) {
    const int p = world_size(), me = world_rank();
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    std::vector<int> counts(p), displs(p), send, recv, want;
    int total = 0;
    for (int j = 0; j < p; ++j) {
        counts[j] = 1 + (me + j) % 3;  // pairs; symmetric, so it is also what rank j sends here
        displs[j] = total;
        total += counts[j];
    }
    for (int k = 0; k < 2 * total; ++k) send.push_back(me * 1000 + k);
    recv.assign(2 * total, -1);
    want.assign(2 * total, -1);
    tucoll_request_t request = TUCOLL_REQUEST_NULL;
    const int rc = tucoll_alltoallv_init_with("pairwise", send.data(), counts.data(), displs.data(), pair, recv.data(),
                                              counts.data(), displs.data(), pair, MPI_COMM_WORLD, MPI_INFO_NULL,
                                              &request);
    ASSERT_TRUE(all_ranks(rc == MPI_SUCCESS));
    MPI_Alltoallv(send.data(), counts.data(), displs.data(), pair, want.data(), counts.data(), displs.data(), pair,
                  MPI_COMM_WORLD);
    MPI_Type_free(&pair);
    EXPECT_EQ(tucoll_start(&request), MPI_SUCCESS);
    EXPECT_EQ(tucoll_wait(&request), MPI_SUCCESS);
    EXPECT_TRUE(all_ranks(recv == want));
    tucoll_request_free(&request);
}

TEST(Persistent, AutoStillExploringAsksAgainAtEveryStartUntilItSettles) {
    setenv("TUCOLL_AUTO", "online", 1);
    tucoll_comm_release_scratch(MPI_COMM_WORLD);
    TypedExchange x;
    TUCOLL_ASSERT_SETUP(build_exchange("uniform", "char", 32, 11, &x));
    int rc = MPI_SUCCESS;
    tucoll_request_t request = init("auto", x, &rc);
    ASSERT_TRUE(all_ranks(rc == MPI_SUCCESS));
    EXPECT_TRUE(starts_match_the_vendor(request, x, 40));
    tucoll_stats_t stats{};
    tucoll_get_stats(MPI_COMM_WORLD, &stats);
    EXPECT_NE(std::string(stats.path).find("auto online: " + std::string(stats.algorithm)), std::string::npos)
        << stats.path;
    EXPECT_NE(std::string(stats.path).find("persistent"), std::string::npos) << stats.path;
    tucoll_request_free(&request);
    unsetenv("TUCOLL_AUTO");
    tucoll_comm_release_scratch(MPI_COMM_WORLD);
}

TEST(Persistent, MisuseIsAnErrorNotAHang) {
    TypedExchange x;
    TUCOLL_ASSERT_SETUP(build_exchange("uniform", "char", 8, 11, &x));
    int rc = MPI_SUCCESS;
    tucoll_request_t request = init("spreadout", x, &rc);
    ASSERT_TRUE(all_ranks(rc == MPI_SUCCESS));
    EXPECT_EQ(tucoll_wait(&request), MPI_SUCCESS);  // inactive: completes at once, no exchange
    EXPECT_EQ(tucoll_start(&request), MPI_SUCCESS);
    EXPECT_EQ(tucoll_start(&request), MPI_ERR_REQUEST);        // already active
    EXPECT_EQ(tucoll_request_free(&request), MPI_ERR_REQUEST);  // active: wait first
    EXPECT_EQ(tucoll_wait(&request), MPI_SUCCESS);
    EXPECT_EQ(tucoll_request_free(&request), MPI_SUCCESS);
    tucoll_request_t null = TUCOLL_REQUEST_NULL;
    EXPECT_EQ(tucoll_start(&null), MPI_ERR_REQUEST);
    EXPECT_EQ(tucoll_wait(&null), MPI_SUCCESS);  // as MPI_Wait of MPI_REQUEST_NULL
    int flag = 0;
    EXPECT_EQ(tucoll_test(&null, &flag), MPI_SUCCESS);
    EXPECT_EQ(flag, 1);
    EXPECT_EQ(tucoll_start(nullptr), MPI_ERR_ARG);
    EXPECT_EQ(tucoll_wait(nullptr), MPI_ERR_ARG);
    EXPECT_EQ(tucoll_request_free(nullptr), MPI_ERR_ARG);
}

// MPI_Comm_free marks a communicator for deallocation: its persistent requests keep it, and
// go on starting, until they are freed. A nonblocking call outstanding at the free completes
// there, and its wait still reports it.
TEST(Persistent, PlansOutliveTheirCommunicator) {
    const int p = world_size(), me = world_rank();
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    std::vector<int> counts(p, 2), displs(p), send(2 * p), recv(2 * p, -1), want(2 * p);
    for (int j = 0; j < p; ++j) displs[j] = 2 * j;
    std::vector<int> mine(3), gathered(3 * p, -1), gathered_want(3 * p);
    std::vector<int> isend(p, me), irecv(p, -1), irecv_want(p);
    for (int j = 0; j < p; ++j) irecv_want[j] = j;
    tucoll_request_t a2a = TUCOLL_REQUEST_NULL, gather = TUCOLL_REQUEST_NULL, call = TUCOLL_REQUEST_NULL;
    ASSERT_TRUE(all_ranks(tucoll_alltoallv_init_with("tuna:radix=2", send.data(), counts.data(), displs.data(),
                                                     MPI_INT, recv.data(), counts.data(), displs.data(), MPI_INT,
                                                     comm, MPI_INFO_NULL, &a2a) == MPI_SUCCESS));
    ASSERT_TRUE(all_ranks(tucoll_allgather_init_with("ring", mine.data(), 3, MPI_INT, gathered.data(), 3, MPI_INT,
                                                     comm, MPI_INFO_NULL, &gather) == MPI_SUCCESS));
    ASSERT_EQ(tucoll_ialltoall_with("pairwise", isend.data(), 1, MPI_INT, irecv.data(), 1, MPI_INT, comm, &call),
              MPI_SUCCESS);
    ASSERT_EQ(MPI_Comm_free(&comm), MPI_SUCCESS);
    EXPECT_EQ(tucoll_wait(&call), MPI_SUCCESS);
    EXPECT_TRUE(all_ranks(irecv == irecv_want));
    for (int s = 0; s < 3; ++s) {
        for (int k = 0; k < 2 * p; ++k) send[k] = me * 1000 + k + 7 * s;
        for (int k = 0; k < 3; ++k) mine[k] = me * 100 + k + s;
        MPI_Alltoallv(send.data(), counts.data(), displs.data(), MPI_INT, want.data(), counts.data(), displs.data(),
                      MPI_INT, MPI_COMM_WORLD);
        MPI_Allgather(mine.data(), 3, MPI_INT, gathered_want.data(), 3, MPI_INT, MPI_COMM_WORLD);
        tucoll_request_t both[2] = {a2a, gather};
        for (tucoll_request_t &r : both) EXPECT_EQ(tucoll_start(&r), MPI_SUCCESS);
        for (tucoll_request_t &r : both) EXPECT_EQ(tucoll_wait(&r), MPI_SUCCESS);
        EXPECT_TRUE(all_ranks(recv == want && gathered == gathered_want)) << "start " << s;
    }
    // The last free ends the context (its private communicators freed, locally); ranks free in
    // different orders.
    if (me % 2 == 0) std::swap(a2a, gather);
    EXPECT_EQ(tucoll_request_free(&a2a), MPI_SUCCESS);
    EXPECT_EQ(tucoll_request_free(&gather), MPI_SUCCESS);
}

TEST(Persistent, AnArgumentRejectedOnOneRankFailsTheInitEverywhere) {
    TypedExchange x;
    TUCOLL_ASSERT_SETUP(build_exchange("uniform", "char", 8, 11, &x));
    if (world_rank() == world_size() - 1) x.buffers.sendcounts[0] = -1;
    int rc = MPI_SUCCESS;
    tucoll_request_t request = init("spreadout", x, &rc);
    EXPECT_NE(rc, MPI_SUCCESS);
    EXPECT_EQ(request, TUCOLL_REQUEST_NULL);
    EXPECT_TRUE(all_ranks(rc != MPI_SUCCESS && request == TUCOLL_REQUEST_NULL));
}

// ---- tucoll_alltoall_init -------------------------------------------------------------------

// `starts` starts of an alltoall plan of n ints per block (in place or not), the send side
// changed before each, each result against MPI_Alltoall on the same contents.
bool alltoall_plan_matches(const char *spec, int n, bool in_place, int starts) {
    const int p = world_size(), me = world_rank();
    std::vector<int> send(static_cast<size_t>(p) * n), recv(send.size()), want(send.size());
    tucoll_request_t request = TUCOLL_REQUEST_NULL;
    const int rc = tucoll_alltoall_init_with(spec, in_place ? MPI_IN_PLACE : send.data(), n, MPI_INT, recv.data(), n,
                                             MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &request);
    EXPECT_EQ(rc, MPI_SUCCESS) << spec << ": " << tucoll_error_string(rc);
    if (!all_ranks(rc == MPI_SUCCESS)) return false;
    bool ok = true;
    for (int s = 0; s < starts; ++s) {
        for (size_t k = 0; k < send.size(); ++k) send[k] = me * 100000 + static_cast<int>(k) * 7 + s;
        if (in_place) {
            recv = send;
            want = send;
            MPI_Alltoall(MPI_IN_PLACE, n, MPI_INT, want.data(), n, MPI_INT, MPI_COMM_WORLD);
        } else {
            std::fill(recv.begin(), recv.end(), -1);
            MPI_Alltoall(send.data(), n, MPI_INT, want.data(), n, MPI_INT, MPI_COMM_WORLD);
        }
        const int rc_start = tucoll_start(&request);
        const int rc_wait = tucoll_wait(&request);
        EXPECT_EQ(rc_start, MPI_SUCCESS) << tucoll_error_string(rc_start);
        EXPECT_EQ(rc_wait, MPI_SUCCESS) << tucoll_error_string(rc_wait);
        ok = ok && rc_start == MPI_SUCCESS && rc_wait == MPI_SUCCESS && recv == want;
    }
    EXPECT_EQ(tucoll_request_free(&request), MPI_SUCCESS);
    return all_ranks(ok);
}

TEST(PersistentAlltoall, EveryAlgorithmMatchesMPI_Alltoall) {
    for (const auto &alg : alltoallv::alltoall_registry()) {
        for (int n : {0, 1, 5}) {
            for (bool in_place : {false, true}) {
                EXPECT_TRUE(alltoall_plan_matches(alg.name.c_str(), n, in_place, 3))
                    << alg.name << ", " << n << " ints" << (in_place ? ", in place" : "");
            }
        }
    }
}

TEST(PersistentAlltoall, AnotherAlltoallBetweenStartsChangesNothing) {
    // The counts and displacements of an alltoall are the communicator's, remade by its next call
    // with another count: the plan keeps its own.
    const int p = world_size(), me = world_rank();
    std::vector<int> send(p * 3), recv(p * 3, -1), want(p * 3), other(p * 5, me), other_recv(p * 5);
    for (int k = 0; k < 3 * p; ++k) send[k] = me * 1000 + k;
    MPI_Alltoall(send.data(), 3, MPI_INT, want.data(), 3, MPI_INT, MPI_COMM_WORLD);
    tucoll_request_t request = TUCOLL_REQUEST_NULL;
    ASSERT_TRUE(all_ranks(tucoll_alltoall_init_with("pairwise", send.data(), 3, MPI_INT, recv.data(), 3, MPI_INT,
                                                    MPI_COMM_WORLD, MPI_INFO_NULL, &request) == MPI_SUCCESS));
    EXPECT_EQ(tucoll_alltoall_with("pairwise", other.data(), 5, MPI_INT, other_recv.data(), 5, MPI_INT,
                                   MPI_COMM_WORLD),
              MPI_SUCCESS);
    EXPECT_EQ(tucoll_start(&request), MPI_SUCCESS);
    EXPECT_EQ(tucoll_wait(&request), MPI_SUCCESS);
    EXPECT_TRUE(all_ranks(recv == want));
    tucoll_request_free(&request);
}

// ---- tucoll_allgather_init, tucoll_allgatherv_init -------------------------------------------

// `starts` starts of an allgather(v) plan (block j: counts[j] ints; allgather: counts[0] each),
// the send side changed before each, each result against the MPI's collective.
bool allgather_plan_matches(const char *spec, bool vector, const std::vector<int> &counts, int starts) {
    const int p = world_size(), me = world_rank();
    std::vector<int> displs(p);
    int total = 0;
    for (int j = 0; j < p; ++j) {
        displs[j] = total + j;  // a gap of one int between blocks
        total = displs[j] + counts[j];
    }
    std::vector<int> send(counts[me] + 1), recv(total + 1), want(total + 1);
    tucoll_request_t request = TUCOLL_REQUEST_NULL;
    const int rc = vector ? tucoll_allgatherv_init_with(spec, send.data(), counts[me], MPI_INT, recv.data(),
                                                        counts.data(), displs.data(), MPI_INT, MPI_COMM_WORLD,
                                                        MPI_INFO_NULL, &request)
                          : tucoll_allgather_init_with(spec, send.data(), counts[0], MPI_INT, recv.data(), counts[0],
                                                       MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &request);
    EXPECT_EQ(rc, MPI_SUCCESS) << spec << ": " << tucoll_error_string(rc);
    if (!all_ranks(rc == MPI_SUCCESS)) return false;
    bool ok = true;
    for (int s = 0; s < starts; ++s) {
        for (size_t k = 0; k < send.size(); ++k) send[k] = me * 1000 + static_cast<int>(k) + 10 * s;
        std::fill(recv.begin(), recv.end(), -1);
        std::fill(want.begin(), want.end(), -1);
        if (vector) {
            MPI_Allgatherv(send.data(), counts[me], MPI_INT, want.data(), counts.data(), displs.data(), MPI_INT,
                           MPI_COMM_WORLD);
        } else {
            MPI_Allgather(send.data(), counts[0], MPI_INT, want.data(), counts[0], MPI_INT, MPI_COMM_WORLD);
        }
        const int rc_start = tucoll_start(&request);
        const int rc_wait = tucoll_wait(&request);
        EXPECT_EQ(rc_start, MPI_SUCCESS) << tucoll_error_string(rc_start);
        EXPECT_EQ(rc_wait, MPI_SUCCESS) << tucoll_error_string(rc_wait);
        ok = ok && rc_start == MPI_SUCCESS && rc_wait == MPI_SUCCESS && recv == want;
    }
    tucoll_stats_t stats{};
    tucoll_get_stats(MPI_COMM_WORLD, &stats);
    EXPECT_EQ(tucoll_request_free(&request), MPI_SUCCESS);
    return all_ranks(ok);
}

TEST(PersistentAllgather, EveryAlgorithmMatchesMPI_Allgather) {
    const int p = world_size();
    for (const auto &alg : allgather::allgather_registry()) {
        for (int n : {0, 1, 6}) {
            EXPECT_TRUE(allgather_plan_matches(alg.name.c_str(), false, std::vector<int>(p, n), 3))
                << alg.name << ", " << n << " ints";
        }
    }
}

TEST(PersistentAllgather, EveryAlgorithmMatchesMPI_Allgatherv) {
    const int p = world_size();
    std::vector<int> ragged(p), one_huge(p, 0), zeros(p, 0);
    for (int j = 0; j < p; ++j) ragged[j] = (j * 5) % 7;
    one_huge[p / 2] = 4000;
    for (const auto &alg : allgather::allgatherv_registry()) {
        for (const std::vector<int> *counts : {&ragged, &one_huge, &zeros}) {
            EXPECT_TRUE(allgather_plan_matches(alg.name.c_str(), true, *counts, 3)) << alg.name;
        }
    }
}

TEST(PersistentAllgather, TheCallersDatatypeMayBeFreedAfterTheInit) {
    const int p = world_size(), me = world_rank();
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    int recvcount = 3;  // the plan's own copy is what counts: this one changes after the init
    std::vector<int> send(6), recv(6 * p, -1), want(6 * p, -1);
    for (int k = 0; k < 6; ++k) send[k] = me * 10 + k;
    tucoll_request_t request = TUCOLL_REQUEST_NULL;
    ASSERT_TRUE(all_ranks(tucoll_allgather_init_with("ring", send.data(), 3, pair, recv.data(), recvcount, pair,
                                                     MPI_COMM_WORLD, MPI_INFO_NULL, &request) == MPI_SUCCESS));
    MPI_Allgather(send.data(), 3, pair, want.data(), 3, pair, MPI_COMM_WORLD);
    MPI_Type_free(&pair);
    recvcount = 0;
    EXPECT_EQ(tucoll_start(&request), MPI_SUCCESS);
    EXPECT_EQ(tucoll_wait(&request), MPI_SUCCESS);
    EXPECT_TRUE(all_ranks(recv == want));
    tucoll_stats_t stats{};
    tucoll_get_stats(MPI_COMM_WORLD, &stats);
    EXPECT_NE(std::string(stats.algorithm).find("ring"), std::string::npos) << stats.algorithm;
    tucoll_request_free(&request);
}

TEST(PersistentAllgather, AnArgumentRejectedOnOneRankFailsTheInitEverywhere) {
    const int p = world_size();
    std::vector<int> send(2), recv(2 * p);
    const int count = world_rank() == p - 1 ? -2 : 2;
    tucoll_request_t request = TUCOLL_REQUEST_NULL;
    const int rc = tucoll_allgather_init(send.data(), count, MPI_INT, recv.data(), 2, MPI_INT, MPI_COMM_WORLD,
                                         MPI_INFO_NULL, &request);
    EXPECT_NE(rc, MPI_SUCCESS);
    EXPECT_TRUE(all_ranks(rc != MPI_SUCCESS && request == TUCOLL_REQUEST_NULL));
    EXPECT_EQ(tucoll_allgather_init(send.data(), 2, MPI_INT, recv.data(), 2, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL,
                                    nullptr),
              MPI_ERR_ARG);
}

}  // namespace
}  // namespace tucoll::test
