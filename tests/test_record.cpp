// Recording (tucoll_record_start / TUCOLL_RECORD): each communicator's distinct byte matrices are
// written once, counted, and described by a manifest that tucoll tune reads.
#include <gtest/gtest.h>
#include <mpi.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "tucoll.h"

namespace {

namespace fs = std::filesystem;

// A fresh directory, named by rank 0 and the same on every rank of `comm`.
std::string shared_temp_dir(MPI_Comm comm) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    char name[256] = "";
    if (rank == 0) {
        std::string pattern = (fs::temp_directory_path() / "tucoll-record-XXXXXX").string();
        std::vector<char> text(pattern.begin(), pattern.end());
        text.push_back('\0');
        if (mkdtemp(text.data()) != nullptr) std::snprintf(name, sizeof name, "%s", text.data());
    }
    MPI_Bcast(name, sizeof name, MPI_CHAR, 0, comm);
    return name;
}

// Block (i, j) of the test's two patterns, in elements.
int count_a(int i, int j) { return 1 + (i + 2 * j) % 5; }
int count_b(int i, int j) { return i == j ? 0 : 3 + i; }

// The buffers of one exchange of `count` on `comm`, kept as long as a nonblocking or persistent
// call needs them.
struct Exchange {
    std::vector<int> sc, sd, rc, rd, send, recv;
    Exchange(MPI_Comm comm, int (*count)(int, int)) {
        int p = 0, me = 0;
        MPI_Comm_size(comm, &p);
        MPI_Comm_rank(comm, &me);
        sc.resize(p), sd.resize(p), rc.resize(p), rd.resize(p);
        int st = 0, rt = 0;
        for (int j = 0; j < p; ++j) {
            sc[j] = count(me, j);
            rc[j] = count(j, me);
            sd[j] = st;
            rd[j] = rt;
            st += sc[j];
            rt += rc[j];
        }
        send.assign(st + 1, me);
        recv.assign(rt + 1, -1);
    }
    int start(MPI_Comm comm, tucoll_request_t *req) {
        return tucoll_ialltoallv_with("tuna:radix=2", send.data(), sc.data(), sd.data(), MPI_INT, recv.data(),
                                      rc.data(), rd.data(), MPI_INT, comm, req);
    }
    int init(MPI_Comm comm, tucoll_request_t *req) {
        return tucoll_alltoallv_init(send.data(), sc.data(), sd.data(), MPI_INT, recv.data(), rc.data(), rd.data(),
                                     MPI_INT, comm, MPI_INFO_NULL, req);
    }
};

void alltoallv_ints(MPI_Comm comm, int (*count)(int, int), const char *spec) {
    Exchange x(comm, count);
    ASSERT_EQ(tucoll_alltoallv_with(spec, x.send.data(), x.sc.data(), x.sd.data(), MPI_INT, x.recv.data(), x.rc.data(),
                                    x.rd.data(), MPI_INT, comm),
              MPI_SUCCESS);
}

std::vector<std::vector<long long>> read_pattern(const fs::path &path) {
    std::ifstream in(path);
    std::vector<std::vector<long long>> rows;
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        std::vector<long long> row;
        long long v = 0;
        while (fields >> v) row.push_back(v);
        if (!row.empty()) rows.push_back(row);
    }
    return rows;
}

// The recording of one communicator under `dir` (rank 0's view).
fs::path only_recording(const std::string &dir) {
    std::vector<fs::path> found;
    for (const auto &entry : fs::directory_iterator(dir)) found.push_back(entry.path());
    EXPECT_EQ(found.size(), 1u);
    return found.empty() ? fs::path() : found[0];
}

