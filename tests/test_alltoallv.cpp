// Every registered alltoallv algorithm (and parameter variant) against the vendor MPI_Alltoallv,
// over distributions, datatypes and buffer layouts, at whatever P this program runs with.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>

#include "alltoallv/alltoallv.h"
#include "core/p2p.h"
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

constexpr int64_t kMaxBlock = 67;  // odd on purpose: partial units for multi-byte types

struct Case {
    std::string spec, dist, type;
};

std::vector<std::string> distributions() {
    std::vector<std::string> d = test_distributions();
    const int p = world_size();
    if (p == 4 || p == 8 || p == 16) {
        d.push_back("file:" TUCOLL_DATA_DIR "/patterns/pattern_" + std::to_string(p) + ".txt:scale=0.000001");
    }
    return d;
}

std::vector<Case> all_cases() {
    std::vector<Case> cases;
    const Scope scope{world_size(), world_size()};
    for (const std::string &spec : spec_variants(alltoallv::registry(), scope)) {
        for (const std::string &dist : distributions()) {
            for (const std::string &type : test_types()) cases.push_back({spec, dist, type});
        }
    }
    return cases;
}

std::string case_name(const ::testing::TestParamInfo<Case> &info) {
    std::string dist = info.param.dist.rfind("file:", 0) == 0 ? "file" : info.param.dist;
    return sanitize(info.param.spec + "__" + dist + "__" + info.param.type);
}

bool matches(const std::string &spec, const std::string &dist, const std::string &type, Layout layout,
             int64_t max_block = kMaxBlock) {
    return alltoallv_matches(spec, MPI_COMM_WORLD, dist, type, layout, max_block);
}

class AlltoallvMatchesVendor : public ::testing::TestWithParam<Case> {};

TEST_P(AlltoallvMatchesVendor, ScatteredLayout) {
    const Case &c = GetParam();
    EXPECT_TRUE(matches(c.spec, c.dist, c.type, Layout::kScattered));
}

INSTANTIATE_TEST_SUITE_P(Registry, AlltoallvMatchesVendor, ::testing::ValuesIn(all_cases()), case_name);

class AlltoallvPerAlgorithm : public ::testing::TestWithParam<std::string> {};

std::vector<std::string> algorithm_names() {
    std::vector<std::string> names;
    for (const auto &alg : alltoallv::registry()) names.push_back(alg.name);
    return names;
}

TEST_P(AlltoallvPerAlgorithm, PackedLayoutLargerBlocks) {
    EXPECT_TRUE(matches(GetParam(), "uniform", "double", Layout::kPacked, 4096));
    EXPECT_TRUE(matches(GetParam(), "uniform", "vector", Layout::kPacked, 4096));
}

// Blocks above the large-message limit travel as one message of a derived datatype; lowering the
// limit exercises that path (normally taken above 2 GiB) with small buffers.
TEST_P(AlltoallvPerAlgorithm, MessagesAboveTheIntLimitPath) {
    detail::set_large_message_limit(1000);
    EXPECT_TRUE(matches(GetParam(), "onehuge", "char", Layout::kScattered, 3000));
    EXPECT_TRUE(matches(GetParam(), "uniform", "vector", Layout::kScattered, 5000));
    detail::set_large_message_limit(0);
}

// Messages made of many ranges: a type over more ranges than the type cache keeps is described
// for the call and freed once posted (MPI holds it until the request completes), smaller ones
// push older ones out by range count. Cutting every block into 7- and 1-byte ranges takes both
// paths at small P; the second call of each finds the first's types cached or gone.
TEST_P(AlltoallvPerAlgorithm, BlockListsBeyondTheTypeCache) {
    detail::set_large_message_limit(7);
    EXPECT_TRUE(matches(GetParam(), "uniform", "char", Layout::kScattered, 700));
    EXPECT_TRUE(matches(GetParam(), "uniform", "char", Layout::kScattered, 700));
    detail::set_large_message_limit(1);
    EXPECT_TRUE(matches(GetParam(), "onehuge", "char", Layout::kScattered, 2000));
    EXPECT_TRUE(matches(GetParam(), "uniform", "char", Layout::kPacked, 1500));
    detail::set_large_message_limit(0);
}

