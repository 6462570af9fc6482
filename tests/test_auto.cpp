// The tuned alltoallv: tables are parsed strictly and looked up deterministically, `auto` follows
// the table with a feature every rank computes the same from one allreduce (even when local
// block sizes differ wildly), reduces nothing where the table needs nothing, falls back
// consistently, and fails on every rank — never hangs — when ranks cannot agree on a table.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <functional>
#include <string>
#include <vector>

#include "alltoallv/auto_online.h"
#include "core/tuning.h"
#include "test_util.h"
#include "tucoll.h"

// Every MPI_Allreduce of this program (the library's included) is counted, with its operation:
// how much auto communicates is part of what it promises.
namespace {
int allreduce_calls = 0;
MPI_Op last_allreduce_op = MPI_OP_NULL;
}  // namespace

extern "C" int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
                             MPI_Comm comm) {
    ++allreduce_calls;
    last_allreduce_op = op;
    return PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
}

namespace tucoll::test {
namespace {

using alltoallv::OnlineTuner;

// ---- the table format -------------------------------------------------------------------------

std::string table_text(const std::string &entries, const std::string &features = "\"busiest_mean_block\"",
                       const std::string &fallback = "vendor") {
    return "{\"format\": \"tucoll-tuning-table\", \"version\": 1, \"collective\": \"alltoallv\", \"features\": [" +
           features + "], \"fallback\": \"" + fallback + "\", \"entries\": [" + entries + "]}";
}

std::string entry(int nprocs, int ppn, const std::string &rules) {
    return "{\"nprocs\": " + std::to_string(nprocs) + ", \"ppn\": " + std::to_string(ppn) + ", \"rules\": [" + rules +
           "]}";
}

int parse(const std::string &text, std::shared_ptr<const TuningTable> *out) {
    return TuningTable::parse(text, "test", "alltoallv", out);
}

TEST(TuningTable, ParsesAndLooksUpRules) {
    std::shared_ptr<const TuningTable> t;
    ASSERT_EQ(parse(table_text(entry(8, 4, "{\"below\": 10, \"spec\": \"tuna:radix=2\"}, {\"below\": 1000, "
                                           "\"spec\": \"pairwise\"}, {\"below\": null, \"spec\": \"vendor\"}")),
                    &t),
              MPI_SUCCESS)
        << tucoll_error_string(MPI_ERR_ARG);
    const TuningTable::Entry *e = t->entry_for(8, 4);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(TuningTable::spec_for(*e, {0}), "tuna:radix=2");
    EXPECT_EQ(TuningTable::spec_for(*e, {9.99}), "tuna:radix=2");
    EXPECT_EQ(TuningTable::spec_for(*e, {10}), "pairwise");
    EXPECT_EQ(TuningTable::spec_for(*e, {1e12}), "vendor");
    ASSERT_EQ(t->features().size(), 1u);
    EXPECT_EQ(t->features()[0], TuningFeature::kBusiestMeanBlock);
    EXPECT_GT(t->fingerprint(), 0);
}

TEST(TuningTable, NestedRulesSplitTheSecondFeature) {
    std::shared_ptr<const TuningTable> t;
    ASSERT_EQ(parse(table_text(entry(8, 4, "{\"below\": 10, \"spec\": \"tuna:radix=2\"}, {\"below\": null, \"rules\": ["
                                           "{\"below\": 100, \"spec\": \"pairwise\"}, {\"below\": null, \"spec\": \"xor\"}]}"),
                               "\"mean_block\", \"max_block\""),
                    &t),
              MPI_SUCCESS)
        << tucoll_error_string(MPI_ERR_ARG);
    const TuningTable::Entry *e = t->entry_for(8, 4);
    EXPECT_EQ(TuningTable::spec_for(*e, {5, 1000}), "tuna:radix=2");
    EXPECT_EQ(TuningTable::spec_for(*e, {50, 60}), "pairwise");
    EXPECT_EQ(TuningTable::spec_for(*e, {50, 6000}), "xor");
    EXPECT_EQ(t->features()[1], TuningFeature::kMaxBlock);
}

TEST(TuningTable, NearestEntryIsDeterministic) {
    std::shared_ptr<const TuningTable> t;
    const std::string r = "{\"below\": null, \"spec\": \"vendor\"}";
    ASSERT_EQ(parse(table_text(entry(64, 32, r) + "," + entry(256, 32, r) + "," + entry(16, 16, r) + "," +
                               entry(4, 4, r)),
                    &t),
              MPI_SUCCESS);
    auto shape = [&](int p, int q) {
        const TuningTable::Entry *e = t->entry_for(p, q);
        return std::to_string(e->nprocs) + "/" + std::to_string(e->ppn);
    };
    EXPECT_EQ(shape(256, 32), "256/32");
    EXPECT_EQ(shape(1024, 32), "256/32");  // nearest P on the same node size
    EXPECT_EQ(shape(128, 32), "64/32");    // a tie between 64 and 256: the smaller
    EXPECT_EQ(shape(8, 8), "4/4");         // tie between 4/4 and 16/16
    EXPECT_EQ(shape(12, 12), "16/16");
    EXPECT_EQ(shape(1, 1), "4/4");
}

TEST(TuningTable, RejectsMalformedTables) {
    std::shared_ptr<const TuningTable> t;
    const std::string ok = "{\"below\": null, \"spec\": \"vendor\"}";
    const std::vector<std::string> bad = {
        "not json",
        "{\"format\": \"other\"}",
        "{\"format\": \"tucoll-tuning-table\", \"version\": 2, \"collective\": \"alltoallv\"}",
        table_text(entry(4, 4, ok), "\"median_block\""),
        table_text(entry(4, 4, ok), ""),
        table_text(entry(4, 4, ok), "\"max_block\", \"mean_block\", \"busiest_mean_block\""),
        table_text(entry(4, 4, "{\"below\": null, \"rules\": [" + ok + "]}")),  // nested with one feature
        table_text(entry(4, 4, "{\"below\": null, \"spec\": \"xor\", \"rules\": [" + ok + "]}"),
                   "\"max_block\", \"mean_block\""),
        table_text(entry(0, 4, ok)),
        table_text(entry(4, 4, "")),
        table_text(entry(4, 4, "{\"below\": 5, \"spec\": \"vendor\"}")),  // last rule bounded
        table_text(entry(4, 4, "{\"below\": 5, \"spec\": \"xor\"}, {\"below\": 5, \"spec\": \"vendor\"}, " + ok)),
        table_text(entry(4, 4, "{\"below\": \"x\", \"spec\": \"vendor\"}")),
        table_text(entry(4, 4, "{\"below\": null}")),
        // Fields of the wrong type must be messages, not exceptions through the C interface.
        "{\"format\": 1, \"version\": 1, \"collective\": \"alltoallv\"}",
        "{\"format\": \"tucoll-tuning-table\", \"version\": 1, \"collective\": null}",
        "{\"format\": \"tucoll-tuning-table\", \"version\": 1, \"collective\": \"alltoallv\", "
        "\"features\": [\"max_block\"], \"entries\": [{\"nprocs\": 4, \"ppn\": 4, \"source\": 3, "
        "\"rules\": [" + ok + "]}]}",
    };
    for (const std::string &text : bad) {
        EXPECT_EQ(parse(text, &t), MPI_ERR_ARG) << text;
        EXPECT_NE(std::string(tucoll_error_string(MPI_ERR_ARG)).find("tuning table test"), std::string::npos);
    }
    EXPECT_EQ(TuningTable::parse(table_text(entry(4, 4, ok)), "test", "allgather", &t), MPI_ERR_ARG);
}

TEST(TuningTable, RepeatedShapesAreRejected) {
    std::shared_ptr<const TuningTable> t;
    const std::string ok = "{\"below\": null, \"spec\": \"vendor\"}";
    EXPECT_EQ(parse(table_text(entry(4, 4, ok) + "," + entry(4, 4, ok)), &t), MPI_ERR_ARG);
}

TEST(TuningTable, WritesWhatItReadsBack) {
    const std::string text =
        "{\"format\": \"tucoll-tuning-table\", \"version\": 1, \"collective\": \"alltoallv\", "
        "\"features\": [\"max_block\", \"mean_block\"], \"fallback\": \"pairwise\", "
        "\"generated_by\": {\"by\": \"test\", \"seed\": 3, \"a\": [1, 2]}, \"entries\": ["
        "{\"nprocs\": 16, \"ppn\": 8, \"source\": \"here\", \"rules\": [{\"below\": 28.1, \"spec\": \"tuna:radix=2\"}, "
        "{\"below\": null, \"rules\": [{\"below\": 0.125, \"spec\": \"xor\"}, {\"below\": null, \"spec\": \"vendor\"}]}]}, "
        "{\"nprocs\": 4, \"ppn\": 4, \"source\": \"\", \"rules\": [{\"below\": null, \"spec\": \"vendor\"}]}]}";
    std::shared_ptr<TuningTable> t;
    ASSERT_EQ(TuningTable::parse(text, "test", "alltoallv", &t), MPI_SUCCESS) << tucoll_error_string(MPI_ERR_ARG);
    const std::string written = t->to_json();
    std::shared_ptr<TuningTable> again;
    ASSERT_EQ(TuningTable::parse(written, "written", "alltoallv", &again), MPI_SUCCESS) << written;
    EXPECT_EQ(again->to_json(), written);
    // Order, provenance and exact bounds survive: entries as given, "generated_by" as written.
    EXPECT_LT(written.find("\"nprocs\": 16"), written.find("\"nprocs\": 4")) << written;
    EXPECT_NE(written.find("\"seed\": 3"), std::string::npos) << written;
    EXPECT_LT(written.find("\"by\""), written.find("\"seed\"")) << written;
    EXPECT_NE(written.find("28.1,"), std::string::npos) << written;
    EXPECT_EQ(TuningTable::spec_for(*again->entry_for(16, 8), {30, 0.1}), "xor");
    EXPECT_EQ(again->fallback(), "pairwise");
}

TEST(TuningTable, ChecksEverySpecAtItsEntrysShape) {
    std::shared_ptr<TuningTable> t;
    auto parsed = [&](const std::string &rules, const std::string &fallback = "vendor") {
        EXPECT_EQ(TuningTable::parse(table_text(entry(8, 4, rules), "\"max_block\"", fallback), "test", "alltoallv", &t),
                  MPI_SUCCESS);
        return t->check_specs();
    };
    EXPECT_EQ(parsed("{\"below\": 10, \"spec\": \"tuna:radix=8\"}, {\"below\": null, \"spec\": \"vendor\"}"),
              MPI_SUCCESS);
    // A radix above P at that entry, an unknown algorithm, a bad fallback: refused, with the entry named.
    EXPECT_EQ(parsed("{\"below\": 10, \"spec\": \"tuna:radix=9\"}, {\"below\": null, \"spec\": \"vendor\"}"),
              MPI_ERR_ARG);
    EXPECT_NE(std::string(tucoll_error_string(MPI_ERR_ARG)).find("entry P=8 Q=4"), std::string::npos)
        << tucoll_error_string(MPI_ERR_ARG);
    EXPECT_EQ(parsed("{\"below\": null, \"spec\": \"fastest\"}"), MPI_ERR_ARG);
    EXPECT_EQ(parsed("{\"below\": null, \"spec\": \"vendor\"}", "nonsense"), MPI_ERR_ARG);
}

TEST(TuningTable, OnlineChoicesJoinASweptTableWhereItHasNoEntry) {
    std::shared_ptr<TuningTable> online = TuningTable::online("alltoallv");
    ASSERT_EQ(online->record_choice(8, 8, 5, "tuna:radix=2"), MPI_SUCCESS);
    ASSERT_EQ(online->record_choice(8, 8, 12, "pairwise"), MPI_SUCCESS);
    ASSERT_EQ(online->record_choice(8, 8, 9, "xor"), MPI_SUCCESS);
    ASSERT_EQ(online->record_choice(4, 4, 3, "vendor"), MPI_SUCCESS);
    // Class k covers largest blocks in [2^(k-1), 2^k): its rule ends at 2^k, the last is open.
    const TuningTable::Entry *e = online->entry_for(8, 8);
    EXPECT_EQ(TuningTable::spec_for(*e, {31}), "tuna:radix=2");
    EXPECT_EQ(TuningTable::spec_for(*e, {32}), "xor");
    EXPECT_EQ(TuningTable::spec_for(*e, {1e9}), "pairwise");
    // The record round-trips, and a saved table with the record is an online table again.
    std::shared_ptr<TuningTable> saved;
    ASSERT_EQ(TuningTable::parse(online->to_json(), "saved", "alltoallv", &saved), MPI_SUCCESS) << online->to_json();
    EXPECT_EQ(saved->record_choice(8, 8, 20, "vendor"), MPI_SUCCESS);
    EXPECT_EQ(TuningTable::spec_for(*saved->entry_for(8, 8), {1e9}), "vendor");

    // Into a table keyed by (mean_block, max_block): every value of mean_block, then max_block.
    std::shared_ptr<TuningTable> swept;
    ASSERT_EQ(TuningTable::parse(table_text(entry(8, 8, "{\"below\": null, \"rules\": [{\"below\": null, \"spec\": "
                                                       "\"spreadout\"}]}"),
                                            "\"mean_block\", \"max_block\""),
                                 "test", "alltoallv", &swept),
              MPI_SUCCESS);
    int added = -1;
    ASSERT_EQ(swept->merge(*online, "run", &added), MPI_SUCCESS);
    EXPECT_EQ(added, 1);  // (8, 8) is swept and wins; (4, 4) joins
    EXPECT_EQ(TuningTable::spec_for(*swept->entry_for(8, 8), {1, 1}), "spreadout");
    const TuningTable::Entry *joined = swept->entry_for(4, 4);
    EXPECT_EQ(joined->nprocs, 4);
    EXPECT_EQ(joined->source, "online (run)");
    EXPECT_EQ(TuningTable::spec_for(*joined, {123, 1}), "vendor");
    EXPECT_EQ(swept->entries().front().nprocs, 4);  // sorted by (Q, P)
    // Keyed by (max_block, busiest_mean_block): max_block's rules, any value of the second.
    ASSERT_EQ(TuningTable::parse(table_text(entry(16, 16, "{\"below\": null, \"rules\": [{\"below\": null, \"spec\": "
                                                         "\"vendor\"}]}"),
                                            "\"max_block\", \"busiest_mean_block\""),
                                 "test", "alltoallv", &swept),
              MPI_SUCCESS);
    ASSERT_EQ(swept->merge(*online, "run", &added), MPI_SUCCESS);
    EXPECT_EQ(added, 2);
    EXPECT_EQ(TuningTable::spec_for(*swept->entry_for(8, 8), {40, 1e6}), "xor");
    // A table without max_block cannot take them; online tuning never overwrites a swept entry.
    ASSERT_EQ(TuningTable::parse(table_text(entry(16, 16, "{\"below\": null, \"spec\": \"vendor\"}")), "test",
                                 "alltoallv", &swept),
              MPI_SUCCESS);
    EXPECT_EQ(swept->merge(*online, "run", &added), MPI_ERR_ARG);
    EXPECT_EQ(online->merge(*swept, "run", &added), MPI_ERR_ARG);
    ASSERT_EQ(TuningTable::parse(table_text(entry(16, 16, "{\"below\": null, \"spec\": \"vendor\"}"), "\"max_block\""),
                                 "test", "alltoallv", &swept),
              MPI_SUCCESS);
    EXPECT_EQ(swept->record_choice(16, 16, 3, "xor"), MPI_ERR_ARG);
}

// ---- auto at run time ---------------------------------------------------------------------------

// A table file every rank can read, removed at the end of the test; TUCOLL_TUNING_FILE points to
// it (per rank: `path_for_rank` may differ) while the object lives.
class TableFile {
  public:
    explicit TableFile(const std::string &text, int writer_rank = 0) {
        char name[64] = "";
        if (world_rank() == writer_rank) {
            std::snprintf(name, sizeof name, "/tmp/tucoll-test-table-XXXXXX");
            const int fd = mkstemp(name);
            EXPECT_GE(fd, 0);
            close(fd);
            std::ofstream(name) << text;
        }
        MPI_Bcast(name, sizeof name, MPI_CHAR, writer_rank, MPI_COMM_WORLD);
        path_ = name;
        owner_ = world_rank() == writer_rank;
    }
    ~TableFile() {
        MPI_Barrier(MPI_COMM_WORLD);
        if (owner_) std::remove(path_.c_str());
    }
    const std::string &path() const { return path_; }