TEST(Record, DistinctMatricesAreWrittenOnceAndCounted) {
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_name(comm, "recorded comm");
    int p = 0, me = 0;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &me);
    const std::string dir = shared_temp_dir(comm);
    ASSERT_FALSE(dir.empty());

    ASSERT_EQ(tucoll_record_start(dir.c_str()), MPI_SUCCESS);
    // A, A, A, B, A, B: two distinct matrices, 4 and 2 calls.
    for (auto count : {count_a, count_a, count_a, count_b, count_a, count_b}) {
        alltoallv_ints(comm, count, count == count_a ? "pairwise" : "auto");
    }
    std::vector<double> gathered(2 * p);
    std::vector<double> mine(2, 1.0);
    ASSERT_EQ(tucoll_allgather(mine.data(), 2, MPI_DOUBLE, gathered.data(), 2, MPI_DOUBLE, comm), MPI_SUCCESS);
    ASSERT_EQ(tucoll_record_stop(), MPI_SUCCESS);
    alltoallv_ints(comm, count_b, "auto");  // not recorded

    if (me == 0) {
        const fs::path rec = only_recording(dir);
        EXPECT_EQ(rec.filename().string().rfind("recorded_comm.", 0), 0u) << rec;
        nlohmann::json m = nlohmann::json::parse(std::ifstream(rec / "manifest.json"));
        EXPECT_EQ(m["format"], "tucoll-recording");
        EXPECT_EQ(m["communicator"]["size"], p);
        EXPECT_EQ(m["communicator"]["name"], "recorded comm");
        EXPECT_EQ(m["calls"], 7);
        ASSERT_EQ(m["patterns"].size(), 3u);
        const auto &a = m["patterns"][0], &b = m["patterns"][1], &g = m["patterns"][2];
        EXPECT_EQ(a["collective"], "alltoallv");
        EXPECT_EQ(a["calls"], 4);
        EXPECT_EQ(b["calls"], 2);
        EXPECT_EQ(b["first_call"], 3);
        EXPECT_EQ(g["collective"], "allgather");
        EXPECT_EQ(a["send_type_sizes"]["4"], 4);
        EXPECT_EQ(a["algorithms"]["pairwise"], 4);
        EXPECT_EQ(b["requested"]["auto"], 2);
        EXPECT_GT(a["seconds"]["total"].get<double>(), 0.0);
        EXPECT_EQ(m["call_log"]["calls"].size(), 7u);
        EXPECT_EQ(m["call_log"]["calls"][3][0], 1);
        // The files hold the byte matrices, row i = what rank i sends.
        const auto ma = read_pattern(rec / a["file"].get<std::string>());
        const auto mb = read_pattern(rec / b["file"].get<std::string>());
        const auto mg = read_pattern(rec / g["file"].get<std::string>());
        ASSERT_EQ(ma.size(), static_cast<size_t>(p));
        ASSERT_EQ(mg.size(), static_cast<size_t>(p));
        long long total = 0;
        for (int i = 0; i < p; ++i) {
            ASSERT_EQ(ma[i].size(), static_cast<size_t>(p));
            for (int j = 0; j < p; ++j) {
                EXPECT_EQ(ma[i][j], 4LL * count_a(i, j));
                EXPECT_EQ(mb[i][j], 4LL * count_b(i, j));
                EXPECT_EQ(mg[i][j], 16);
                total += ma[i][j];
            }
        }
        EXPECT_EQ(a["total_bytes"], total);
        fs::remove_all(dir);
    }
    MPI_Comm_free(&comm);
}

TEST(Record, RowsMovedBetweenRanksAreAnotherPattern) {
    // The same multiset of rows on other ranks is another matrix: the fingerprint keeps the rank.
    int p = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    if (p < 2) GTEST_SKIP() << "needs two ranks";
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    const std::string dir = shared_temp_dir(comm);
    ASSERT_EQ(tucoll_record_start(dir.c_str()), MPI_SUCCESS);
    alltoallv_ints(comm, [](int i, int j) { return i == 0 ? 2 + j : 1; }, "vendor");
    alltoallv_ints(comm, [](int i, int j) { return i == 1 ? 2 + j : 1; }, "vendor");
    MPI_Comm_free(&comm);  // the manifest is written when the communicator ends
    ASSERT_EQ(tucoll_record_stop(), MPI_SUCCESS);
    if (tucoll::test::world_rank() == 0) {
        nlohmann::json m = nlohmann::json::parse(std::ifstream(only_recording(dir) / "manifest.json"));
        EXPECT_EQ(m["patterns"].size(), 2u);
        EXPECT_EQ(m["calls"], 2);
        fs::remove_all(dir);
    }
}

int count_c(int i, int j) { return 2 + (i * j) % 3; }

TEST(Record, CallsAcrossManyWindowsAreCountedExactly) {
    // Patterns are agreed 32 calls at a time: 75 calls fill two windows and part of a third,
    // which is agreed when the recording stops (three agreements).
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    const std::string dir = shared_temp_dir(comm);
    ASSERT_EQ(tucoll_record_start(dir.c_str()), MPI_SUCCESS);
    int expected[3] = {0, 0, 0};
    for (int call = 0; call < 75; ++call) {
        const int which = call == 50 ? 2 : call % 3 == 0 ? 0 : 1;
        ++expected[which];
        alltoallv_ints(comm, which == 0 ? count_a : which == 1 ? count_b : count_c, "auto");
    }
    ASSERT_EQ(tucoll_record_stop(), MPI_SUCCESS);
    if (tucoll::test::world_rank() == 0) {
        nlohmann::json m = nlohmann::json::parse(std::ifstream(only_recording(dir) / "manifest.json"));
        EXPECT_EQ(m["calls"], 75);
        EXPECT_EQ(m["record_overhead_seconds"]["agreements"], 3);
        ASSERT_EQ(m["patterns"].size(), 3u);
        for (int k = 0; k < 3; ++k) EXPECT_EQ(m["patterns"][k]["calls"], expected[k]) << k;
        EXPECT_EQ(m["patterns"][2]["first_call"], 50);
        EXPECT_EQ(m["call_log"]["calls"][50][0], 2);
        fs::remove_all(dir);
    }
    MPI_Comm_free(&comm);
}