// MPI_IN_PLACE: data is taken from recvbuf with the receive layout, which needs a symmetric
// count matrix (what i sends to j is what j receives from i).
TEST_P(AlltoallvPerAlgorithm, InPlace) {
    const int p = world_size(), me = world_rank();
    auto count = [](int i, int j) { return (std::min(i, j) * 7 + std::max(i, j) * 3) % 11; };
    std::vector<int> counts(p), displs(p);
    for (int j = 0; j < p; ++j) counts[j] = count(me, j);
    std::exclusive_scan(counts.begin(), counts.end(), displs.begin(), 0);
    const int total = std::accumulate(counts.begin(), counts.end(), 0);
    std::vector<int> original(total + 1);
    for (int k = 0; k < total; ++k) original[k] = me * 1000 + k;
    std::vector<int> expected = original, got = original;
    EXPECT_EQ(MPI_Alltoallv(MPI_IN_PLACE, nullptr, nullptr, MPI_DATATYPE_NULL, expected.data(), counts.data(),
                            displs.data(), MPI_INT, MPI_COMM_WORLD),
              MPI_SUCCESS);
    const int rc = tucoll_alltoallv_with(GetParam().c_str(), MPI_IN_PLACE, nullptr, nullptr, MPI_DATATYPE_NULL,
                                         got.data(), counts.data(), displs.data(), MPI_INT, MPI_COMM_WORLD);
    EXPECT_EQ(rc, MPI_SUCCESS) << tucoll_error_string(rc);
    EXPECT_TRUE(all_ranks(rc == MPI_SUCCESS && got == expected));
}

// `length` chars at `at`'s absolute address, as one element of a committed datatype (the caller
// frees it): with MPI_BOTTOM as the buffer, the datatype alone says where the data lie.
MPI_Datatype absolute_chars(const char *at, int length) {
    MPI_Aint address;
    MPI_Get_address(at, &address);
    MPI_Datatype t;
    MPI_Type_create_hindexed(1, &length, &address, MPI_CHAR, &t);
    MPI_Type_commit(&t);
    return t;
}

// MPI_BOTTOM with a datatype holding absolute addresses: a NULL buffer that is not an error.
TEST_P(AlltoallvPerAlgorithm, AbsoluteAddressesFromMpiBottom) {
    const int p = world_size(), me = world_rank();
    constexpr int kBlock = 5;
    std::vector<char> data(static_cast<size_t>(p) * kBlock);
    for (size_t k = 0; k < data.size(); ++k) data[k] = static_cast<char>(me * 31 + k);
    MPI_Datatype absolute = absolute_chars(data.data(), kBlock);
    // One element of `absolute` per destination; displacement i (in extents of kBlock bytes)
    // selects block i.
    std::vector<int> ones(p, 1), idx(p), counts(p, kBlock), displs(p);
    for (int i = 0; i < p; ++i) {
        idx[i] = i;
        displs[i] = i * kBlock;
    }
    std::vector<char> expected(data.size()), got(data.size());
    EXPECT_EQ(MPI_Alltoallv(MPI_BOTTOM, ones.data(), idx.data(), absolute, expected.data(), counts.data(),
                            displs.data(), MPI_CHAR, MPI_COMM_WORLD),
              MPI_SUCCESS);
    const int rc = tucoll_alltoallv_with(GetParam().c_str(), MPI_BOTTOM, ones.data(), idx.data(), absolute,
                                         got.data(), counts.data(), displs.data(), MPI_CHAR, MPI_COMM_WORLD);
    EXPECT_EQ(rc, MPI_SUCCESS) << tucoll_error_string(rc);
    EXPECT_TRUE(all_ranks(rc == MPI_SUCCESS && got == expected));
    MPI_Type_free(&absolute);
}

