// The sparse dynamic data exchanges against a dense reference (MPI_Alltoall of per-pair counts
// and sizes + MPI_Alltoallv): every algorithm, regions of 1, 2 and 4 ranks, every matrix in
// data/matrices and random patterns with the corner cases of seed 004's problem.
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <numeric>

#include "core/p2p.h"
#include "crs_exchange.h"
#include "sparse/sparse.h"
#include "test_util.h"
#include "tucoll.h"

namespace tucoll::test {
namespace {

using bench::CrsInput;
using bench::CrsResult;
using bench::TypePair;

struct Outputs {
    int nnz = -1, size = -1;
    int *src = nullptr, *counts = nullptr, *displs = nullptr;
    void *vals = nullptr;
    ~Outputs() {
        tucoll_free(src);
        tucoll_free(counts);
        tucoll_free(displs);
        tucoll_free(vals);
    }
};

// Runs `spec` on `in` over `comm`; compares with the dense reference. `known`: pass the receive
// totals (from the reference) instead of -1. True on every rank iff everything matches.
bool matches_reference(const std::string &spec, bool variable, const CrsInput &in, const TypePair &t, MPI_Comm comm,
                       bool known = false, tucoll_stats_t *stats = nullptr) {
    CrsResult ref;
    EXPECT_EQ(bench::crs_reference(in, t, comm, &ref), MPI_SUCCESS);
    Outputs o;
    if (known) {
        o.nnz = static_cast<int>(ref.src.size());
        o.size = std::accumulate(ref.counts.begin(), ref.counts.end(), 0);
    }
    const int nnz = static_cast<int>(in.dest.size());
    int rc;
    if (variable) {
        rc = tucoll_alltoallv_crs_with(spec.c_str(), nnz, in.total, in.dest.data(), in.counts.data(), in.displs.data(),
                                       t.send, in.values.data(), &o.nnz, &o.size, &o.src, &o.counts, &o.displs, t.recv,
                                       &o.vals, comm);
    } else {
        const int mine = in.counts.empty() ? 0 : in.counts[0];
        int count = 0;
        MPI_Allreduce(&mine, &count, 1, MPI_INT, MPI_MAX, comm);
        rc = tucoll_alltoall_crs_with(spec.c_str(), nnz, in.dest.data(), count, t.send, in.values.data(), &o.nnz,
                                      &o.src, static_cast<int>(count * t.send_size / t.recv_size), t.recv, &o.vals, comm);
    }
    EXPECT_EQ(rc, MPI_SUCCESS) << spec << ": " << tucoll_error_string(rc);
    bool ok = rc == MPI_SUCCESS && o.nnz == static_cast<int>(ref.src.size());
    EXPECT_EQ(o.nnz, static_cast<int>(ref.src.size())) << spec;
    int64_t element = 0;
    for (int i = 0; ok && i < o.nnz; ++i) {
        const int count = variable ? o.counts[i] : ref.counts[i];
        ok = o.src[i] == ref.src[i] && count == ref.counts[i] && (!variable || o.displs[i] == element);
        std::vector<unsigned char> packed(ref.data[i].size() + 1);
        int position = 0;
        MPI_Pack(static_cast<char *>(o.vals) + element * t.recv_extent, count, t.recv, packed.data(),
                 static_cast<int>(packed.size()), &position, comm);
        ok = ok && std::equal(ref.data[i].begin(), ref.data[i].end(), packed.begin());
        EXPECT_TRUE(ok) << spec << ": message " << i << " (from " << o.src[i] << ") differs";
        element += count;
    }
    if (variable && rc == MPI_SUCCESS) {
        EXPECT_EQ(o.size, element);
        ok = ok && o.size == element;
    }
    if (stats != nullptr) tucoll_get_stats(comm, stats);
    return all_ranks(ok, comm);
}

// The algorithms under test: every registered one.
std::vector<std::string> names(const RegistryBase &r) {
    std::vector<std::string> out;
    for (size_t i = 0; i < r.size(); ++i) out.push_back(r.info(i).name);
    return out;
}

// Every algorithm of both registries, regions of 1, 2 and 4 ranks.
void check_everywhere(const std::string &source, const std::string &type, int64_t size) {
    const int p = world_size(), me = world_rank();
    TypePair t;
    TUCOLL_ASSERT_SETUP(TypePair::create(type, &t));
    for (bool variable : {false, true}) {
        CrsInput in;
        TUCOLL_ASSERT_SETUP(bench::build_crs(source, variable, size, t, 17, me, p, &in));
        const auto &registry = variable ? sparse::alltoallv_crs_registry() : sparse::alltoall_crs_registry();
        for (int q : {1, 2, 4}) {
            for (const std::string &spec : names(registry)) {
                EXPECT_TRUE(matches_reference(spec, variable, in, t, comm_with_ppn(q)))
                    << source << " " << (variable ? "alltoallv_crs " : "alltoall_crs ") << spec << " Q=" << q;
            }
        }
    }
}

std::vector<std::string> matrices() {
    std::vector<std::string> files;
    const std::string dir = TUCOLL_DATA_DIR "/matrices";
    if (DIR *d = opendir(dir.c_str())) {
        while (dirent *e = readdir(d)) {
            const std::string name = e->d_name;
            if (name.size() > 4 && name.compare(name.size() - 4, 4, ".mtx") == 0) files.push_back(dir + "/" + name);
        }
        closedir(d);
    }
    std::sort(files.begin(), files.end());
    return files;
}

// The quick matrix keeps three (as it keeps three distributions): a square symmetric pattern, an
// unsymmetric one and a wide rectangular one. Under a busy-polling MPI oversubscribed each takes
// the same 1.7 s whatever its size (MPICH 4.0, P = 5 on 2 cores): every call waits on the scheduler.
std::vector<std::string> matrices_under_test() {
    std::vector<std::string> files = matrices();
    if (quick_matrix()) {
        const std::vector<std::string> kept = {"dwt_162.mtx", "west0132.mtx", "bibd_49_3.mtx"};
        std::erase_if(files, [&](const std::string &path) {
            return std::find(kept.begin(), kept.end(), path.substr(path.find_last_of('/') + 1)) == kept.end();
        });
    }
    return files;
}

class SparseOnMatrix : public ::testing::TestWithParam<std::string> {};

TEST_P(SparseOnMatrix, MatchesTheDenseReference) { check_everywhere("matrix:" + GetParam(), "int", 4); }

INSTANTIATE_TEST_SUITE_P(SuiteSparse, SparseOnMatrix, ::testing::ValuesIn(matrices_under_test()), [](const auto &info) {
    const std::string &path = info.param;
    return sanitize(path.substr(path.find_last_of('/') + 1));
});

TEST(SparseMatrices, AllPresent) { EXPECT_GE(matrices().size(), 20u) << TUCOLL_DATA_DIR "/matrices"; }

struct RandomCase {
    std::string source, type;
    int64_t size;
};

class SparseOnRandomPattern : public ::testing::TestWithParam<RandomCase> {};

TEST_P(SparseOnRandomPattern, MatchesTheDenseReference) {
    check_everywhere(GetParam().source, GetParam().type, GetParam().size);
}

INSTANTIATE_TEST_SUITE_P(Patterns, SparseOnRandomPattern,
                         ::testing::Values(RandomCase{"random:0", "int", 16},      // no messages at all
                                           RandomCase{"random:1", "int", 8},
                                           RandomCase{"random:3", "double", 40},
                                           RandomCase{"random:3", "vector", 40},  // non-contiguous type
                                           RandomCase{"random:5", "int", 0},      // every message empty
                                           RandomCase{"random:64", "int", 12}),   // everyone to everyone
                         [](const auto &info) {
                             return sanitize(info.param.source + "_" + info.param.type + "_" + std::to_string(info.param.size));
                         });

// Hand-made patterns for the corners: one rank sending to everyone, self-messages only, and
// messages whose payload is all zero bytes (RMA must see them through its flags).
CrsInput pattern(const std::vector<int> &dest, int count_each, unsigned char fill) {
    CrsInput in;
    in.dest = dest;
    in.counts.assign(dest.size(), count_each);
    in.displs.resize(dest.size());
    std::exclusive_scan(in.counts.begin(), in.counts.end(), in.displs.begin(), 0);
    in.total = count_each * static_cast<int>(dest.size());
    in.values.assign(static_cast<size_t>(in.total + 1) * sizeof(int), fill);
    return in;
}

TEST(SparseCorners, OneRankSendsToEveryoneOthersToThemselves) {
    const int p = world_size(), me = world_rank();
    TypePair t;
    TUCOLL_ASSERT_SETUP(TypePair::create("int", &t));
    std::vector<int> dest;
    if (me == 0) {
        dest.resize(p);
        std::iota(dest.begin(), dest.end(), 0);
    } else {
        dest = {me};
    }
    const CrsInput in = pattern(dest, 3, static_cast<unsigned char>(me + 1));
    for (int q : {1, 2, 4}) {
        for (bool variable : {false, true}) {
            const auto &registry = variable ? sparse::alltoallv_crs_registry() : sparse::alltoall_crs_registry();
            for (const std::string &spec : names(registry)) {
                EXPECT_TRUE(matches_reference(spec, variable, in, t, comm_with_ppn(q))) << spec << " Q=" << q;
            }
        }
    }
}

TEST(SparseCorners, AllZeroPayloadsAreStillMessages) {
    const int p = world_size(), me = world_rank();
    TypePair t;
    TUCOLL_ASSERT_SETUP(TypePair::create("int", &t));
    std::vector<int> dest = {(me + 1) % p};
    if ((me + 2) % p != dest[0]) dest.push_back((me + 2) % p);
    const CrsInput in = pattern(dest, 2, 0);
    for (const std::string &spec : names(sparse::alltoall_crs_registry())) {
        tucoll_stats_t s;
        EXPECT_TRUE(matches_reference(spec, false, in, t, comm_with_ppn(2), false, &s)) << spec;
    }
}

// A rank with no messages may pass any sendcount (here 0, with no buffers): the others' messages
// still arrive, and it receives its own as any rank does.
TEST(SparseCorners, ARankWithoutMessagesMayPassAnySendcount) {
    const int p = world_size(), me = world_rank();
    const bool sends = me % 2 == 0;
    const int dest[1] = {(me + 1) % p}, value[1] = {10 * me + 7};
    for (const std::string &spec : names(sparse::alltoall_crs_registry())) {
        Outputs o;
        const int rc = tucoll_alltoall_crs_with(spec.c_str(), sends ? 1 : 0, sends ? dest : nullptr, sends ? 1 : 0,
                                                MPI_INT, sends ? value : nullptr, &o.nnz, &o.src, 1, MPI_INT, &o.vals,
                                                MPI_COMM_WORLD);
        const int from = (me - 1 + p) % p;
        const bool expected = from % 2 == 0;  // the rank before this one sends to it
        bool ok = rc == MPI_SUCCESS && o.nnz == (expected ? 1 : 0);
        if (ok && expected) ok = o.src[0] == from && static_cast<int *>(o.vals)[0] == 10 * from + 7;
        EXPECT_TRUE(ok) << spec << ": " << tucoll_error_string(rc) << ", " << o.nnz << " messages";
        EXPECT_TRUE(all_ranks(ok)) << spec;
    }
}

TEST(SparseKnownCounts, SkipDiscovery) {
    const int p = world_size(), me = world_rank();
    TypePair t;
    TUCOLL_ASSERT_SETUP(TypePair::create("int", &t));
    for (bool variable : {false, true}) {
        CrsInput in;
        TUCOLL_ASSERT_SETUP(bench::build_crs("random:3", variable, 20, t, 5, me, p, &in));
        const auto &registry = variable ? sparse::alltoallv_crs_registry() : sparse::alltoall_crs_registry();
        for (const std::string &spec : names(registry)) {
            tucoll_stats_t s;
            EXPECT_TRUE(matches_reference(spec, variable, in, t, comm_with_ppn(2), true, &s)) << spec;
            if (spec == "personalized") {
                EXPECT_EQ(s.rounds, 1) << "a known count skips the reduction";
            }
        }
    }
}

// Knowing the receive count is a collective choice, and a count given must be right: under
// TUCOLL_CHECK=global a rank alone in knowing it, or a wrong count (or size), is an error on every
// rank before any message, never a hang or a lost message.
TEST(SparseKnownCounts, MixedOrWrongIsAnErrorEverywhereUnderGlobalChecks) {
    const int p = world_size(), me = world_rank();
    if (p < 2) GTEST_SKIP() << "needs two ranks";
    const int dest[1] = {(me + 1) % p}, value[2] = {me, me}, two[1] = {2}, at[1] = {0};
    MPI_Comm comm;  // a communicator's context reads TUCOLL_CHECK when it is made: a new one
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    {  // the setting's end touches the communicator: before it is freed
        ScopedEnv env("TUCOLL_CHECK", "global", comm);
        auto expect_everywhere = [&](int rc, int cls, const char *fragment, const std::string &what) {
            const std::string msg = tucoll_error_string(rc);
            EXPECT_EQ(rc, cls) << what << ": " << msg;
            if (me == 0) {
                EXPECT_NE(msg.find(fragment), std::string::npos) << what << ": " << msg;
            }
            EXPECT_TRUE(all_ranks(rc == cls, comm)) << what;
        };
        for (const std::string &spec : names(sparse::alltoall_crs_registry())) {
            for (int wrong : {0, 1}) {  // rank 0 alone knows its count; every rank knows, rank 0's is 2
                Outputs o;
                o.nnz = wrong ? (me == 0 ? 2 : 1) : (me == 0 ? 1 : -1);
                const int rc = tucoll_alltoall_crs_with(spec.c_str(), 1, dest, 1, MPI_INT, value, &o.nnz, &o.src, 1,
                                                        MPI_INT, &o.vals, comm);
                if (wrong) {
                    expect_everywhere(rc, MPI_ERR_OTHER, "recv_nnz = 2 was given but 1 messages", spec + " wrong");
                } else {
                    expect_everywhere(rc, MPI_ERR_ARG, "given on some ranks and -1 on others", spec + " mixed");
                }
                EXPECT_EQ(o.src, nullptr);
            }
        }
        for (const std::string &spec : names(sparse::alltoallv_crs_registry())) {
            Outputs o;
            o.size = me == 0 ? 1 : 2;  // each rank receives 2 elements; rank 0 says 1
            const int rc = tucoll_alltoallv_crs_with(spec.c_str(), 1, 2, dest, two, at, MPI_INT, value, &o.nnz, &o.size,
                                                     &o.src, &o.counts, &o.displs, MPI_INT, &o.vals, comm);
            expect_everywhere(rc, MPI_ERR_OTHER, "recv_size = 1 was given but 2 elements", spec + " recv_size");
        }
    }
    MPI_Comm_free(&comm);
}

// Regions cut the messages that leave a node: one per other node at most.
TEST(SparseLocality, AggregationBoundsInterRegionMessages) {
    const int p = world_size(), me = world_rank();
    if (p < 4) GTEST_SKIP() << "needs two regions of two";
    TypePair t;
    TUCOLL_ASSERT_SETUP(TypePair::create("int", &t));
    CrsInput in;
    TUCOLL_ASSERT_SETUP(bench::build_crs("random:64", true, 8, t, 3, me, p, &in));
    tucoll_stats_t plain, local;
    ASSERT_TRUE(matches_reference("nbx", true, in, t, comm_with_ppn(2), false, &plain));
    ASSERT_TRUE(matches_reference("nbx_loc", true, in, t, comm_with_ppn(2), false, &local));
    const int other_nodes = (p + 1) / 2 - 1;
    EXPECT_EQ(plain.inter_region_messages, p - (me / 2 * 2 + 2 <= p ? 2 : 1));
    EXPECT_LE(local.inter_region_messages, other_nodes);
    EXPECT_LT(local.inter_region_messages, plain.inter_region_messages);
}

// The exchange spans the caller's communicator only: two halves exchange at the same time, each
// on its own sub-communicator, without mixing.
TEST(SparseCommunicator, ConcurrentExchangesOnSubCommunicators) {
    const int me = world_rank();
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &half);
    int hp = 0, hr = 0;
    MPI_Comm_size(half, &hp);
    MPI_Comm_rank(half, &hr);
    TypePair t;
    TUCOLL_ASSERT_SETUP(TypePair::create("int", &t));
    bool ok = true;
    for (bool variable : {false, true}) {
        CrsInput in;
        TUCOLL_ASSERT_SETUP(bench::build_crs("random:2", variable, 12, t, 40 + me % 2, hr, hp, &in));
        const auto &registry = variable ? sparse::alltoallv_crs_registry() : sparse::alltoall_crs_registry();
        for (const std::string &spec : names(registry)) {
            if (spec == "rma") {
                // Open MPI 4.x names a window's shared-memory segment after the communicator's
                // context id, which two halves of a split share: creating windows on both at
                // once collides (open-mpi/ompi#7393). The halves take their turn.
                for (int turn = 0; turn < 2; ++turn) {
                    if (me % 2 == turn) ok = matches_reference(spec, variable, in, t, half) && ok;
                    MPI_Barrier(MPI_COMM_WORLD);
                }
                continue;
            }
            ok = matches_reference(spec, variable, in, t, half) && ok;
        }
    }
    MPI_Comm_free(&half);
    EXPECT_TRUE(all_ranks(ok));
}

TEST(SparseBadInput, ErrorsAreReported) {
    const int p = world_size();
    int nnz = -1, size = -1, *src = nullptr, *counts = nullptr, *displs = nullptr;
    void *vals = nullptr;
    const int dest_bad[1] = {p}, dest_ok[1] = {0}, one[1] = {1}, zero[1] = {0};
    const int value = 5;
    auto expect = [](int rc, int cls, const char *fragment) {
        EXPECT_EQ(rc, cls) << tucoll_error_string(rc);
        EXPECT_NE(std::string(tucoll_error_string(rc)).find(fragment), std::string::npos) << tucoll_error_string(rc);
    };
    expect(tucoll_alltoall_crs(-1, dest_ok, 1, MPI_INT, &value, &nnz, &src, 1, MPI_INT, &vals, MPI_COMM_WORLD),
           MPI_ERR_COUNT, "send_nnz = -1");
    expect(tucoll_alltoall_crs(1, dest_bad, 1, MPI_INT, &value, &nnz, &src, 1, MPI_INT, &vals, MPI_COMM_WORLD),
           MPI_ERR_RANK, "is not a rank");
    expect(tucoll_alltoall_crs(1, dest_ok, 1, MPI_INT, &value, nullptr, &src, 1, MPI_INT, &vals, MPI_COMM_WORLD),
           MPI_ERR_ARG, "output pointer is NULL");
    expect(tucoll_alltoall_crs(1, dest_ok, 1, MPI_INT, nullptr, &nnz, &src, 1, MPI_INT, &vals, MPI_COMM_WORLD),
           MPI_ERR_BUFFER, "sendvals is NULL");
    expect(tucoll_alltoall_crs(1, dest_ok, 1, MPI_INT, &value, &nnz, &src, 2, MPI_INT, &vals, MPI_COMM_WORLD),
           MPI_ERR_TRUNCATE, "received as");
    expect(tucoll_alltoallv_crs(1, 1, dest_ok, one, one, MPI_INT, &value, &nnz, &size, &src, &counts, &displs,
                                MPI_INT, &vals, MPI_COMM_WORLD),
           MPI_ERR_ARG, "outside send_size");
    expect(tucoll_alltoallv_crs_with("rma", 1, 1, dest_ok, one, zero, MPI_INT, &value, &nnz, &size, &src, &counts,
                                     &displs, MPI_INT, &vals, MPI_COMM_WORLD),
           MPI_ERR_ARG, "unknown alltoallv_crs algorithm \"rma\"");
    expect(tucoll_alltoall_crs_with("nbx:radix=2", 1, dest_ok, 1, MPI_INT, &value, &nnz, &src, 1, MPI_INT, &vals,
                                    MPI_COMM_WORLD),
           MPI_ERR_ARG, "unknown parameter");
    if (p > 1) {
        const int twice[2] = {1, 1}, values[2] = {1, 2};
        expect(tucoll_alltoall_crs_with("rma", 2, twice, 1, MPI_INT, values, &nnz, &src, 1, MPI_INT, &vals,
                                        MPI_COMM_WORLD),
               MPI_ERR_ARG, "one message per destination");
    }
    // The receive side is allocated by tucoll in element order: a negative extent has no layout there.
    MPI_Datatype backwards;
    MPI_Type_create_resized(MPI_INT, 0, -static_cast<MPI_Aint>(sizeof(int)), &backwards);
    MPI_Type_commit(&backwards);
    const int two_values[2] = {1, 2}, self[1] = {world_rank()};
    expect(tucoll_alltoall_crs(1, self, 2, MPI_INT, two_values, &nnz, &src, 2, backwards, &vals, MPI_COMM_WORLD),
           MPI_ERR_TYPE, "negative extent");
    MPI_Type_free(&backwards);
    EXPECT_EQ(src, nullptr);
    EXPECT_EQ(vals, nullptr);
}

// Messages above the large-message limit are received (after a probe) as one element of a byte
// datatype; lowering the limit takes that path with small messages.
TEST(SparseLarge, MessagesAboveTheIntLimitPath) {
    const int p = world_size(), me = world_rank();
    TypePair t;
    TUCOLL_ASSERT_SETUP(TypePair::create("double", &t));
    detail::set_large_message_limit(100);
    for (bool variable : {false, true}) {
        CrsInput in;
        TUCOLL_ASSERT_SETUP(bench::build_crs("random:3", variable, 400, t, 9, me, p, &in));
        const auto &registry = variable ? sparse::alltoallv_crs_registry() : sparse::alltoall_crs_registry();
        for (const std::string &spec : names(registry)) {
            EXPECT_TRUE(matches_reference(spec, variable, in, t, comm_with_ppn(2))) << spec;
        }
    }
    detail::set_large_message_limit(0);
}

// Element offsets beyond INT_MAX: 2^30 elements of a zero-size type per message to every rank
// puts message i at element i * 2^30 (64-bit arithmetic, nothing in memory).
TEST(SparseLarge, ElementOffsetsBeyondIntMax) {
    const int p = world_size();
    MPI_Datatype empty;
    MPI_Type_contiguous(0, MPI_INT, &empty);
    MPI_Type_commit(&empty);
    std::vector<int> dest(p);
    std::iota(dest.begin(), dest.end(), 0);
    const int count = 1 << 30;
    char dummy = 0;
    for (const std::string &spec : names(sparse::alltoall_crs_registry())) {
        int nnz = -1, *src = nullptr;
        void *vals = nullptr;
        const int rc = tucoll_alltoall_crs_with(spec.c_str(), p, dest.data(), count, empty, &dummy, &nnz, &src, count,
                                                empty, &vals, MPI_COMM_WORLD);
        EXPECT_EQ(rc, MPI_SUCCESS) << spec << ": " << tucoll_error_string(rc);
        EXPECT_EQ(nnz, p) << spec;
        for (int i = 0; rc == MPI_SUCCESS && i < nnz; ++i) EXPECT_EQ(src[i], i) << spec;
        tucoll_free(src);
        tucoll_free(vals);
    }
    MPI_Type_free(&empty);
}

// More elements arrive than recv_size and rdispls (ints) can describe: MPI_ERR_COUNT on every
// rank that receives them, nothing handed out. (The int limit is lowered to 100 elements.)
TEST(SparseLarge, ResultsBeyondAnIntAreAnError) {
    const int p = world_size();
    if (p < 4) GTEST_SKIP() << "needs 4 messages of 30 elements to pass 100";
    std::vector<int> dest(p), counts(p, 30), displs(p, 0), values(30, 1);
    std::iota(dest.begin(), dest.end(), 0);
    detail::set_count_limit(100);
    for (const std::string &spec : names(sparse::alltoallv_crs_registry())) {
        Outputs o;
        const int rc = tucoll_alltoallv_crs_with(spec.c_str(), p, 30, dest.data(), counts.data(), displs.data(), MPI_INT,
                                                 values.data(), &o.nnz, &o.size, &o.src, &o.counts, &o.displs, MPI_INT,
                                                 &o.vals, MPI_COMM_WORLD);
        EXPECT_EQ(rc, MPI_ERR_COUNT) << spec;
        EXPECT_NE(std::string(tucoll_error_string(rc)).find("more than recv_size and rdispls (int) can describe"),
                  std::string::npos)
            << tucoll_error_string(rc);
        EXPECT_EQ(o.src, nullptr) << spec;
    }
    detail::set_count_limit(0);
}

// NBX with one rank that arrives late: the others' barrier cannot complete before its sends are
// matched, so nobody leaves early and every message arrives.
TEST(SparseTiming, NbxWithASlowRank) {
    const int p = world_size(), me = world_rank();
    TypePair t;
    TUCOLL_ASSERT_SETUP(TypePair::create("int", &t));
    CrsInput in;
    TUCOLL_ASSERT_SETUP(bench::build_crs("random:3", true, 16, t, 21, me, p, &in));
    for (const char *spec : {"nbx", "nbx_loc"}) {
        if (me == p - 1) usleep(200 * 1000);  // 0.2 s late
        EXPECT_TRUE(matches_reference(spec, true, in, t, comm_with_ppn(2))) << spec;
    }
}

// rma needs one message size everywhere: a rank that sends other sizes gets MPI_ERR_ARG, and so
// does every other rank (the sizes are agreed before any window or fence), never a hang or a put
// outside a window.
TEST(SparseRma, DifferentSendCountsAreAnErrorEverywhere) {
    const int p = world_size(), me = world_rank();
    if (p < 2 || names(sparse::alltoall_crs_registry()).size() < sparse::alltoall_crs_registry().size()) {
        GTEST_SKIP() << "needs two ranks and rma";
    }
    std::vector<int> dest = {(me + 1) % p}, values(8, me);
    const int count = me == 0 ? 8 : 4;  // rank 0 sends more than the others expect
    int nnz = -1, *src = nullptr;
    void *vals = nullptr;
    const int rc = tucoll_alltoall_crs_with("rma", 1, dest.data(), count, MPI_INT, values.data(), &nnz, &src, count,
                                            MPI_INT, &vals, MPI_COMM_WORLD);
    EXPECT_EQ(rc, MPI_ERR_ARG);
    EXPECT_NE(std::string(tucoll_error_string(rc)).find("rma needs one size everywhere"), std::string::npos)
        << tucoll_error_string(rc);
    EXPECT_TRUE(all_ranks(rc == MPI_ERR_ARG));
    tucoll_free(src);
    tucoll_free(vals);
}

}  // namespace
}  // namespace tucoll::test
