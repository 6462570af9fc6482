// Bad input returns an MPI error class with a message — never a crash, a hang or a write.
#include <gtest/gtest.h>

#include <cstdlib>
#include <numeric>

#include "allgather/allgather.h"
#include "alltoallv/alltoallv.h"
#include "test_util.h"
#include "tucoll.h"

namespace tucoll::test {
namespace {

// A small valid exchange (every block 3 ints) that tests break one argument at a time.
struct Args {
    int p = world_size(), me = world_rank();
    std::vector<int> scounts = std::vector<int>(p, 3), sdispls = std::vector<int>(p), rcounts = scounts,
                     rdispls = std::vector<int>(p);
    std::vector<int> sbuf = std::vector<int>(3 * p, 1), rbuf = std::vector<int>(3 * p, -7);
    const void *send = sbuf.data();
    void *recv = rbuf.data();
    MPI_Datatype stype = MPI_INT, rtype = MPI_INT;
    MPI_Comm comm = MPI_COMM_WORLD;
    Args() {
        for (int i = 0; i < p; ++i) sdispls[i] = rdispls[i] = 3 * i;
    }
    int call(const char *spec) {
        return tucoll_alltoallv_with(spec, send, scounts.data(), sdispls.data(), stype, recv, rcounts.data(),
                                     rdispls.data(), rtype, comm);
    }
    bool recv_untouched() const {
        return std::all_of(rbuf.begin(), rbuf.end(), [](int v) { return v == -7; });
    }
};

class BadInput : public ::testing::TestWithParam<std::string> {
  protected:
    // Every rank passes the same bad argument; every rank must get `expected` and a message
    // containing `fragment`, with the receive buffer untouched.
    void expect_error(Args &a, int expected, const std::string &fragment) {
        const int rc = a.call(GetParam().c_str());
        int cls = rc;
        MPI_Error_class(rc, &cls);
        EXPECT_EQ(cls, expected) << tucoll_error_string(rc);
        const std::string msg = tucoll_error_string(rc);
        EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
        EXPECT_TRUE(a.recv_untouched());
        EXPECT_TRUE(all_ranks(cls == expected));
    }
};

TEST_P(BadInput, NegativeSendCount) {
    Args a;
    a.scounts[a.p - 1] = -1;
    expect_error(a, MPI_ERR_COUNT, "sendcounts[" + std::to_string(a.p - 1) + "] = -1 is negative");
}

TEST_P(BadInput, NegativeRecvCount) {
    Args a;
    a.rcounts[0] = -5;
    expect_error(a, MPI_ERR_COUNT, "recvcounts[0] = -5 is negative");
}

TEST_P(BadInput, NullSendBufferWithData) {
    Args a;
    a.send = nullptr;
    expect_error(a, MPI_ERR_BUFFER, "sendbuf is NULL but holds");
}

TEST_P(BadInput, NullRecvBufferWithData) {
    Args a;
    a.recv = nullptr;
    const int rc = a.call(GetParam().c_str());
    EXPECT_EQ(rc, MPI_ERR_BUFFER);
    EXPECT_NE(std::string(tucoll_error_string(rc)).find("recvbuf is NULL"), std::string::npos);
}

TEST_P(BadInput, NullBuffersWithoutDataAreFine) {
    Args a;
    std::fill(a.scounts.begin(), a.scounts.end(), 0);
    std::fill(a.rcounts.begin(), a.rcounts.end(), 0);
    a.send = nullptr;
    a.recv = nullptr;
    const int rc = a.call(GetParam().c_str());
    EXPECT_EQ(rc, MPI_SUCCESS) << tucoll_error_string(rc);
    EXPECT_TRUE(all_ranks(rc == MPI_SUCCESS));
}

TEST_P(BadInput, NullCountArray) {
    Args a;
    const int rc = tucoll_alltoallv_with(GetParam().c_str(), a.send, nullptr, a.sdispls.data(), MPI_INT, a.recv,
                                         a.rcounts.data(), a.rdispls.data(), MPI_INT, MPI_COMM_WORLD);
    EXPECT_EQ(rc, MPI_ERR_ARG);
    EXPECT_NE(std::string(tucoll_error_string(rc)).find("sendcounts is NULL"), std::string::npos);
    const int rc2 = tucoll_alltoallv_with(GetParam().c_str(), a.send, a.scounts.data(), a.sdispls.data(), MPI_INT,
                                          a.recv, a.rcounts.data(), nullptr, MPI_INT, MPI_COMM_WORLD);
    EXPECT_EQ(rc2, MPI_ERR_ARG);
    EXPECT_NE(std::string(tucoll_error_string(rc2)).find("rdispls is NULL"), std::string::npos);
}

TEST_P(BadInput, NullDatatype) {
    Args a;
    a.stype = MPI_DATATYPE_NULL;
    expect_error(a, MPI_ERR_TYPE, "sendtype: datatype is MPI_DATATYPE_NULL");
}

TEST_P(BadInput, NullCommunicator) {
    Args a;
    a.comm = MPI_COMM_NULL;
    const int rc = a.call(GetParam().c_str());
    EXPECT_EQ(rc, MPI_ERR_COMM);
    EXPECT_NE(std::string(tucoll_error_string(rc)).find("MPI_COMM_NULL"), std::string::npos);
}

TEST_P(BadInput, InPlaceReceiveBuffer) {
    Args a;
    a.recv = MPI_IN_PLACE;
    expect_error(a, MPI_ERR_BUFFER, "recvbuf cannot be MPI_IN_PLACE");
}

TEST_P(BadInput, SelfBlockSizesDisagree) {
    Args a;
    a.rcounts[a.me] = 2;
    expect_error(a, MPI_ERR_TRUNCATE, "to itself");
}

TEST_P(BadInput, AliasedBuffers) {
    Args a;
    a.send = a.recv;
    expect_error(a, MPI_ERR_BUFFER, "use MPI_IN_PLACE");
}

INSTANTIATE_TEST_SUITE_P(Registry, BadInput, ::testing::ValuesIn([] {
                             std::vector<std::string> names;
                             for (const auto &alg : alltoallv::registry()) names.push_back(alg.name);
                             return names;
                         }()),
                         [](const auto &info) { return info.param; });

TEST(BadSpec, UnknownAlgorithm) {
    Args a;
    const int rc = a.call("no_such_algorithm");
    EXPECT_EQ(rc, MPI_ERR_ARG);
    EXPECT_NE(std::string(tucoll_error_string(rc)).find("unknown alltoallv algorithm \"no_such_algorithm\""),
              std::string::npos);
    EXPECT_TRUE(a.recv_untouched());
}

TEST(BadSpec, OutOfRangeParameter) {
    Args a;
    const int rc = a.call("scattered:block_count=-2");
    EXPECT_EQ(rc, MPI_ERR_ARG);
    EXPECT_NE(std::string(tucoll_error_string(rc)).find("block_count=-2 is out of range"), std::string::npos)
        << tucoll_error_string(rc);
    EXPECT_TRUE(a.recv_untouched());
}

TEST(BadSpec, UnknownParameterAndSyntax) {
    Args a;
    EXPECT_EQ(a.call("scattered:radix=2"), MPI_ERR_ARG);
    EXPECT_NE(std::string(tucoll_error_string(MPI_ERR_ARG)).find("unknown parameter \"radix\""), std::string::npos);
    EXPECT_EQ(a.call("scattered:block_count"), MPI_ERR_ARG);
    EXPECT_EQ(a.call("linear:block_count=1"), MPI_ERR_ARG);
    EXPECT_TRUE(a.recv_untouched());
}

TEST(BadSpec, EnvironmentVariableIsCheckedToo) {
    Args a;
    int rc = MPI_SUCCESS;
    {
        ScopedEnv env("TUCOLL_ALLTOALLV", "scattered:block_count=x", a.comm);
        rc = a.call(nullptr);
    }
    EXPECT_EQ(rc, MPI_ERR_ARG);
    EXPECT_NE(std::string(tucoll_error_string(rc)).find("TUCOLL_ALLTOALLV=scattered:block_count=x"), std::string::npos)
        << tucoll_error_string(rc);
}

// A spec set once for a whole job (the environment) must run on every communicator the program
// makes: radix 3 does not exist on 2 ranks, so there it runs radix 2. A spec passed to _with
// stays strict.
TEST(JobWideSpec, OutOfRangeForThisCommunicatorIsClamped) {
    const int me = world_rank();
    MPI_Comm pair;
    MPI_Comm_split(MPI_COMM_WORLD, me / 2, me, &pair);
    int p = 1;
    MPI_Comm_size(pair, &p);
    std::vector<int> counts(p, 3), displs(p), send(3 * p, me), recv(3 * p, -7);
    for (int j = 0; j < p; ++j) displs[j] = 3 * j;
    auto call = [&](const char *spec) {
        return tucoll_alltoallv_with(spec, send.data(), counts.data(), displs.data(), MPI_INT, recv.data(),
                                     counts.data(), displs.data(), MPI_INT, pair);
    };
    int rc = MPI_SUCCESS;
    {
        ScopedEnv env("TUCOLL_ALLTOALLV", "tuna:radix=3", pair);
        rc = call(nullptr);
    }
    EXPECT_EQ(rc, MPI_SUCCESS) << tucoll_error_string(rc);
    tucoll_stats_t s;
    ASSERT_EQ(tucoll_get_stats(pair, &s), MPI_SUCCESS);
    EXPECT_STREQ(s.algorithm, "tuna:radix=2");
    const int strict = call("tuna:radix=3");
    EXPECT_EQ(strict, MPI_ERR_ARG);
    EXPECT_NE(std::string(tucoll_error_string(strict)).find("radix=3 is out of range"), std::string::npos);
    MPI_Comm_free(&pair);
}

TEST(BadInputOnSomeRanks, GlobalCheckingReportsItEverywhere) {
    if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
    Args a;
    if (a.me == a.p - 1) a.scounts[0] = -3;  // only the last rank is wrong
    int rc = MPI_SUCCESS;
    {
        ScopedEnv env("TUCOLL_CHECK", "global", a.comm);
        rc = a.call("linear");
    }
    EXPECT_EQ(rc, MPI_ERR_COUNT);
    const std::string msg = tucoll_error_string(rc);
    if (a.me == a.p - 1) {
        EXPECT_NE(msg.find("sendcounts[0] = -3"), std::string::npos) << msg;
    } else {
        EXPECT_NE(msg.find("rank " + std::to_string(a.p - 1) + " rejected its arguments"), std::string::npos) << msg;
    }
    EXPECT_TRUE(a.recv_untouched());
    EXPECT_TRUE(all_ranks(rc == MPI_ERR_COUNT));
}

// Overlapping receive blocks are erroneous; a forwarding allgatherv would leave different
// contents on different ranks. Every rank passes the same arguments and gets MPI_ERR_ARG.
// tucoll_alltoall's errors name tucoll_alltoall, not the alltoallv it runs on.
TEST(BadInput, AlltoallErrorsNameTheirFunction) {
    std::vector<int> buf(4 * world_size(), 1);
    const int rc = tucoll_alltoall(buf.data(), 4, MPI_INT, buf.data(), 4, MPI_INT, MPI_COMM_WORLD);
    EXPECT_EQ(rc, MPI_ERR_BUFFER);
    EXPECT_EQ(std::string(tucoll_error_string(rc)).rfind("tucoll: tucoll_alltoall: sendbuf and recvbuf", 0), 0u)
        << tucoll_error_string(rc);
}

TEST(BadInput, OverlappingAllgathervBlocks) {
    const int p = world_size(), me = world_rank();
    if (p < 2) GTEST_SKIP() << "needs two blocks";
    std::vector<int> counts(p, 3), displs(p), recv(3 * p, -7), send(3, me);
    for (int j = 0; j < p; ++j) displs[j] = 3 * j;
    displs[p - 1] -= 1;  // the last block starts inside the one before
    for (size_t i = 0; i < allgather::allgatherv_registry().size(); ++i) {
        const std::string spec = allgather::allgatherv_registry()[i].name;
        const int rc = tucoll_allgatherv_with(spec.c_str(), send.data(), 3, MPI_INT, recv.data(), counts.data(),
                                              displs.data(), MPI_INT, MPI_COMM_WORLD);
        EXPECT_EQ(rc, MPI_ERR_ARG) << spec;
        EXPECT_NE(std::string(tucoll_error_string(rc)).find("overlap"), std::string::npos) << tucoll_error_string(rc);
        EXPECT_TRUE(std::all_of(recv.begin(), recv.end(), [](int v) { return v == -7; })) << spec;
    }
}

TEST(BadInput, Intercommunicator) {
    if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
    const int me = world_rank();
    MPI_Comm half, inter;
    MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, me % 2 == 0 ? 1 : 0, 99, &inter);
    Args a;
    a.comm = inter;
    const int rc = a.call("linear");
    EXPECT_EQ(rc, MPI_ERR_COMM);
    EXPECT_NE(std::string(tucoll_error_string(rc)).find("intercommunicators"), std::string::npos);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
}

TEST(ErrorString, FallsBackToMpiText) {
    EXPECT_STREQ(tucoll_error_string(MPI_SUCCESS), "success");
    Args a;
    a.call("no_such_algorithm");
    const std::string mpi_text = tucoll_error_string(MPI_ERR_TRUNCATE);  // not the last error
    EXPECT_EQ(mpi_text.find("tucoll:"), std::string::npos) << mpi_text;
    EXPECT_FALSE(mpi_text.empty());
}

}  // namespace
}  // namespace tucoll::test