// Both buffers MPI_BOTTOM, each datatype holding the absolute address of its own array: not the
// same buffer, whatever the two pointers say.
TEST_P(AlltoallvPerAlgorithm, BothBuffersFromMpiBottom) {
    const int p = world_size(), me = world_rank();
    constexpr int kBlock = 3;
    std::vector<char> data(static_cast<size_t>(p) * kBlock), got(data.size()), expected(data.size());
    for (size_t k = 0; k < data.size(); ++k) data[k] = static_cast<char>(me * 17 + k);
    MPI_Datatype from = absolute_chars(data.data(), kBlock), to = absolute_chars(got.data(), kBlock),
                 to_expected = absolute_chars(expected.data(), kBlock);
    std::vector<int> ones(p, 1), idx(p);
    std::iota(idx.begin(), idx.end(), 0);
    EXPECT_EQ(MPI_Alltoallv(MPI_BOTTOM, ones.data(), idx.data(), from, MPI_BOTTOM, ones.data(), idx.data(),
                            to_expected, MPI_COMM_WORLD),
              MPI_SUCCESS);
    const int rc = tucoll_alltoallv_with(GetParam().c_str(), MPI_BOTTOM, ones.data(), idx.data(), from, MPI_BOTTOM,
                                         ones.data(), idx.data(), to, MPI_COMM_WORLD);
    EXPECT_EQ(rc, MPI_SUCCESS) << tucoll_error_string(rc);
    EXPECT_TRUE(all_ranks(rc == MPI_SUCCESS && got == expected));
    for (MPI_Datatype *t : {&from, &to, &to_expected}) MPI_Type_free(t);
}

// One element of more than 2^31 - 1 bytes of a type MPI_Pack would need in one call (a struct,
// here re-reading 128 bytes): a clear MPI_ERR_COUNT, not a wrapped byte count. (A contiguous
// repetition of such size, MPI_Alltoall's block type beyond int displacements, is packed as its
// inner elements.) On MPI_COMM_SELF; the receive buffer is never touched, only reserved.
TEST(AlltoallvLarge, AnElementBeyondWhatMpiPackTakesIsACountError) {
    MPI_Datatype quarter, half, sendtype, piece, recvtype;
    MPI_Type_create_hvector(1 << 30, 1, 0, MPI_CHAR, &quarter);  // 2^30 chars, all at byte 0
    MPI_Type_create_hvector(2, 1, 0, quarter, &half);            // 2^31
    int lengths[2] = {1, 100};
    MPI_Aint at[2] = {0, 0};
    MPI_Datatype parts[2] = {half, MPI_CHAR};
    MPI_Type_create_struct(2, lengths, at, parts, &sendtype);    // 2^31 + 100 bytes of data
    MPI_Type_commit(&sendtype);
    MPI_Type_contiguous((1 << 30) + 50, MPI_CHAR, &piece);
    MPI_Type_contiguous(2, piece, &recvtype);                    // the same signature
    MPI_Type_commit(&recvtype);
    std::vector<char> send(128, 'x');
    const size_t bytes = (size_t{1} << 31) + 100;
    void *recv = std::malloc(bytes);  // reserved, not touched: nothing is received
    ASSERT_NE(recv, nullptr);
    int one = 1, zero = 0;
    const int rc = tucoll_alltoallv_with("pairwise", send.data(), &one, &zero, sendtype, recv, &one, &zero, recvtype,
                                         MPI_COMM_SELF);
    EXPECT_EQ(rc, MPI_ERR_COUNT) << tucoll_error_string(rc);
    EXPECT_NE(std::string(tucoll_error_string(rc)).find("more than MPI_Pack takes at once"), std::string::npos)
        << tucoll_error_string(rc);
    std::free(recv);
    for (MPI_Datatype *t : {&quarter, &half, &sendtype, &piece, &recvtype}) MPI_Type_free(t);
}