  private:
    std::string path_;
    bool owner_ = false;
};

// auto agrees on the table at its first call on a communicator and keeps it; ScopedEnv
// (test_util.h) releases the communicator's scratch, so that the next call reads the changed variable.

// Rank i sends `bytes(i, j)` bytes to rank j; returns true on every rank iff auto ran `expected`
// on every rank with the vendor's result, and every rank returned MPI_SUCCESS.
bool auto_runs(const std::function<int(int, int)> &bytes, const std::string &expected) {
    const int p = world_size(), me = world_rank();
    std::vector<int> scounts(p), sdispls(p), rcounts(p), rdispls(p);
    int s = 0, r = 0;
    for (int j = 0; j < p; ++j) {
        scounts[j] = bytes(me, j);
        sdispls[j] = s;
        s += scounts[j];
        rcounts[j] = bytes(j, me);
        rdispls[j] = r;
        r += rcounts[j];
    }
    std::vector<char> send(s + 1), want(r + 1), got(r + 1);
    for (int k = 0; k < s; ++k) send[k] = static_cast<char>(me * 13 + k);
    MPI_Alltoallv(send.data(), scounts.data(), sdispls.data(), MPI_CHAR, want.data(), rcounts.data(), rdispls.data(),
                  MPI_CHAR, MPI_COMM_WORLD);
    const int rc = tucoll_alltoallv_with("auto", send.data(), scounts.data(), sdispls.data(), MPI_CHAR, got.data(),
                                         rcounts.data(), rdispls.data(), MPI_CHAR, MPI_COMM_WORLD);
    EXPECT_EQ(rc, MPI_SUCCESS) << tucoll_error_string(rc);
    tucoll_stats_t stats{};
    tucoll_get_stats(MPI_COMM_WORLD, &stats);
    EXPECT_EQ(std::string(stats.algorithm), expected) << "path: " << stats.path;
    return all_ranks(rc == MPI_SUCCESS && got == want && expected == stats.algorithm);
}

// Rank r sends bytes_of_rank[r] bytes to every rank.
bool auto_runs(const std::vector<int> &bytes_of_rank, const std::string &expected) {
    return auto_runs([&](int i, int) { return bytes_of_rank[i]; }, expected);
}

std::string three_way_rules() {
    return "{\"below\": 16, \"spec\": \"tuna:radix=2\"}, {\"below\": 4096, \"spec\": \"pairwise\"}, "
           "{\"below\": null, \"spec\": \"xor\"}";
}

TEST(Auto, FollowsTheTableByTheGlobalFeature) {
    const int p = world_size();
    TableFile table(table_text(entry(p, p, three_way_rules())));
    ScopedEnv env("TUCOLL_TUNING_FILE", table.path());
    // busiest_mean_block = the bytes per peer of the rank that sends most.
    EXPECT_TRUE(auto_runs(std::vector<int>(p, 3), "tuna:radix=2"));
    EXPECT_TRUE(auto_runs(std::vector<int>(p, 100), "pairwise"));
    EXPECT_TRUE(auto_runs(std::vector<int>(p, 5000), "xor"));
}

TEST(Auto, EveryRankChoosesTheSameWhenLocalSizesDifferWildly) {
    const int p = world_size();
    if (p < 2) GTEST_SKIP() << "needs two ranks";
    TableFile table(table_text(entry(p, p, three_way_rules())));
    ScopedEnv env("TUCOLL_TUNING_FILE", table.path());
    // One rank sends 5000 bytes per peer, every other one byte: each alone would pick otherwise.
    std::vector<int> skewed(p, 1);
    skewed[p - 1] = 5000;
    EXPECT_TRUE(auto_runs(skewed, "xor"));
    std::vector<int> one_big(p, 0);
    one_big[0] = 200;
    EXPECT_TRUE(auto_runs(one_big, "pairwise"));
}

TEST(Auto, TwoFeatures) {
    const int p = world_size();
    // Small mean blocks: radix 2 unless some block is larger; large mean blocks: xor.
    TableFile table(table_text(entry(p, p, "{\"below\": 50, \"rules\": [{\"below\": 40, \"spec\": \"tuna:radix=2\"}, "
                                           "{\"below\": null, \"spec\": \"pairwise\"}]}, {\"below\": null, \"spec\": \"xor\"}"),
                               "\"mean_block\", \"max_block\""));
    ScopedEnv env("TUCOLL_TUNING_FILE", table.path());
    EXPECT_TRUE(auto_runs([](int, int) { return 3; }, "tuna:radix=2"));
    // One block of 30 P^2 bytes among blocks of one byte: the mean stays below 50 while the largest
    // block (from P = 2 on) is above 40.
    EXPECT_TRUE(auto_runs([p](int i, int j) { return i == 0 && j == p - 1 ? 30 * p * p : 1; },
                          p == 1 ? "tuna:radix=2" : "pairwise"));
    EXPECT_TRUE(auto_runs([](int, int) { return 60; }, "xor"));
}

TEST(Auto, NearestEntryAndFallbacks) {
    const int p = world_size();
    {
        // No entry for this P: the nearest one decides.
        TableFile table(table_text(entry(4 * p, p, "{\"below\": null, \"spec\": \"pairwise\"}") + "," +
                                   entry(64 * p, p, "{\"below\": null, \"spec\": \"xor\"}")));
        ScopedEnv env("TUCOLL_TUNING_FILE", table.path());
        EXPECT_TRUE(auto_runs(std::vector<int>(p, 7), "pairwise"));
    }
    {
        // A spec invalid at this P runs the table's fallback.
        TableFile table(table_text(entry(p, p, "{\"below\": null, \"spec\": \"tuna:radix=100000\"}"),
                                   "\"busiest_mean_block\"", "xor"));
        ScopedEnv env("TUCOLL_TUNING_FILE", table.path());
        EXPECT_TRUE(auto_runs(std::vector<int>(p, 7), "xor"));
    }
    {
        // A table naming auto itself does not recurse.
        TableFile table(table_text(entry(p, p, "{\"below\": null, \"spec\": \"auto\"}"), "\"max_block\"", "auto"));
        ScopedEnv env("TUCOLL_TUNING_FILE", table.path());
        EXPECT_TRUE(auto_runs(std::vector<int>(p, 7), "vendor"));
    }
}

// The allreduces one auto call makes (and, through *op, the last one's operation).
int allreduces_of(const std::function<void()> &call, MPI_Op *op = nullptr) {
    allreduce_calls = 0;
    last_allreduce_op = MPI_OP_NULL;
    call();
    if (op != nullptr) *op = last_allreduce_op;
    return allreduce_calls;
}

TEST(Auto, AgreesOnTheTableOnceAndNeedsNoReductionForAnEntryOfOneSpec) {
    const int p = world_size();
    TableFile table(table_text(entry(p, p, "{\"below\": null, \"spec\": \"pairwise\"}")));
    ScopedEnv env("TUCOLL_TUNING_FILE", table.path());
    bool ok = true;
    EXPECT_EQ(allreduces_of([&] { ok = auto_runs(std::vector<int>(p, 5), "pairwise"); }) - 1, 1);  // - all_ranks'
    EXPECT_TRUE(ok);
    for (int bytes : {0, 7, 70000}) {
        EXPECT_EQ(allreduces_of([&] { ok = auto_runs(std::vector<int>(p, bytes), "pairwise"); }) - 1, 0);
        EXPECT_TRUE(ok);
        tucoll_stats_t stats{};
        tucoll_get_stats(MPI_COMM_WORLD, &stats);
        EXPECT_NE(std::string(stats.path).find("one spec for every workload, no reduction"), std::string::npos)
            << stats.path;
    }
}

TEST(Auto, MaxFeaturesAreReducedWithTheBuiltInMax) {
    const int p = world_size();
    TableFile table(table_text(entry(p, p, three_way_rules())));  // busiest_mean_block
    ScopedEnv env("TUCOLL_TUNING_FILE", table.path());
    EXPECT_TRUE(auto_runs(std::vector<int>(p, 3), "tuna:radix=2"));  // the first call agrees on the table
    std::vector<int> counts(p, 100), displs(p);
    for (int j = 0; j < p; ++j) displs[j] = 100 * j;
    std::vector<char> send(100 * p + 1, 1), recv(100 * p + 1);
    MPI_Op op = MPI_OP_NULL;
    int rc = MPI_SUCCESS;
    EXPECT_EQ(allreduces_of([&] {
                  rc = tucoll_alltoallv_with("auto", send.data(), counts.data(), displs.data(), MPI_CHAR, recv.data(),
                                             counts.data(), displs.data(), MPI_CHAR, MPI_COMM_WORLD);
              }, &op), 1);
    EXPECT_EQ(rc, MPI_SUCCESS);
    EXPECT_TRUE(op == MPI_MAX) << "a built-in operation, so that the MPI's own allreduce runs";
}

TEST(Auto, ANonblockingStartIsLocalWhileItsReductionsRun) {
    // A start that reduced on the spot would wait for rank 1, which starts only once rank 0's
    // start has returned: the agreement on the table (the first call) and the features'
    // reduction (the next) are steps of the schedule, completed by the wait.
    const int p = world_size(), me = world_rank();
    if (p < 2) GTEST_SKIP() << "needs two ranks";
    TableFile table(table_text(entry(p, p, three_way_rules())));
    ScopedEnv env("TUCOLL_TUNING_FILE", table.path());
    MPI_Comm comm = fresh_communicator();  // its context made by a call that is not auto's
    for (const auto &[bytes, expected] : {std::pair<int, const char *>{3, "tuna:radix=2"}, {100, "pairwise"},
                                          {5000, "xor"}}) {
        std::vector<int> counts(p, bytes), displs(p);
        for (int j = 0; j < p; ++j) displs[j] = bytes * j;
        std::vector<char> send(static_cast<size_t>(bytes) * p + 1), recv(send.size()), want(send.size());
        for (size_t k = 0; k < send.size(); ++k) send[k] = static_cast<char>(me * 7 + k);
        MPI_Alltoall(send.data(), bytes, MPI_CHAR, want.data(), bytes, MPI_CHAR, MPI_COMM_WORLD);
        tucoll_request_t request = TUCOLL_REQUEST_NULL;
        const int rc = start_before_rank_1_starts([&] {
            return tucoll_ialltoallv_with("auto", send.data(), counts.data(), displs.data(), MPI_CHAR, recv.data(),
                                          counts.data(), displs.data(), MPI_CHAR, comm, &request);
        });
        EXPECT_EQ(rc, MPI_SUCCESS) << tucoll_error_string(rc);
        EXPECT_EQ(tucoll_wait(&request), MPI_SUCCESS);
        tucoll_stats_t stats{};
        tucoll_get_stats(comm, &stats);
        EXPECT_EQ(std::string(stats.algorithm), expected) << stats.path;
        EXPECT_TRUE(all_ranks(recv == want)) << bytes << " bytes";
    }
    MPI_Comm_free(&comm);
}

TEST(Auto, NonblockingCallsStartedBeforeTheFirstAgreementCompletesChooseAlike) {
    // Rank 0 starts two calls before rank 1 starts either: its second start cannot know the first
    // call's agreement yet, while rank 1's may. Each call must make the same decision (and the
    // same reductions) on every rank, whatever has completed where: the calls' results and
    // algorithms agree, and nothing waits for ever.
    const int p = world_size(), me = world_rank();
    if (p < 2) GTEST_SKIP() << "needs two ranks";
    for (const char *entry_kind : {"features", "one spec"}) {
        TableFile table(table_text(std::string(entry_kind) == "features"
                                       ? entry(p, p, three_way_rules())
                                       : entry(p, p, R"({"below": null, "spec": "pairwise"})")));
        ScopedEnv env("TUCOLL_TUNING_FILE", table.path());
        MPI_Comm comm = fresh_communicator();  // auto has not run on it: its first call agrees
        const int bytes = 100;
        std::vector<int> counts(p, bytes), displs(p);
        for (int j = 0; j < p; ++j) displs[j] = bytes * j;
        std::vector<char> send(static_cast<size_t>(bytes) * p + 1), want(send.size());
        for (size_t k = 0; k < send.size(); ++k) send[k] = static_cast<char>(me * 7 + k);
        MPI_Alltoall(send.data(), bytes, MPI_CHAR, want.data(), bytes, MPI_CHAR, MPI_COMM_WORLD);
        std::vector<std::vector<char>> recv(3, std::vector<char>(send.size()));
        tucoll_request_t requests[3] = {TUCOLL_REQUEST_NULL, TUCOLL_REQUEST_NULL, TUCOLL_REQUEST_NULL};
        const int rc = start_before_rank_1_starts([&] {
            int first_rc = MPI_SUCCESS;
            for (int k = 0; k < 3 && first_rc == MPI_SUCCESS; ++k) {
                first_rc = tucoll_ialltoallv_with("auto", send.data(), counts.data(), displs.data(), MPI_CHAR,
                                                  recv[k].data(), counts.data(), displs.data(), MPI_CHAR, comm,
                                                  &requests[k]);
            }
            return first_rc;
        });
        EXPECT_EQ(rc, MPI_SUCCESS) << tucoll_error_string(rc);
        for (int k = 2; k >= 0; --k) EXPECT_EQ(tucoll_wait(&requests[k]), MPI_SUCCESS) << entry_kind << " call " << k;
        tucoll_stats_t stats{};
        tucoll_get_stats(comm, &stats);
        EXPECT_EQ(std::string(stats.algorithm), "pairwise") << entry_kind << ": " << stats.path;
        for (int k = 0; k < 3; ++k) EXPECT_TRUE(all_ranks(recv[k] == want)) << entry_kind << " call " << k;
        MPI_Comm_free(&comm);
    }
}

TEST(Auto, NonblockingCallsWaitedInOtherOrdersStartTheMpisCollectivesInOneOrder) {
    // Three calls, each of which starts the vendor's MPI_Ialltoallv once its own reduction of the
    // features has completed, waited for in opposite orders: rank 0 finds the last call's
    // reduction complete first and would start its MPI_Ialltoallv first, the others the first
    // call's. MPI matches a communicator's collectives in the order each rank starts them, so
    // every call must start its collectives in the calls' order on every rank whatever completes
    // where: the results match and nothing is truncated or waits for ever.
    const int p = world_size(), me = world_rank();
    if (p < 2) GTEST_SKIP() << "needs two ranks";
    TableFile table(table_text(entry(p, p, R"({"below": 4096, "spec": "vendor"}, {"below": null, "spec": "pairwise"})")));
    ScopedEnv env("TUCOLL_TUNING_FILE", table.path());
    MPI_Comm comm = fresh_communicator();
    const int sizes[3] = {100, 1000, 7};
    std::vector<char> send[3], recv[3], want[3];
    std::vector<int> counts[3], displs[3];
    for (int k = 0; k < 3; ++k) {
        counts[k].assign(p, sizes[k]);
        displs[k].resize(p);
        for (int j = 0; j < p; ++j) displs[k][j] = sizes[k] * j;
        send[k].resize(static_cast<size_t>(sizes[k]) * p);
        recv[k].assign(send[k].size(), 0);
        want[k].resize(send[k].size());
        for (size_t b = 0; b < send[k].size(); ++b) send[k][b] = static_cast<char>(me * 11 + k * 5 + b);
        MPI_Alltoall(send[k].data(), sizes[k], MPI_CHAR, want[k].data(), sizes[k], MPI_CHAR, MPI_COMM_WORLD);
    }
    // The first call agrees on the table; the next ones reduce their features.
    EXPECT_EQ(tucoll_alltoallv_with("auto", send[0].data(), counts[0].data(), displs[0].data(), MPI_CHAR,
                                    recv[0].data(), counts[0].data(), displs[0].data(), MPI_CHAR, comm),
              MPI_SUCCESS);
    for (int round = 0; round < 3; ++round) {
        tucoll_request_t requests[3] = {TUCOLL_REQUEST_NULL, TUCOLL_REQUEST_NULL, TUCOLL_REQUEST_NULL};
        for (int k = 0; k < 3; ++k) {
            recv[k].assign(send[k].size(), 0);
            ASSERT_EQ(tucoll_ialltoallv_with("auto", send[k].data(), counts[k].data(), displs[k].data(), MPI_CHAR,
                                             recv[k].data(), counts[k].data(), displs[k].data(), MPI_CHAR, comm,
                                             &requests[k]),
                      MPI_SUCCESS);
        }
        // The MPI progresses the reductions meanwhile (its progress engine serves every communicator).
        for (int b = 0; b < 4; ++b) MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < 3; ++i) {
            const int k = me == 0 ? 2 - i : i;
            const int rc = tucoll_wait(&requests[k]);
            EXPECT_EQ(rc, MPI_SUCCESS) << "call " << k << ": " << tucoll_error_string(rc);
        }
        for (int k = 0; k < 3; ++k) EXPECT_TRUE(all_ranks(recv[k] == want[k])) << "round " << round << " call " << k;
    }
    tucoll_stats_t stats{};
    tucoll_get_stats(comm, &stats);
    EXPECT_EQ(std::string(stats.algorithm), "vendor") << stats.path;
    MPI_Comm_free(&comm);
}

TEST(Auto, AnAlltoallNeedsNoReduction) {
    // MPI_Alltoall: every rank knows every rank's block size, so auto decides alone.
    const int p = world_size();
    TableFile table(table_text(entry(p, p, three_way_rules())));
    ScopedEnv env("TUCOLL_TUNING_FILE", table.path());
    EXPECT_TRUE(auto_runs(std::vector<int>(p, 3), "tuna:radix=2"));  // the first call agrees on the table
    for (const auto &[bytes, expected] : {std::pair<int, const char *>{8, "tuna:radix=2"}, {100, "pairwise"},
                                          {6000, "xor"}}) {
        std::vector<char> send(static_cast<size_t>(bytes) * p + 1), recv(static_cast<size_t>(bytes) * p + 1),
            want(static_cast<size_t>(bytes) * p + 1);
        for (size_t k = 0; k < send.size(); ++k) send[k] = static_cast<char>(world_rank() * 7 + k);
        MPI_Alltoall(send.data(), bytes, MPI_CHAR, want.data(), bytes, MPI_CHAR, MPI_COMM_WORLD);
        int rc = MPI_SUCCESS;
        EXPECT_EQ(allreduces_of([&] {
                      rc = tucoll_alltoall_with("auto", send.data(), bytes, MPI_CHAR, recv.data(), bytes, MPI_CHAR,
                                                MPI_COMM_WORLD);
                  }), 0);
        tucoll_stats_t stats{};
        tucoll_get_stats(MPI_COMM_WORLD, &stats);
        EXPECT_EQ(std::string(stats.algorithm), expected) << stats.path;
        EXPECT_TRUE(all_ranks(rc == MPI_SUCCESS && recv == want));
    }
}

// ---- online tuning ------------------------------------------------------------------------------

// One auto call of `bytes` bytes per block; its result checked against MPI_Alltoallv. Returns the
// statistics' algorithm and path on this rank; *ok: the result matched on this rank.
std::pair<std::string, std::string> auto_call(int bytes, bool *ok) {
    const int p = world_size(), me = world_rank();
    std::vector<int> counts(p, bytes), displs(p);
    for (int j = 0; j < p; ++j) displs[j] = bytes * j;
    std::vector<char> send(static_cast<size_t>(bytes) * p + 1), want(send.size()), got(send.size());
    for (size_t k = 0; k < send.size(); ++k) send[k] = static_cast<char>(me * 5 + k);
    MPI_Alltoallv(send.data(), counts.data(), displs.data(), MPI_CHAR, want.data(), counts.data(), displs.data(),
                  MPI_CHAR, MPI_COMM_WORLD);
    const int rc = tucoll_alltoallv_with("auto", send.data(), counts.data(), displs.data(), MPI_CHAR, got.data(),
                                         counts.data(), displs.data(), MPI_CHAR, MPI_COMM_WORLD);
    *ok = rc == MPI_SUCCESS && got == want;
    tucoll_stats_t stats{};
    tucoll_get_stats(MPI_COMM_WORLD, &stats);
    return {stats.algorithm, stats.path};
}

// Whether every rank holds the same string.
bool same_everywhere(const std::string &s) {
    unsigned long h = std::hash<std::string>{}(s), lo = 0, hi = 0;
    MPI_Allreduce(&h, &lo, 1, MPI_UNSIGNED_LONG, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&h, &hi, 1, MPI_UNSIGNED_LONG, MPI_MAX, MPI_COMM_WORLD);
    return lo == hi;
}

TEST(AutoOnline, ExploresThenSettlesOnOneChoiceOnEveryRank) {
    ScopedEnv mode("TUCOLL_AUTO", "online");
    TableFile saved("");  // an empty file: TUCOLL_TUNING_SAVE starts a table in it
    ScopedEnv save("TUCOLL_TUNING_SAVE", saved.path());
    // Every size class explores on its own: two sizes, interleaved, each settles after its own
    // exploration calls.
    bool ok = true;
    int explored[2] = {0, 0};
    std::string settled[2];
    for (int call = 0; call < 80; ++call) {
        const int which = call % 2;
        bool good = false;
        const auto [algorithm, path] = auto_call(which ? 3000 : 5, &good);
        ok = ok && good;
        if (path.find("exploring") != std::string::npos) {
            EXPECT_TRUE(settled[which].empty()) << "explores again after settling: " << path;
            ++explored[which];
        } else {
            EXPECT_NE(path.find("auto online: " + algorithm), std::string::npos) << path;
            if (settled[which].empty()) settled[which] = algorithm;
            EXPECT_EQ(algorithm, settled[which]) << "a settled choice never changes";
        }
    }
    EXPECT_TRUE(all_ranks(ok));
    for (int which = 0; which < 2; ++which) {
        EXPECT_EQ(explored[which] % OnlineTuner::kRounds, 0) << explored[which];
        EXPECT_GE(explored[which], 2 * OnlineTuner::kRounds);  // at least vendor and spreadout
        EXPECT_FALSE(settled[which].empty());
        EXPECT_TRUE(same_everywhere(settled[which])) << settled[which];
    }
    // The saved table is one `auto` reads, and gives the settled choices back.
    if (world_rank() == 0) {
        std::ifstream in(saved.path());
        const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        std::shared_ptr<const TuningTable> table;
        ASSERT_EQ(TuningTable::parse(text, "saved", "alltoallv", &table), MPI_SUCCESS) << text;
        const TuningTable::Entry *e = table->entry_for(world_size(), world_size());
        ASSERT_NE(e, nullptr);
        EXPECT_EQ(TuningTable::spec_for(*e, {5}), settled[0]) << text;
        EXPECT_EQ(TuningTable::spec_for(*e, {3000}), settled[1]) << text;
        std::remove((saved.path() + ".lock").c_str());
    }
}

// Whether `spec` reduces M itself on this communicator (then auto's reduction is shared with it).
bool reduces_max_block(const std::string &spec) {
    tucoll_spec_properties_t props{};
    EXPECT_EQ(tucoll_spec_properties("alltoallv", spec.c_str(), world_size(), world_size(), &props), MPI_SUCCESS);
    return props.uses_max_block != 0;
}

TEST(AutoOnline, SettledCallsNeedNoBlockingReductionAndANewSizeIsStillExplored) {
    ScopedEnv mode("TUCOLL_AUTO", "online");
    bool ok = true, good = false;
    std::string settled;
    for (int call = 0; call < 40 && settled.empty(); ++call) {
        const auto [algorithm, path] = auto_call(5, &good);
        ok = ok && good;
        if (path.find("exploring") == std::string::npos) settled = algorithm;
    }
    ASSERT_FALSE(settled.empty());
    // The steady state: the class is predicted (the same size again) and agreed one call late by
    // a nonblocking reduction, unless the choice needs M anyway (then auto's reduction is its).
    const bool late = !reduces_max_block(settled);
    for (int call = 0; call < 3; ++call) {
        std::pair<std::string, std::string> result;
        EXPECT_EQ(allreduces_of([&] { result = auto_call(5, &good); }), late ? 0 : 1) << result.second;
        ok = ok && good;
        EXPECT_EQ(result.first, settled);
        EXPECT_EQ(result.second.find("(class agreed later)") != std::string::npos, late) << result.second;
    }
    // A new size: calls until its window is agreed may run the old class's choice (a correct
    // result all the same); then the miss is seen, the class agreed at once and explored.
    bool explored = false;
    for (int call = 0; call < 2 * alltoallv::LateClasses::kWindow + 2 && !explored; ++call) {
        const auto [algorithm, path] = auto_call(3000, &good);
        ok = ok && good;
        explored = path.find("exploring") != std::string::npos;
    }
    EXPECT_TRUE(explored);
    EXPECT_TRUE(all_ranks(ok));
}

TEST(AutoOnline, ATableFarFromThisShapeIsNoGuide) {
    const int p = world_size();
    // The only entry is for 64 times as many ranks: auto tunes online unless told to use the table.
    TableFile table(table_text(entry(64 * p, p, "{\"below\": null, \"spec\": \"pairwise\"}")));
    ScopedEnv env("TUCOLL_TUNING_FILE", table.path());
    bool ok = false;
    EXPECT_NE(auto_call(8, &ok).second.find("auto online"), std::string::npos);
    {
        ScopedEnv mode("TUCOLL_AUTO", "table");
        EXPECT_EQ(auto_call(8, &ok).first, "pairwise");
    }
    EXPECT_TRUE(all_ranks(ok));
}

TEST(AutoOnline, AnUnknownModeIsAnErrorOnEveryRank) {
    ScopedEnv mode("TUCOLL_AUTO", "fastest");
    bool ok = true;
    const auto [algorithm, path] = auto_call(4, &ok);
    EXPECT_FALSE(ok);
    EXPECT_TRUE(all_ranks(!ok));
}

int run_auto_expecting_failure() {
    const int p = world_size();
    std::vector<int> counts(p, 2), displs(p);
    for (int j = 0; j < p; ++j) displs[j] = 2 * j;
    std::vector<char> send(2 * p + 1, 1), recv(2 * p + 1);
    return tucoll_alltoallv_with("auto", send.data(), counts.data(), displs.data(), MPI_CHAR, recv.data(),
                                 counts.data(), displs.data(), MPI_CHAR, MPI_COMM_WORLD);
}

TEST(Auto, AnUnreadableTableIsAnErrorOnEveryRank) {
    ScopedEnv env("TUCOLL_TUNING_FILE", "/nonexistent/tucoll-table.json");
    const int rc = run_auto_expecting_failure();
    EXPECT_EQ(rc, MPI_ERR_OTHER);
    EXPECT_NE(std::string(tucoll_error_string(rc)).find("tuning table"), std::string::npos) << tucoll_error_string(rc);
    EXPECT_TRUE(all_ranks(rc == MPI_ERR_OTHER));
}

TEST(Auto, RanksWithDifferentTablesFailTogether) {
    const int p = world_size();
    if (p < 2) GTEST_SKIP() << "needs two ranks";
    TableFile first(table_text(entry(p, p, "{\"below\": null, \"spec\": \"pairwise\"}")), 0);
    TableFile second(table_text(entry(p, p, "{\"below\": null, \"spec\": \"xor\"}")), p - 1);
    ScopedEnv env("TUCOLL_TUNING_FILE", world_rank() == 0 ? first.path() : second.path());
    const int rc = run_auto_expecting_failure();
    EXPECT_EQ(rc, MPI_ERR_OTHER);
    EXPECT_NE(std::string(tucoll_error_string(rc)).find("different tuning tables"), std::string::npos)
        << tucoll_error_string(rc);
    EXPECT_TRUE(all_ranks(rc == MPI_ERR_OTHER));
}

TEST(Auto, IsTheDefaultSelection) {
    const int p = world_size();
    TableFile table(table_text(entry(p, p, "{\"below\": null, \"spec\": \"pairwise\"}")));
    ScopedEnv env("TUCOLL_TUNING_FILE", table.path());
    std::vector<int> counts(p, 3), displs(p);
    for (int j = 0; j < p; ++j) displs[j] = 3 * j;
    std::vector<char> send(3 * p + 1, 2), recv(3 * p + 1);
    const int rc = tucoll_alltoallv(send.data(), counts.data(), displs.data(), MPI_CHAR, recv.data(), counts.data(),
                                    displs.data(), MPI_CHAR, MPI_COMM_WORLD);
    tucoll_stats_t stats{};
    tucoll_get_stats(MPI_COMM_WORLD, &stats);
    EXPECT_EQ(std::string(stats.algorithm), "pairwise");
    EXPECT_NE(std::string(stats.path).find("auto:"), std::string::npos) << stats.path;
    EXPECT_TRUE(all_ranks(rc == MPI_SUCCESS));
}

}  // namespace
}  // namespace tucoll::test
