// The TuNA family against MPI_Alltoallv: tuna at every radix, bruck2, and the hierarchical
// variants for several ranks-per-node Q, radices 2..Q and block counts; plus the bounds the
// papers state (rounds, the size of T) checked through the statistics.
#include <gtest/gtest.h>

#include <cstdlib>

#include "test_util.h"
#include "tucoll.h"
#include "typed_buffers.h"
#include "workload.h"

namespace tucoll::test {
namespace {

using bench::AlltoallvBuffers;
using bench::Layout;
using bench::TypePair;
using bench::Workload;

// K for radix r on P ranks, counted independently of the library: rounds (x, z) with z r^x < P.
int expected_rounds(int p, int r) {
    int k = 0;
    for (long long power = 1; power < p; power *= r) {
        for (int z = 1; z < r && z * power < p; ++z) ++k;
    }
    return k;
}

// The most blocks T holds at once with radix r on P ranks, counted independently of the library
// from the digits of each slot o (its distance): before round (x, z) it holds the slots that have
// moved (lowest non-zero digit below x) and not yet arrived (highest digit at x or above); during
// the round also the round's blocks that stay (digit x is z and a higher digit is non-zero).
int64_t expected_peak(int p, int r) {
    std::vector<long long> power = {1};
    while (power.back() < p) power.push_back(power.back() * r);
    auto digit = [&](int o, size_t x) { return static_cast<int>(o / power[x] % r); };
    int64_t peak = 0;
    for (size_t x = 0; x + 1 < power.size(); ++x) {
        for (int z = 1; z < r && z * power[x] < p; ++z) {
            int64_t in_use = 0;
            for (int o = 1; o < p; ++o) {
                size_t lo = 0, hi = 0;
                while (digit(o, lo) == 0) ++lo;
                for (size_t y = 0; y + 1 < power.size(); ++y) {
                    if (digit(o, y) != 0) hi = y;
                }
                in_use += (lo < x && hi >= x) + (digit(o, x) == z && hi > x);
            }
            peak = std::max(peak, in_use);
        }
    }
    return peak;
}

struct Case {
    std::string spec;
    int q;  // ranks per node declared on the communicator; 0 = one node
    std::string dist, type;
};

std::vector<int> node_sizes() {
    const int p = world_size();
    std::vector<int> qs;
    for (int q : {1, 2, 3, 4, p}) {
        if (q <= p && std::find(qs.begin(), qs.end(), q) == qs.end()) qs.push_back(q);
    }
    return qs;
}

std::vector<std::pair<std::string, int>> specs() {
    const int p = world_size();
    std::vector<std::pair<std::string, int>> out = {{"bruck2", 0}};
    for (int r = 2; r <= std::max(2, p); ++r) out.emplace_back("tuna:radix=" + std::to_string(r), 0);
    for (int q : node_sizes()) {
        for (const char *variant : {"tuna_coalesced", "tuna_staggered"}) {
            for (int r = 2; r <= std::max(2, q); ++r) {
                for (int bc : {1, 2, 0}) {
                    out.emplace_back(std::string(variant) + ":radix=" + std::to_string(r) + ",block_count=" +
                                         std::to_string(bc),
                                     q);
                }
            }
        }
    }
    return out;
}

std::vector<Case> all_cases() {
    std::vector<Case> cases;
    for (const auto &[spec, q] : specs()) {
        for (const auto &dist : test_distributions()) {
            for (const auto &type : test_types()) cases.push_back({spec, q, dist, type});
        }
    }
    return cases;
}

bool matches(const std::string &spec, MPI_Comm comm, const std::string &dist, const std::string &type,
             int64_t max_block = 45, tucoll_stats_t *stats = nullptr) {
    return alltoallv_matches(spec, comm, dist, type, Layout::kScattered, max_block, 3, stats);
}

class TunaMatchesVendor : public ::testing::TestWithParam<Case> {};

TEST_P(TunaMatchesVendor, AllDistributionsAndTypes) {
    const Case &c = GetParam();
    EXPECT_TRUE(matches(c.spec, comm_with_ppn(c.q), c.dist, c.type));
}

INSTANTIATE_TEST_SUITE_P(Family, TunaMatchesVendor, ::testing::ValuesIn(all_cases()), [](const auto &info) {
    return sanitize(info.param.spec + "_Q" + std::to_string(info.param.q) + "__" + info.param.dist + "__" +
                    info.param.type);
});

// The largest block any rank sends in a workload, in bytes.
int64_t global_max(const std::string &dist, int64_t size, MPI_Comm comm) {
    int rank = 0, p = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    Workload w;
    const bool built = setup_agreed(Workload::create(dist, size, p, 3, &w), comm);
    int64_t local = 0, global = 0;
    if (built) {
        for (int64_t b : w.row(rank)) local = std::max(local, b);
    }
    MPI_Allreduce(&local, &global, 1, MPI_INT64_T, MPI_MAX, comm);
    return global;
}

// T holds its peak of blocks of M bytes: exactly B = P - K - 1 when no block passes through a
// rank (w <= 2, r^2 >= P), more when one does — it arrives while its predecessor is still being
// sent; staging_bytes is that excess. Nothing when r >= P - 1 (spread-out).
TEST(TunaBounds, TemporaryBufferHoldsThePeakOfBlocks) {
    const int p = world_size();
    for (const char *dist : {"onehot", "uniform", "onehuge"}) {
        const int64_t m = global_max(dist, 1000, MPI_COMM_WORLD);
        for (int r = 2; r <= std::max(2, p); ++r) {
            tucoll_stats_t s;
            const std::string spec = "tuna:radix=" + std::to_string(r);
            ASSERT_TRUE(matches(spec, MPI_COMM_WORLD, dist, "char", 1000, &s));
            const int k = expected_rounds(p, r);
            const int64_t b = p - k - 1, peak = r >= p - 1 ? 0 : expected_peak(p, r);
            EXPECT_EQ(s.rounds, k) << spec;
            EXPECT_EQ(s.scratch_bytes, peak * m) << spec << " " << dist;
            EXPECT_EQ(s.staging_bytes, (peak - std::min(peak, b)) * m) << spec << " " << dist;
            if (static_cast<long long>(r) * r >= p) {
                EXPECT_EQ(peak, r >= p - 1 ? 0 : b) << spec << ": no block passes through when w <= 2";
            }
        }
    }
}

TEST(TunaBounds, OneHotWithThousandBytesAtPEight) {
    if (world_size() != 8) GTEST_SKIP() << "the issue's P = 8 example";
    tucoll_stats_t s;
    ASSERT_TRUE(matches("tuna:radix=2", MPI_COMM_WORLD, "onehot", "char", 1000, &s));
    EXPECT_EQ(s.rounds, 3);
    // B = 8 - 3 - 1 = 4 blocks between rounds; in round x = 1 slot 7 (binary 111) passes through:
    // slots 3, 5, 7 are held and 6, 7 arrive to stay, 5 blocks at once.
    EXPECT_EQ(expected_peak(8, 2), 5);
    EXPECT_EQ(s.scratch_bytes, 5000);
    EXPECT_EQ(s.staging_bytes, 1000);
}

// The two-phase Bruck baseline keeps at least one position per block (P - 1).
TEST(TunaBounds, TwoPhaseBruckKeepsAPositionPerBlock) {
    const int p = world_size();
    if (p < 2) GTEST_SKIP();
    const int64_t m = global_max("uniform", 500, MPI_COMM_WORLD);
    tucoll_stats_t s;
    ASSERT_TRUE(matches("bruck2", MPI_COMM_WORLD, "uniform", "char", 500, &s));
    EXPECT_EQ(s.rounds, expected_rounds(p, 2));
    EXPECT_EQ(s.scratch_bytes, std::max<int64_t>(p - 1, expected_peak(p, 2)) * m);
}

TEST(TunaBounds, StoreAndForwardMovesDataThroughT) {
    const int p = world_size();
    if (p < 4) GTEST_SKIP() << "radix 2 needs P >= 4 for a block that is not direct";
    tucoll_stats_t s;
    ASSERT_TRUE(matches("tuna:radix=2", MPI_COMM_WORLD, "zeros", "char", 100, &s));
    EXPECT_EQ(s.temp_bytes, 0);
    EXPECT_EQ(s.messages, 0);
    ASSERT_TRUE(matches("tuna:radix=2", MPI_COMM_WORLD, "fft2", "char", 100, &s));
    EXPECT_GT(s.temp_bytes, 0);
    EXPECT_LE(s.messages, s.rounds);  // one data message per round at most
}

// Hierarchical rounds and buffers: intra-node TuNA (K_Q rounds, T of its peak of positions of N
// blocks) plus the blocks for other nodes, kept at the sizes announced (at least what this rank
// relays, in chunks: never more than (N-1) Q blocks of M bytes beyond the first chunk's 64 KiB);
// N-1 or (N-1) Q inter-node rounds.
TEST(Hierarchical, RoundsAndBuffersFollowTheNodeShape) {
    const int p = world_size();
    for (int q : node_sizes()) {
        if (p % q != 0) continue;
        const int n = p / q;
        const int64_t m = global_max("uniform", 300, MPI_COMM_WORLD);
        for (int r = 2; r <= std::max(2, q); ++r) {
            const int kq = expected_rounds(q, r);
            const int64_t tq = (q <= 1 || r >= q - 1) ? 0 : expected_peak(q, r);
            for (bool coalesced : {true, false}) {
                tucoll_stats_t s;
                const std::string spec = std::string(coalesced ? "tuna_coalesced" : "tuna_staggered") +
                                         ":radix=" + std::to_string(r) + ",block_count=2";
                ASSERT_TRUE(matches(spec, comm_with_ppn(q), "uniform", "char", 300, &s));
                EXPECT_EQ(s.rounds, kq + (coalesced ? n - 1 : (n - 1) * q)) << spec << " Q=" << q;
                const int64_t inter = s.scratch_bytes - tq * n * m;
                if (n == 1) {
                    EXPECT_EQ(inter, 0) << spec << " Q=" << q;
                } else {
                    EXPECT_GT(inter, 0) << spec << " Q=" << q;
                    EXPECT_LE(inter, std::max<int64_t>(64 << 10, (n - 1) * q * ((m + 7) / 8 * 8))) << spec << " Q=" << q;
                }
                EXPECT_EQ(std::string(s.path).find("fallback"), std::string::npos) << s.path;
                EXPECT_NE(std::string(s.path).find(std::to_string(n) + " nodes x " + std::to_string(q)),
                          std::string::npos)
                    << s.path;
            }
        }
    }
}

// Nodes of different sizes: the answer is still right, and the path says what ran.
TEST(Hierarchical, UnevenNodesFallBackToFlatTuna) {
    const int p = world_size();
    for (int q : {2, 3, 4}) {
        if (q >= p || p % q == 0) continue;
        for (const char *variant : {"tuna_coalesced:radix=2", "tuna_staggered:radix=2"}) {
            tucoll_stats_t s;
            EXPECT_TRUE(matches(variant, comm_with_ppn(q), "powerlaw", "int", 200, &s));
            EXPECT_NE(std::string(s.path).find("fallback to tuna:radix=2 (nodes hold different numbers of ranks)"),
                      std::string::npos)
                << s.path;
        }
    }
}

// Ranks not numbered node by node (round-robin placement), nodes of equal size: handled directly.
TEST(Hierarchical, RoundRobinPlacementIsHandled) {
    const int p = world_size(), me = world_rank();
    for (int nodes : {2, 3, 4}) {
        if (nodes >= p || p % nodes != 0) continue;
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        ASSERT_EQ(tucoll_comm_set_node(c, me % nodes), MPI_SUCCESS);
        tucoll_topology_t t;
        ASSERT_EQ(tucoll_comm_get_topology(c, &t), MPI_SUCCESS);
        EXPECT_EQ(t.num_nodes, nodes);
        EXPECT_EQ(t.ppn, p / nodes);
        EXPECT_EQ(t.regular, 0);
        EXPECT_EQ(t.node, me % nodes);
        EXPECT_EQ(t.local_rank, me / nodes);
        const std::string top_radix = std::to_string(std::max(2, p / nodes));
        for (const std::string &variant : {std::string("tuna_coalesced:radix=2,block_count=1"),
                                            "tuna_staggered:radix=" + top_radix + ",block_count=0"}) {
            for (const char *type : {"char", "vector"}) {
                tucoll_stats_t s;
                EXPECT_TRUE(matches(variant, c, "uniform", type, 77, &s));
                EXPECT_EQ(std::string(s.path).find("fallback"), std::string::npos) << s.path;
            }
        }
        MPI_Comm_free(&c);
    }
}

}  // namespace
}  // namespace tucoll::test