TEST(Record, NonblockingCallsAndPersistentStartsAreRecorded) {
    // Recorded at their start, timed to their completion, agreed at the next blocking call: the
    // 32 nonblocking calls fill a window that the allgather agrees before it records itself;
    // two more nonblocking calls overlap each other, a persistent plan starts three times.
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    const std::string dir = shared_temp_dir(comm);
    ASSERT_EQ(tucoll_record_start(dir.c_str()), MPI_SUCCESS);
    Exchange a(comm, count_a), b(comm, count_b), c(comm, count_c);
    for (int call = 0; call < 32; ++call) {
        tucoll_request_t req = TUCOLL_REQUEST_NULL;
        ASSERT_EQ(a.start(comm, &req), MPI_SUCCESS);
        ASSERT_EQ(tucoll_wait(&req), MPI_SUCCESS);
    }
    std::vector<double> mine(2, 1.0), gathered(2 * tucoll::test::world_size());
    ASSERT_EQ(tucoll_allgather(mine.data(), 2, MPI_DOUBLE, gathered.data(), 2, MPI_DOUBLE, comm), MPI_SUCCESS);
    tucoll_request_t first = TUCOLL_REQUEST_NULL, second = TUCOLL_REQUEST_NULL, plan = TUCOLL_REQUEST_NULL;
    ASSERT_EQ(b.start(comm, &first), MPI_SUCCESS);
    ASSERT_EQ(a.start(comm, &second), MPI_SUCCESS);
    ASSERT_EQ(tucoll_wait(&second), MPI_SUCCESS);  // completed in the other order than started
    ASSERT_EQ(tucoll_wait(&first), MPI_SUCCESS);
    ASSERT_EQ(c.init(comm, &plan), MPI_SUCCESS);
    for (int start = 0; start < 3; ++start) {
        ASSERT_EQ(tucoll_start(&plan), MPI_SUCCESS);
        ASSERT_EQ(tucoll_wait(&plan), MPI_SUCCESS);
    }
    ASSERT_EQ(tucoll_request_free(&plan), MPI_SUCCESS);
    ASSERT_EQ(tucoll_record_stop(), MPI_SUCCESS);
    if (tucoll::test::world_rank() == 0) {
        nlohmann::json m = nlohmann::json::parse(std::ifstream(only_recording(dir) / "manifest.json"));
        EXPECT_EQ(m["calls"], 32 + 1 + 2 + 3);
        EXPECT_EQ(m["calls_not_recorded"], 0);
        EXPECT_EQ(m["record_overhead_seconds"]["agreements"], 2);
        ASSERT_EQ(m["patterns"].size(), 4u);
        const auto &pa = m["patterns"][0], &pg = m["patterns"][1], &pb = m["patterns"][2], &pc = m["patterns"][3];
        EXPECT_EQ(pa["collective"], "alltoallv");
        EXPECT_EQ(pa["calls"], 33);
        EXPECT_EQ(pa["algorithms"]["tuna:radix=2"], 33) << pa["algorithms"].dump();
        EXPECT_GT(pa["seconds"]["min"].get<double>(), 0.0);
        EXPECT_EQ(pg["collective"], "allgather");
        EXPECT_EQ(pb["calls"], 1);
        EXPECT_EQ(pb["first_call"], 33);
        EXPECT_EQ(pc["calls"], 3);
        EXPECT_EQ(pc["requested"]["auto"], 3);
        const auto ma = read_pattern(only_recording(dir) / pa["file"].get<std::string>());
        ASSERT_EQ(ma.size(), static_cast<size_t>(tucoll::test::world_size()));
        EXPECT_EQ(ma[0][0], 4LL * count_a(0, 0));
        fs::remove_all(dir);
    }
    MPI_Comm_free(&comm);
}

TEST(Record, AWindowFullOfNonblockingCallsCountsTheRestUntilABlockingCall) {
    // No collective may run at a start or a completion, so 40 nonblocking calls with nothing
    // blocking between record 32; the 8 that found the window full are counted.
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    const std::string dir = shared_temp_dir(comm);
    ASSERT_EQ(tucoll_record_start(dir.c_str()), MPI_SUCCESS);
    Exchange a(comm, count_a);
    for (int call = 0; call < 40; ++call) {
        tucoll_request_t req = TUCOLL_REQUEST_NULL;
        ASSERT_EQ(a.start(comm, &req), MPI_SUCCESS);
        ASSERT_EQ(tucoll_wait(&req), MPI_SUCCESS);
    }
    ASSERT_EQ(tucoll_record_stop(), MPI_SUCCESS);
    if (tucoll::test::world_rank() == 0) {
        nlohmann::json m = nlohmann::json::parse(std::ifstream(only_recording(dir) / "manifest.json"));
        EXPECT_EQ(m["calls"], 32);
        EXPECT_EQ(m["calls_not_recorded"], 8);
        fs::remove_all(dir);
    }
    MPI_Comm_free(&comm);
}

TEST(Record, StartWithoutADirectoryIsAnError) {
    EXPECT_EQ(tucoll_record_start(nullptr), MPI_ERR_ARG);
    EXPECT_EQ(tucoll_record_start(""), MPI_ERR_ARG);
    EXPECT_NE(std::string(tucoll_error_string(MPI_ERR_ARG)).find("directory"), std::string::npos);
}

}  // namespace