// A send type that interleaves its own copies (a 2 x 2 transpose of ints: resized below its true
// extent, then repeated) though its size, extent and true extent agree: packed in type-map order,
// not copied as the bytes lie.
TEST_P(AlltoallvPerAlgorithm, ATypeThatInterleavesItsCopies) {
    const int p = world_size(), me = world_rank();
    MPI_Datatype transpose = interleaved_transpose();  // ints at 0, 8, 4, 12; extent 16
    std::vector<int> send(4 * p), expected(4 * p, -1), got(4 * p, -1);
    for (int k = 0; k < 4 * p; ++k) send[k] = me * 100 + k;
    std::vector<int> ones(p, 1), sdispls(p), fours(p, 4), rdispls(p);
    for (int j = 0; j < p; ++j) sdispls[j] = j, rdispls[j] = 4 * j;  // extent 16: one transpose per block
    EXPECT_EQ(MPI_Alltoallv(send.data(), ones.data(), sdispls.data(), transpose, expected.data(), fours.data(),
                            rdispls.data(), MPI_INT, MPI_COMM_WORLD),
              MPI_SUCCESS);
    EXPECT_EQ(expected[1], 4 * me + 2) << "the vendor reads the type map's order (rank 0 sends 4 me, 4 me + 2, ...)";
    const int rc = tucoll_alltoallv_with(GetParam().c_str(), send.data(), ones.data(), sdispls.data(), transpose,
                                         got.data(), fours.data(), rdispls.data(), MPI_INT, MPI_COMM_WORLD);
    EXPECT_EQ(rc, MPI_SUCCESS) << tucoll_error_string(rc);
    EXPECT_TRUE(all_ranks(rc == MPI_SUCCESS && got == expected));
    MPI_Type_free(&transpose);
}

// A send type of negative extent (element i lies 4 i bytes before the buffer pointer) and a
// receive type whose lower bound is moved to -8: both follow their type maps, packed or in place.
TEST_P(AlltoallvPerAlgorithm, NegativeExtentAndMovedLowerBound) {
    const int p = world_size(), me = world_rank();
    MPI_Datatype backwards, shifted;
    ASSERT_EQ(MPI_Type_create_resized(MPI_INT, 0, -static_cast<MPI_Aint>(sizeof(int)), &backwards), MPI_SUCCESS);
    ASSERT_EQ(MPI_Type_create_resized(MPI_INT, -8, sizeof(int), &shifted), MPI_SUCCESS);
    MPI_Type_commit(&backwards);
    MPI_Type_commit(&shifted);
    std::vector<int> store(2 * p + 1), counts(p, 2), displs(p);
    for (int k = 0; k <= 2 * p; ++k) store[k] = me * 1000 + k;
    for (int j = 0; j < p; ++j) displs[j] = 2 * j;
    const int *send = store.data() + 2 * p;  // element i is store[2p - i]
    std::vector<int> expected(2 * p + 1, -1), got(2 * p + 1, -1);
    for (int j = 0; j < p; ++j) {
        expected[2 * j] = j * 1000 + 2 * p - 2 * me;
        expected[2 * j + 1] = j * 1000 + 2 * p - 2 * me - 1;
    }
    std::vector<int> vendor(2 * p + 1, -1);
    EXPECT_EQ(MPI_Alltoallv(send, counts.data(), displs.data(), backwards, vendor.data(), counts.data(), displs.data(),
                            shifted, MPI_COMM_WORLD),
              MPI_SUCCESS);
    EXPECT_EQ(vendor, expected) << "the vendor";
    const int rc = tucoll_alltoallv_with(GetParam().c_str(), send, counts.data(), displs.data(), backwards, got.data(),
                                         counts.data(), displs.data(), shifted, MPI_COMM_WORLD);
    EXPECT_EQ(rc, MPI_SUCCESS) << tucoll_error_string(rc);
    EXPECT_TRUE(all_ranks(rc == MPI_SUCCESS && got == expected));
    MPI_Type_free(&backwards);
    MPI_Type_free(&shifted);
}

INSTANTIATE_TEST_SUITE_P(Registry, AlltoallvPerAlgorithm, ::testing::ValuesIn(algorithm_names()),
                         [](const auto &info) { return sanitize(info.param); });

}  // namespace
}  // namespace tucoll::test
