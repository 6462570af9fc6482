// Every allgather and allgatherv algorithm against the vendor MPI_Allgather(v): block sizes
// 0, 1, 7 and 4096 bytes, every datatype pair, MPI_IN_PLACE, varying (and zero) block sizes;
// rounds against the papers' formulas; bad input.
#include <gtest/gtest.h>

#include <map>

#include "allgather/allgather.h"
#include "allgather_exchange.h"
#include "core/p2p.h"
#include "test_util.h"
#include "tucoll.h"
#include "typed_buffers.h"

namespace tucoll::test {
namespace {

using bench::AllgatherBuffers;
using bench::Layout;
using bench::TypePair;

// What MPI_Allgather(v) must leave in `mine.recv` on this rank, computed locally from its
// definition: every rank's block rebuilt (from its send buffer, or with MPI_IN_PLACE from its
// receive buffer), packed with the type it is sent as and unpacked with the receive type.
bench::Bytes reference(const std::vector<int64_t> &blocks, const TypePair &t, bool in_place,
                       const AllgatherBuffers &mine) {
    bench::Bytes expected = mine.initial_recv;
    std::vector<char> packed;
    bench::Bytes src;
    for (int j = 0; j < static_cast<int>(blocks.size()); ++j) {
        // Rank j's block as it sends it: its send buffer, or with MPI_IN_PLACE its own block of
        // its receive buffer; both carry the same bytes (every rank's receive layout is alike).
        const int count = in_place ? mine.recvcounts[j] : static_cast<int>(t.send_count(blocks[j]));
        const MPI_Datatype type = in_place ? t.recv : t.send;
        src.resize(static_cast<size_t>(count + 1) * (in_place ? t.recv_extent : t.send_extent));
        for (size_t k = 0; k < src.size(); ++k) src[k] = bench::allgather_send_byte(j, k);
        int bytes = 0, position = 0;
        MPI_Pack_size(count, type, MPI_COMM_SELF, &bytes);
        packed.resize(static_cast<size_t>(bytes) + 1);
        MPI_Pack(src.data(), count, type, packed.data(), bytes, &position, MPI_COMM_SELF);
        const int filled = position;
        position = 0;
        MPI_Unpack(packed.data(), filled, &position, expected.data() + static_cast<int64_t>(mine.displs[j]) * t.recv_extent,
                   mine.recvcounts[j], t.recv, MPI_COMM_SELF);
    }
    return expected;
}

// Runs `spec` — and the vendor's collective on the same buffers — and compares both with the
// reference; true on every rank iff everything matched.
bool matches(bool vector, const std::string &spec, const std::vector<int64_t> &blocks, const std::string &type,
             bool in_place, tucoll_stats_t *stats = nullptr, MPI_Comm comm = MPI_COMM_WORLD) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    TypePair t;
    AllgatherBuffers b;
    const Layout layout = vector ? Layout::kScattered : Layout::kPacked;
    std::string err = TypePair::create(type, &t);
    if (err.empty()) err = bench::build_allgather(blocks, t, rank, layout, in_place, &b);
    if (!setup_agreed(err, comm)) return false;
    const bench::Bytes expected = reference(blocks, t, in_place, b);
    const void *send = in_place ? MPI_IN_PLACE : b.send.data();
    const int vendor_rc = vector ? MPI_Allgatherv(send, b.sendcount, t.send, b.recv.data(), b.recvcounts.data(),
                                                  b.displs.data(), t.recv, comm)
                                 : MPI_Allgather(send, b.sendcount, t.send, b.recv.data(), b.recvcounts[0], t.recv, comm);
    const int64_t vendor_diff = bench::first_difference(b.recv, expected);
    EXPECT_EQ(vendor_diff, -1) << "the vendor's collective differs from the reference on rank " << rank;
    b.reset_recv();
    const int rc = vector ? tucoll_allgatherv_with(spec.c_str(), send, b.sendcount, t.send, b.recv.data(),
                                                   b.recvcounts.data(), b.displs.data(), t.recv, comm)
                          : tucoll_allgather_with(spec.c_str(), send, b.sendcount, t.send, b.recv.data(),
                                                  b.recvcounts[0], t.recv, comm);
    EXPECT_EQ(rc, MPI_SUCCESS) << spec << ": " << tucoll_error_string(rc);
    const int64_t diff = bench::first_difference(b.recv, expected);
    EXPECT_EQ(diff, -1) << spec << " (" << type << (in_place ? ", in place" : "") << ") rank " << rank
                        << ": first difference at byte " << diff;
    if (stats != nullptr) tucoll_get_stats(comm, stats);
    return all_ranks(vendor_rc == MPI_SUCCESS && vendor_diff < 0 && rc == MPI_SUCCESS && diff < 0, comm);
}

struct Case {
    std::string spec;
    int64_t size;     // allgather: bytes per rank
    std::string dist; // allgatherv: block sizes
    std::string type;
    bool in_place;
};

std::string case_name(const ::testing::TestParamInfo<Case> &info) {
    const Case &c = info.param;
    return sanitize(c.spec + "__" + (c.dist.empty() ? std::to_string(c.size) + "B" : c.dist) + "__" + c.type +
                    (c.in_place ? "__in_place" : ""));
}

std::vector<Case> allgather_cases() {
    std::vector<Case> cases;
    for (const auto &alg : allgather::allgather_registry()) {
        for (int64_t size : {0, 1, 7, 4096}) {
            for (const std::string &type : test_types()) {
                for (bool in_place : {false, true}) cases.push_back({alg.name, size, "", type, in_place});
            }
        }
    }
    return cases;
}

std::vector<Case> allgatherv_cases() {
    std::vector<Case> cases;
    for (const auto &alg : allgather::allgatherv_registry()) {
        for (const std::string &dist : test_distributions()) {
            for (const std::string &type : test_types()) {
                for (bool in_place : {false, true}) cases.push_back({alg.name, 300, dist, type, in_place});
            }
        }
    }
    return cases;
}

class AllgatherMatchesVendor : public ::testing::TestWithParam<Case> {};

TEST_P(AllgatherMatchesVendor, Blocks) {
    const Case &c = GetParam();
    EXPECT_TRUE(matches(false, c.spec, std::vector<int64_t>(world_size(), c.size), c.type, c.in_place));
}

INSTANTIATE_TEST_SUITE_P(Registry, AllgatherMatchesVendor, ::testing::ValuesIn(allgather_cases()), case_name);

class AllgathervMatchesVendor : public ::testing::TestWithParam<Case> {};

TEST_P(AllgathervMatchesVendor, Blocks) {
    const Case &c = GetParam();
    std::vector<int64_t> blocks;
    TUCOLL_ASSERT_SETUP(bench::allgatherv_block_sizes(c.dist, c.size, world_size(), 5, &blocks));
    EXPECT_TRUE(matches(true, c.spec, blocks, c.type, c.in_place));
}

INSTANTIATE_TEST_SUITE_P(Registry, AllgathervMatchesVendor, ::testing::ValuesIn(allgatherv_cases()), case_name);

TEST(Allgatherv, ZeroCountsOnSomeRanks) {
    const int p = world_size();
    std::vector<int64_t> blocks(p);
    for (int i = 0; i < p; ++i) blocks[i] = i % 3 == 1 ? 0 : 17 * (i + 1);
    for (const auto &alg : allgather::allgatherv_registry()) {
        for (const char *type : {"char", "vector"}) EXPECT_TRUE(matches(true, alg.name, blocks, type, false));
    }
}

TEST(Allgatherv, AllZero) {
    for (const auto &alg : allgather::allgatherv_registry()) {
        EXPECT_TRUE(matches(true, alg.name, std::vector<int64_t>(world_size(), 0), "int", false));
    }
}

int ceil_log2(int p) {
    int s = 0;
    while ((1 << s) < p) ++s;
    return s;
}

TEST(AllgatherRounds, FollowTheFormulas) {
    const int p = world_size();
    int p2 = 1;
    while (p2 * 2 <= p) p2 *= 2;
    // The papers' round counts; every registered algorithm must have one (the vendor's are not
    // visible), so a new algorithm comes with its formula.
    const std::map<std::string, int> expected = {
        {"ring", p - 1},
        {"neighbor", p % 2 == 0 ? p / 2 : p - 1},
        {"recdoubling", ceil_log2(p2) + (p != p2 ? 2 : 0)},
        {"bruck", ceil_log2(p)},
        {"sparbit", ceil_log2(p)},
    };
    for (const auto &alg : allgather::allgather_registry()) {
        if (alg.typed) continue;
        const std::string &spec = alg.name;
        ASSERT_EQ(expected.count(spec), 1u) << spec << " has no round formula in this test";
        const int rounds = expected.at(spec);
        tucoll_stats_t s;
        ASSERT_TRUE(matches(false, spec, std::vector<int64_t>(p, 64), "char", false, &s));
        int64_t most = 0;  // ranks may take part in fewer rounds (recdoubling's extra ranks)
        MPI_Allreduce(&s.rounds, &most, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
        EXPECT_EQ(most, rounds) << spec;
        EXPECT_EQ(s.scratch_bytes, 0) << spec;
        if (spec == "neighbor" && p % 2 == 1) {
            EXPECT_NE(std::string(s.path).find("odd P: ring"), std::string::npos);
        }
    }
    // In P parallel binomial trees every rank forwards exactly P-1 blocks in all (optimal volume).
    tucoll_stats_t s;
    ASSERT_TRUE(matches(false, "sparbit", std::vector<int64_t>(p, 64), "char", false, &s));
    EXPECT_EQ(s.bytes_sent, 64LL * (p - 1));
}

TEST(AllgatherRounds, SparbitOnTheIssueExamples) {
    const int p = world_size();
    // The examples had P = 8 and P = 21 (16 + 4 + 1); 13 = 8 + 4 + 1 has the same three subtrees
    // within the tests' 16 ranks.
    if (p != 8 && p != 13) GTEST_SKIP() << "P = 8 and P = 13 (three subtrees 8 + 4 + 1)";
    tucoll_stats_t s;
    ASSERT_TRUE(matches(false, "sparbit", std::vector<int64_t>(p, 8), "int", false, &s));
    EXPECT_EQ(s.rounds, p == 8 ? 3 : 4);
}

// Bad input: an MPI error class and a message, the receive buffer untouched.
TEST(AllgatherBadInput, ErrorsAreReported) {
    const int p = world_size();
    std::vector<int> send(4, 1), recv(4 * p, -7), counts(p, 4), displs(p);
    for (int i = 0; i < p; ++i) displs[i] = 4 * i;
    auto untouched = [&] { return std::all_of(recv.begin(), recv.end(), [](int v) { return v == -7; }); };
    struct Expect {
        int rc;
        const char *fragment;
    };
    auto check = [&](int rc, Expect e) {
        EXPECT_EQ(rc, e.rc) << tucoll_error_string(rc);
        EXPECT_NE(std::string(tucoll_error_string(rc)).find(e.fragment), std::string::npos) << tucoll_error_string(rc);
        EXPECT_TRUE(untouched());
    };
    for (const auto &alg : allgather::allgather_registry()) {
        const char *a = alg.name.c_str();
        check(tucoll_allgather_with(a, send.data(), -1, MPI_INT, recv.data(), 4, MPI_INT, MPI_COMM_WORLD),
              {MPI_ERR_COUNT, "sendcount = -1 is negative"});
        check(tucoll_allgather_with(a, send.data(), 4, MPI_INT, recv.data(), -4, MPI_INT, MPI_COMM_WORLD),
              {MPI_ERR_COUNT, "recvcount = -4 is negative"});
        check(tucoll_allgather_with(a, nullptr, 4, MPI_INT, recv.data(), 4, MPI_INT, MPI_COMM_WORLD),
              {MPI_ERR_BUFFER, "sendbuf is NULL"});
        check(tucoll_allgather_with(a, send.data(), 4, MPI_INT, nullptr, 4, MPI_INT, MPI_COMM_WORLD),
              {MPI_ERR_BUFFER, "recvbuf is NULL"});
        check(tucoll_allgather_with(a, send.data(), 3, MPI_INT, recv.data(), 4, MPI_INT, MPI_COMM_WORLD),
              {MPI_ERR_TRUNCATE, "sends 12 bytes"});
        check(tucoll_allgather_with(a, send.data(), 4, MPI_INT, MPI_IN_PLACE, 4, MPI_INT, MPI_COMM_WORLD),
              {MPI_ERR_BUFFER, "recvbuf cannot be MPI_IN_PLACE"});
        check(tucoll_allgather_with(a, send.data(), 4, MPI_DATATYPE_NULL, recv.data(), 4, MPI_INT, MPI_COMM_WORLD),
              {MPI_ERR_TYPE, "sendtype"});
    }
    for (const auto &alg : allgather::allgatherv_registry()) {
        const char *a = alg.name.c_str();
        check(tucoll_allgatherv_with(a, send.data(), 4, MPI_INT, recv.data(), nullptr, displs.data(), MPI_INT,
                                     MPI_COMM_WORLD),
              {MPI_ERR_ARG, "recvcounts is NULL"});
        check(tucoll_allgatherv_with(a, send.data(), 4, MPI_INT, recv.data(), counts.data(), nullptr, MPI_INT,
                                     MPI_COMM_WORLD),
              {MPI_ERR_ARG, "displs is NULL"});
        std::vector<int> bad = counts;
        bad[p - 1] = -2;
        check(tucoll_allgatherv_with(a, send.data(), 4, MPI_INT, recv.data(), bad.data(), displs.data(), MPI_INT,
                                     MPI_COMM_WORLD),
              {MPI_ERR_COUNT, "is negative"});
    }
    check(tucoll_allgather_with("nope", send.data(), 4, MPI_INT, recv.data(), 4, MPI_INT, MPI_COMM_WORLD),
          {MPI_ERR_ARG, "unknown allgather algorithm \"nope\""});
    check(tucoll_allgather_with("ring:radix=2", send.data(), 4, MPI_INT, recv.data(), 4, MPI_INT, MPI_COMM_WORLD),
          {MPI_ERR_ARG, "unknown parameter"});
    check(tucoll_allgatherv_with("neighbor", send.data(), 4, MPI_INT, recv.data(), counts.data(), displs.data(),
                                 MPI_INT, MPI_COMM_WORLD),
          {MPI_ERR_ARG, "unknown allgatherv algorithm \"neighbor\""});
    EXPECT_TRUE(all_ranks(untouched()));
}

TEST(AllgatherSelection, EnvironmentVariablesChooseTheDefault) {
    const int p = world_size();
    tucoll_stats_t s;
    std::vector<int> send(2, 3), recv(2 * p), counts(p, 2), displs(p);
    for (int i = 0; i < p; ++i) displs[i] = 2 * i;
    ScopedEnv allgather("TUCOLL_ALLGATHER", "sparbit");
    ScopedEnv allgatherv("TUCOLL_ALLGATHERV", "ring");
    ASSERT_EQ(tucoll_allgather(send.data(), 2, MPI_INT, recv.data(), 2, MPI_INT, MPI_COMM_WORLD), MPI_SUCCESS);
    ASSERT_EQ(tucoll_get_stats(MPI_COMM_WORLD, &s), MPI_SUCCESS);
    EXPECT_STREQ(s.collective, "allgather");
    EXPECT_STREQ(s.algorithm, "sparbit");
    ASSERT_EQ(tucoll_allgatherv(send.data(), 2, MPI_INT, recv.data(), counts.data(), displs.data(), MPI_INT,
                                MPI_COMM_WORLD),
              MPI_SUCCESS);
    ASSERT_EQ(tucoll_get_stats(MPI_COMM_WORLD, &s), MPI_SUCCESS);
    EXPECT_STREQ(s.collective, "allgatherv");
    EXPECT_STREQ(s.algorithm, "ring");
}

// Blocks above the large-message limit travel as one element of a byte datatype; lowering the
// limit takes that path with small blocks.
TEST(AllgatherLarge, MessagesAboveTheIntLimitPath) {
    detail::set_large_message_limit(1000);
    std::vector<int64_t> blocks;
    TUCOLL_ASSERT_SETUP(bench::allgatherv_block_sizes("uniform", 4000, world_size(), 5, &blocks));
    for (const auto &alg : allgather::allgather_registry()) {
        EXPECT_TRUE(matches(false, alg.name, std::vector<int64_t>(world_size(), 3000), "char", false)) << alg.name;
    }
    for (const auto &alg : allgather::allgatherv_registry()) {
        EXPECT_TRUE(matches(true, alg.name, blocks, "double", false)) << alg.name;
    }
    detail::set_large_message_limit(0);
}

// Element offsets beyond INT_MAX: 2^30 elements of a zero-size type per rank put rank j's block
// at element j * 2^30 (64-bit arithmetic: nothing in memory, nothing to overflow into). The
// vendor is left out: Open MPI's copies walk the 2^30 elements one by one.
TEST(AllgatherLarge, ElementOffsetsBeyondIntMax) {
    const int p = world_size();
    MPI_Datatype empty;
    MPI_Type_contiguous(0, MPI_INT, &empty);
    MPI_Type_commit(&empty);
    const int count = 1 << 30;
    char send = 0, recv = 0;
    std::vector<int> counts(p, count), displs(p, 0);  // zero-size blocks overlap nothing
    for (const auto &alg : allgather::allgather_registry()) {
        if (alg.typed) continue;
        const int rc = tucoll_allgather_with(alg.name.c_str(), &send, count, empty, &recv, count, empty, MPI_COMM_WORLD);
        EXPECT_EQ(rc, MPI_SUCCESS) << alg.name << ": " << tucoll_error_string(rc);
    }
    for (const auto &alg : allgather::allgatherv_registry()) {
        if (alg.typed) continue;
        const int rc = tucoll_allgatherv_with(alg.name.c_str(), &send, count, empty, &recv, counts.data(), displs.data(),
                                              empty, MPI_COMM_WORLD);
        EXPECT_EQ(rc, MPI_SUCCESS) << alg.name << ": " << tucoll_error_string(rc);
    }
    MPI_Type_free(&empty);
}

}  // namespace
}  // namespace tucoll::test
