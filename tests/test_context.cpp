// The per-communicator context: topology, private communicator, scratch reuse and statistics.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <functional>
#include <new>
#include <numeric>

#include "allgather/allgather.h"
#include "alltoallv/alltoallv.h"
#include "core/context.h"
#include "core/datatype.h"
#include "test_util.h"
#include "tucoll.h"
#include "typed_buffers.h"
#include "workload.h"

// Every operator new of this process counted (the library's and libstdc++'s too: the program's
// definitions replace theirs), so that a test can say a call allocated nothing. Not under
// AddressSanitizer, which replaces them itself.
#if !defined(__SANITIZE_ADDRESS__)
namespace {
std::atomic<uint64_t> news{0};
}  // namespace

void *operator new(std::size_t bytes) {
    news.fetch_add(1, std::memory_order_relaxed);
    if (void *p = std::malloc(bytes != 0 ? bytes : 1)) return p;
    throw std::bad_alloc();
}
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
#define TUCOLL_COUNTS_NEWS 1
#endif

namespace tucoll::test {
namespace {

using bench::AlltoallvBuffers;
using bench::Layout;
using bench::TypePair;
using bench::Workload;

// A fresh communicator, so that the context (and its topology) is created anew.
struct FreshComm {
    MPI_Comm comm = MPI_COMM_NULL;
    FreshComm() { MPI_Comm_dup(MPI_COMM_WORLD, &comm); }
    ~FreshComm() { MPI_Comm_free(&comm); }
};

TEST(Topology, DetectedFromSharedMemoryByDefault) {
    unsetenv("TUCOLL_PPN");
    FreshComm c;
    tucoll_topology_t t;
    ASSERT_EQ(tucoll_comm_get_topology(c.comm, &t), MPI_SUCCESS);
    // One machine: a single node holding every rank.
    EXPECT_EQ(t.num_nodes, 1);
    EXPECT_EQ(t.node, 0);
    EXPECT_EQ(t.local_rank, world_rank());
    EXPECT_EQ(t.local_size, world_size());
    EXPECT_EQ(t.ppn, world_size());
    EXPECT_EQ(t.regular, 1);
    EXPECT_EQ(t.source, 0);
}

TEST(Topology, EnvironmentDeclaresRanksPerNode) {
    const int p = world_size(), me = world_rank();
    setenv("TUCOLL_PPN", "2", 1);
    FreshComm c;
    tucoll_topology_t t;
    ASSERT_EQ(tucoll_comm_get_topology(c.comm, &t), MPI_SUCCESS);
    unsetenv("TUCOLL_PPN");
    EXPECT_EQ(t.node, me / 2);
    EXPECT_EQ(t.local_rank, me % 2);
    EXPECT_EQ(t.num_nodes, (p + 1) / 2);
    EXPECT_EQ(t.local_size, std::min(2, p - (me / 2) * 2));
    const bool equal_nodes = p % 2 == 0 || p < 2;  // a single node is always regular
    EXPECT_EQ(t.regular, equal_nodes ? 1 : 0);
    EXPECT_EQ(t.ppn, equal_nodes ? std::min(2, p) : 0);
    EXPECT_EQ(t.source, 1);
}

TEST(Topology, ApiOverridesAndRestores) {
    const int p = world_size(), me = world_rank();
    FreshComm c;
    ASSERT_EQ(tucoll_comm_set_ppn(c.comm, 3), MPI_SUCCESS);
    tucoll_topology_t t;
    ASSERT_EQ(tucoll_comm_get_topology(c.comm, &t), MPI_SUCCESS);
    EXPECT_EQ(t.node, me / 3);
    EXPECT_EQ(t.num_nodes, (p + 2) / 3);
    EXPECT_EQ(t.source, 2);
    EXPECT_EQ(t.regular, p % 3 == 0 || p < 3 ? 1 : 0);
    ASSERT_EQ(tucoll_comm_set_ppn(c.comm, 0), MPI_SUCCESS);
    ASSERT_EQ(tucoll_comm_get_topology(c.comm, &t), MPI_SUCCESS);
    EXPECT_EQ(t.num_nodes, 1);
    EXPECT_EQ(t.source, 0);
}

TEST(Topology, DisagreeingRanksGetAnErrorEverywhere) {
    if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
    FreshComm c;
    const int rc = tucoll_comm_set_ppn(c.comm, world_rank() == 0 ? 2 : 1);
    EXPECT_EQ(rc, MPI_ERR_ARG);
    EXPECT_NE(std::string(tucoll_error_string(rc)).find("different values"), std::string::npos);
    setenv("TUCOLL_PPN", world_rank() == 0 ? "1" : "2", 1);
    FreshComm d;
    tucoll_topology_t t;
    const int rc2 = tucoll_comm_get_topology(d.comm, &t);
    unsetenv("TUCOLL_PPN");
    EXPECT_EQ(rc2, MPI_ERR_ARG);
    EXPECT_NE(std::string(tucoll_error_string(rc2)).find("TUCOLL_PPN"), std::string::npos) << tucoll_error_string(rc2);
}

TEST(Topology, MalformedEnvironmentIsAnError) {
    setenv("TUCOLL_PPN", "many", 1);
    FreshComm c;
    tucoll_topology_t t;
    const int rc = tucoll_comm_get_topology(c.comm, &t);
    unsetenv("TUCOLL_PPN");
    EXPECT_EQ(rc, MPI_ERR_ARG);
    EXPECT_NE(std::string(tucoll_error_string(rc)).find("TUCOLL_PPN=many"), std::string::npos);
}

TEST(Scratch, BuffersAreReusedAndGrowOnlyWhenNeeded) {
    ScratchBuffer buffer;
    char *a = buffer.get(1000);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
    EXPECT_GE(buffer.capacity(), 1000u);
    const uint64_t allocations = ScratchBuffer::allocations();
    EXPECT_EQ(buffer.get(10), a);
    EXPECT_EQ(buffer.get(1000), a);
    EXPECT_EQ(ScratchBuffer::allocations(), allocations);
    char *b = buffer.get(100000);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(ScratchBuffer::allocations(), allocations + 1);
    EXPECT_EQ(buffer.get(5000), b);
}

// Repeated calls of every algorithm with a non-contiguous type (packing on both sides), two
// node regions (hierarchical phases) and the same sizes: after the first call nothing is
// allocated again (no buffer, and no operator new at all), and releasing the scratch makes the
// next call rebuild the buffers.
TEST(Scratch, SteadyStateCallsAllocateNoBuffers) {
    FreshComm c;
    const int p = world_size();
    if (p >= 2) {
        ASSERT_EQ(tucoll_comm_set_ppn(c.comm, (p + 1) / 2), MPI_SUCCESS);
    }
    Workload w;
    TypePair t;
    AlltoallvBuffers b;
    TUCOLL_ASSERT_SETUP(Workload::create("uniform", 256, p, 3, &w));
    TUCOLL_ASSERT_SETUP(TypePair::create("vector", &t));
    TUCOLL_ASSERT_SETUP(bench::build_alltoallv(w, t, world_rank(), Layout::kPacked, &b));
    for (const auto &alg : alltoallv::registry()) {
        auto call = [&] {
            return tucoll_alltoallv_with(alg.name.c_str(), b.send.data(), b.sendcounts.data(), b.sdispls.data(), t.send,
                                         b.recv.data(), b.recvcounts.data(), b.rdispls.data(), t.recv, c.comm);
        };
        ASSERT_EQ(call(), MPI_SUCCESS) << alg.name;
        if (alg.meta) {  // auto keeps its choice at its second call
            ASSERT_EQ(call(), MPI_SUCCESS) << alg.name;
        }
        const uint64_t allocations = ScratchBuffer::allocations();
#ifdef TUCOLL_COUNTS_NEWS
        const uint64_t before = news.load();
#endif
        ASSERT_EQ(call(), MPI_SUCCESS) << alg.name;
#ifdef TUCOLL_COUNTS_NEWS
        // Nor anything else: the statistics' strings, schedules and requests keep their storage.
        EXPECT_EQ(news.load() - before, 0u) << alg.name << ": a steady-state call ran operator new";
#endif
        EXPECT_EQ(ScratchBuffer::allocations(), allocations) << alg.name << ": a steady-state call allocated a buffer";
        EXPECT_EQ(tucoll_comm_release_scratch(c.comm), MPI_SUCCESS);
        ASSERT_EQ(call(), MPI_SUCCESS) << alg.name;
        if (!alg.typed && !alg.meta) {  // the vendor's own calls (and auto's choice of them) pack nothing here
            EXPECT_GT(ScratchBuffer::allocations(), allocations) << alg.name << ": no buffer was rebuilt after the release";
        }
    }
}

#ifdef TUCOLL_COUNTS_NEWS
// The same for the other collectives and the nonblocking and persistent forms: after the calls
// that settle a choice, a call runs no operator new (auto keeps its choice at its second call).
TEST(Scratch, SteadyStateCallsOfEveryFormAllocateNothing) {
    FreshComm c;
    const int p = world_size();
    std::vector<int> send(4 * p, world_rank()), recv(4 * p), counts(p, 4), displs(p);
    for (int i = 0; i < p; ++i) displs[i] = 4 * i;
    auto settled = [](const std::string &what, const std::function<int()> &call) {
        for (int warm = 0; warm < 2; ++warm) ASSERT_EQ(call(), MPI_SUCCESS) << what;
        const uint64_t before = news.load();
        ASSERT_EQ(call(), MPI_SUCCESS) << what;
        EXPECT_EQ(news.load() - before, 0u) << what << ": a steady-state call ran operator new";
    };
    for (const auto &alg : alltoallv::alltoall_registry()) {
        settled("alltoall " + alg.name, [&] {
            return tucoll_alltoall_with(alg.name.c_str(), send.data(), 4, MPI_INT, recv.data(), 4, MPI_INT, c.comm);
        });
    }
    for (const auto &alg : allgather::allgather_registry()) {
        settled("allgather " + alg.name, [&] {
            return tucoll_allgather_with(alg.name.c_str(), send.data(), 4, MPI_INT, recv.data(), 4, MPI_INT, c.comm);
        });
    }
    for (const auto &alg : allgather::allgatherv_registry()) {
        settled("allgatherv " + alg.name, [&] {
            return tucoll_allgatherv_with(alg.name.c_str(), send.data(), 4, MPI_INT, recv.data(), counts.data(),
                                          displs.data(), MPI_INT, c.comm);
        });
    }
    for (const char *spec : {"auto", "tuna:radix=2", "tuna_coalesced:radix=2"}) {
        settled(std::string("ialltoallv ") + spec, [&] {
            tucoll_request_t req;
            const int rc = tucoll_ialltoallv_with(spec, send.data(), counts.data(), displs.data(), MPI_INT, recv.data(),
                                                  counts.data(), displs.data(), MPI_INT, c.comm, &req);
            return rc != MPI_SUCCESS ? rc : tucoll_wait(&req);
        });
        tucoll_request_t plan;
        ASSERT_EQ(tucoll_alltoallv_init_with(spec, send.data(), counts.data(), displs.data(), MPI_INT, recv.data(),
                                             counts.data(), displs.data(), MPI_INT, c.comm, MPI_INFO_NULL, &plan),
                  MPI_SUCCESS);
        settled(std::string("persistent ") + spec, [&] {
            const int rc = tucoll_start(&plan);
            return rc != MPI_SUCCESS ? rc : tucoll_wait(&plan);
        });
        EXPECT_EQ(tucoll_request_free(&plan), MPI_SUCCESS);
    }
    // Calls that alternate between TuNA's shapes (radices; the node ring and the flat one) keep
    // every schedule they ran.
    const std::string other_radix = "tuna:radix=" + std::to_string(std::max(2, std::min(p, 3)));
    settled("tuna alternating radices", [&] {
        int rc = MPI_SUCCESS;
        for (const char *spec : {"tuna:radix=2", other_radix.c_str(), "tuna_coalesced:radix=2"}) {
            if (rc == MPI_SUCCESS) {
                rc = tucoll_alltoallv_with(spec, send.data(), counts.data(), displs.data(), MPI_INT, recv.data(),
                                           counts.data(), displs.data(), MPI_INT, c.comm);
            }
        }
        return rc;
    });
}
#endif

TEST(Stats, DescribeTheLastCall) {
    const int p = world_size(), me = world_rank();
    FreshComm c;
    tucoll_stats_t s;
    EXPECT_EQ(tucoll_get_stats(c.comm, &s), MPI_ERR_OTHER);
    Workload w;
    TypePair t;
    AlltoallvBuffers b;
    TUCOLL_ASSERT_SETUP(Workload::create("uniform", 100, p, 5, &w));
    for (const char *type : {"int", "vector"}) {
        TUCOLL_ASSERT_SETUP(TypePair::create(type, &t));
        TUCOLL_ASSERT_SETUP(bench::build_alltoallv(w, t, me, Layout::kPacked, &b));
        int64_t messages = 0, bytes = 0, packed = 0;
        for (int j = 0; j < p; ++j) {
            const int64_t block = b.sendcounts[j] * t.send_size;
            packed += block + b.recvcounts[j] * t.recv_size;
            if (j != me && block > 0) {
                ++messages;
                bytes += block;
            }
        }
        for (const char *spec : {"linear", "scattered:block_count=2", "vendor"}) {
            ASSERT_EQ(tucoll_alltoallv_with(spec, b.send.data(), b.sendcounts.data(), b.sdispls.data(), t.send,
                                            b.recv.data(), b.recvcounts.data(), b.rdispls.data(), t.recv, c.comm),
                      MPI_SUCCESS);
            ASSERT_EQ(tucoll_get_stats(c.comm, &s), MPI_SUCCESS);
            const bool vendor = std::string(spec) == "vendor";
            EXPECT_STREQ(s.collective, "alltoallv");
            EXPECT_STREQ(s.algorithm, spec);
            EXPECT_EQ(s.messages, messages) << spec;
            EXPECT_EQ(s.bytes_sent, bytes) << spec;
            EXPECT_EQ(s.rounds, vendor ? 0 : p - 1) << spec;
            EXPECT_EQ(s.scratch_bytes, 0) << spec;
            EXPECT_EQ(s.pack_bytes, vendor || std::string(type) == "int" ? 0 : packed) << spec << " " << type;
            EXPECT_STREQ(s.path, vendor ? "typed" : std::string(type) == "int" ? "direct" : "packed send+recv");
        }
    }
}

// The environment's choice is read when tucoll first uses a communicator and again at
// tucoll_comm_release_scratch, not at every call (a getenv per call cost more than a small call).
TEST(Settings, EnvironmentIsReadAtFirstUseAndAtReleaseScratch) {
    const int p = world_size();
    std::vector<int> send(p, world_rank()), recv(p), counts(p, 1), displs(p);
    std::iota(displs.begin(), displs.end(), 0);
    FreshComm c, unused;
    auto ran = [&](MPI_Comm comm) {
        tucoll_stats_t s;
        EXPECT_EQ(tucoll_alltoallv(send.data(), counts.data(), displs.data(), MPI_INT, recv.data(), counts.data(),
                                   displs.data(), MPI_INT, comm),
                  MPI_SUCCESS);
        EXPECT_EQ(tucoll_get_stats(comm, &s), MPI_SUCCESS);
        return std::string(s.algorithm);
    };
    ScopedEnv env("TUCOLL_ALLTOALLV", "pairwise", c.comm);
    EXPECT_EQ(ran(c.comm), "pairwise");
    setenv("TUCOLL_ALLTOALLV", "linear", 1);
    EXPECT_EQ(ran(c.comm), "pairwise");  // the communicator keeps what it read
    EXPECT_EQ(ran(unused.comm), "linear");  // one tucoll had not used reads it at its first call
    EXPECT_EQ(tucoll_comm_release_scratch(c.comm), MPI_SUCCESS);
    EXPECT_EQ(ran(c.comm), "linear");
}

// Named datatypes are described once per process; a derived type is asked every time, since a
// freed one's handle may come back as another layout.
TEST(Datatypes, DerivedTypesAreNotRememberedByHandle) {
    TypeInfo info;
    ASSERT_EQ(TypeInfo::query(MPI_INT, &info), MPI_SUCCESS);
    ASSERT_EQ(TypeInfo::query(MPI_INT, &info), MPI_SUCCESS);  // the kept description
    EXPECT_EQ(info.size, static_cast<int64_t>(sizeof(int)));
    EXPECT_TRUE(info.contiguous);
    for (int round = 0; round < 4; ++round) {
        MPI_Datatype type;
        if (round % 2 == 0) {
            MPI_Type_contiguous(3, MPI_INT, &type);
        } else {
            MPI_Type_vector(3, 1, 2, MPI_INT, &type);
        }
        MPI_Type_commit(&type);
        ASSERT_EQ(TypeInfo::query(type, &info), MPI_SUCCESS);
        EXPECT_EQ(info.size, static_cast<int64_t>(3 * sizeof(int)));
        EXPECT_EQ(info.contiguous, round % 2 == 0) << round;
        MPI_Type_free(&type);
    }
    EXPECT_EQ(TypeInfo::query(MPI_DATATYPE_NULL, &info), MPI_ERR_TYPE);
}

// A repetition keeps memory order only while each copy ends before the next begins: repeating a
// type resized below its true extent interleaves the copies (ints at 0, 8, 4, 12), though the
// whole has size = extent = true extent; repeating one resized to exactly its size does not.
TEST(Datatypes, RepeatingATypeResizedBelowItsTrueExtentIsNotContiguous) {
    MPI_Datatype transpose = interleaved_transpose(), packed_ints, row;
    MPI_Type_create_resized(MPI_INT, 0, sizeof(int), &packed_ints);
    MPI_Type_contiguous(4, packed_ints, &row);
    MPI_Type_commit(&row);
    TypeInfo info;
    ASSERT_EQ(TypeInfo::query(transpose, &info), MPI_SUCCESS);
    EXPECT_EQ(info.size, 16);
    EXPECT_EQ(info.extent, 16);
    EXPECT_EQ(info.true_extent, 16);
    EXPECT_FALSE(info.contiguous);
    ASSERT_EQ(TypeInfo::query(row, &info), MPI_SUCCESS);
    EXPECT_TRUE(info.contiguous);
    for (MPI_Datatype *t : {&transpose, &packed_ints, &row}) MPI_Type_free(t);
}

// Library messages travel on the context's private duplicate: a wildcard receive the user has
// pending on the same communicator must not catch any of them.
TEST(PrivateCommunicator, PendingUserWildcardReceiveIsNotMatched) {
    const int p = world_size(), me = world_rank();
    Workload w;
    TypePair t;
    AlltoallvBuffers b;
    TUCOLL_ASSERT_SETUP(Workload::create("uniform", 64, p, 9, &w));
    TUCOLL_ASSERT_SETUP(TypePair::create("int", &t));
    for (const auto &alg : alltoallv::registry()) {
        TUCOLL_ASSERT_SETUP(bench::build_alltoallv(w, t, me, Layout::kPacked, &b));
        b.fill_recv_sentinel();
        ASSERT_EQ(MPI_Alltoallv(b.send.data(), b.sendcounts.data(), b.sdispls.data(), t.send, b.recv.data(),
                                b.recvcounts.data(), b.rdispls.data(), t.recv, MPI_COMM_WORLD),
                  MPI_SUCCESS);
        const auto expected = b.recv;
        b.fill_recv_sentinel();

        int user_msg[2] = {-1, -1};
        MPI_Request user_req;
        MPI_Irecv(user_msg, 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &user_req);
        const int rc = tucoll_alltoallv_with(alg.name.c_str(), b.send.data(), b.sendcounts.data(), b.sdispls.data(),
                                             t.send, b.recv.data(), b.recvcounts.data(), b.rdispls.data(), t.recv,
                                             MPI_COMM_WORLD);
        int flag = 0;
        MPI_Test(&user_req, &flag, MPI_STATUS_IGNORE);
        EXPECT_EQ(flag, 0) << alg.name << ": the user's wildcard receive matched library traffic";
        MPI_Barrier(MPI_COMM_WORLD);  // no user message is sent before every rank has tested
        const int payload[2] = {me, 4242};
        MPI_Send(payload, 2, MPI_INT, (me + 1) % p, 7, MPI_COMM_WORLD);
        MPI_Status st;
        MPI_Wait(&user_req, &st);
        EXPECT_EQ(rc, MPI_SUCCESS) << tucoll_error_string(rc);
        EXPECT_EQ(user_msg[0], (me - 1 + p) % p);
        EXPECT_EQ(user_msg[1], 4242);
        EXPECT_EQ(st.MPI_TAG, 7);
        EXPECT_TRUE(all_ranks(b.recv == expected)) << alg.name;
    }
}

// The user's communicator is what the exchange spans: sub-communicators run concurrently.
TEST(PrivateCommunicator, SubCommunicatorsFromSplit) {
    const int me = world_rank();
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, me % 2, -me, &half);  // reversed rank order inside each half
    int hp = 0, hr = 0;
    MPI_Comm_size(half, &hp);
    MPI_Comm_rank(half, &hr);
    Workload w;
    TypePair t;
    AlltoallvBuffers b;
    TUCOLL_ASSERT_SETUP(Workload::create("uniform", 50, hp, 11 + me % 2, &w));
    TUCOLL_ASSERT_SETUP(TypePair::create("double", &t));
    bool ok = true;
    for (const auto &alg : alltoallv::registry()) {
        TUCOLL_ASSERT_SETUP(bench::build_alltoallv(w, t, hr, Layout::kScattered, &b));
        b.fill_recv_sentinel();
        MPI_Alltoallv(b.send.data(), b.sendcounts.data(), b.sdispls.data(), t.send, b.recv.data(),
                      b.recvcounts.data(), b.rdispls.data(), t.recv, half);
        const auto expected = b.recv;
        b.fill_recv_sentinel();
        const int rc = tucoll_alltoallv_with(alg.name.c_str(), b.send.data(), b.sendcounts.data(), b.sdispls.data(),
                                             t.send, b.recv.data(), b.recvcounts.data(), b.rdispls.data(), t.recv,
                                             half);
        EXPECT_EQ(rc, MPI_SUCCESS) << tucoll_error_string(rc);
        EXPECT_EQ(b.recv, expected) << alg.name;
        ok = ok && rc == MPI_SUCCESS && b.recv == expected;
    }
    MPI_Comm_free(&half);  // releases the context through the attribute's delete callback
    EXPECT_TRUE(all_ranks(ok));
}

// Contexts still alive at MPI_Finalize are released there, and releasing one with an RMA window
// is collective (MPI_Win_free): every rank must release them in the same order. Here the two
// communicators' handles sort differently on odd and even ranks (odd ranks reuse a freed handle's
// memory for the second one), so an order by handle would have ranks free different windows at
// once and wait forever. They are released in creation order; MPI_Finalize, after all tests,
// must return.
TEST(Finalize, ContextsWithWindowsAreReleasedAlikeOnEveryRank) {
    if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
    MPI_Comm a, b, spare = MPI_COMM_NULL;
    if (world_rank() % 2 == 1) MPI_Comm_dup(MPI_COMM_SELF, &spare);
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    if (spare != MPI_COMM_NULL) MPI_Comm_free(&spare);
    MPI_Comm_dup(MPI_COMM_WORLD, &b);
    int before = std::less<MPI_Comm>()(a, b) ? 1 : 0, lo = 0, hi = 0;  // handles: pointers or ints
    MPI_Allreduce(&before, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&before, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    // The order this test guards against must be there, or it tests nothing: say so. It is there
    // under Open MPI 4.1 and MPICH 4.0 (odd ranks reuse the freed handle's memory), not under
    // AddressSanitizer with Open MPI, whose quarantine keeps freed memory from being reused.
    if (lo == hi) {
        MPI_Comm_free(&a);
        MPI_Comm_free(&b);
        GTEST_SKIP() << "the two communicators' handles sort alike on every rank here (freed memory not reused): "
                        "nothing to test";
    }
    const int p = world_size(), me = world_rank();
    for (MPI_Comm c : {a, b}) {
        const int dest = (me + 1) % p, value = me;
        int nnz = -1, *src = nullptr;
        void *vals = nullptr;
        EXPECT_EQ(tucoll_alltoall_crs_with("rma", 1, &dest, 1, MPI_INT, &value, &nnz, &src, 1, MPI_INT, &vals, c),
                  MPI_SUCCESS);
        EXPECT_EQ(nnz, 1);
        tucoll_free(src);
        tucoll_free(vals);
    }
    // a and b are left for MPI_Finalize.
}

// The tests' own harness: a set-up step that fails on one rank (an unreadable pattern file, a bad
// workload) fails the test on every rank with that rank's reason, and no rank goes on into a
// collective with inputs the others do not have.
TEST(Harness, SetUpFailureOnOneRankIsReportedByEveryRank) {
    const int last = world_size() - 1;
    const std::string err = world_rank() == last ? "cannot open pattern file nowhere.txt" : "";
    bool agreed = true;
    EXPECT_NONFATAL_FAILURE(agreed = setup_agreed(err),
                            "set-up failed on rank " + std::to_string(last) + ": cannot open pattern file nowhere.txt");
    EXPECT_FALSE(agreed);
    EXPECT_TRUE(setup_agreed(""));
}

TEST(Harness, UnreadablePatternFileFailsTheSetUpEverywhere) {
    Workload w;
    const std::string dist = world_rank() == 0 ? "file:/nonexistent/pattern.txt" : "uniform";
    bool agreed = true;
    EXPECT_NONFATAL_FAILURE(agreed = setup_agreed(Workload::create(dist, 64, world_size(), 1, &w)),
                            "set-up failed on rank 0: ");
    EXPECT_FALSE(agreed);
}

}  // namespace
}  // namespace tucoll::test
