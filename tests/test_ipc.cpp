// The IPC all-to-all (seed 002) and tucoll_alltoall: the host backend under real MPI against the
// reference over distributions and type pairs, on one node and on emulated nodes (so the
// overlapped inter-node part runs); MPI_Alltoall through every algorithm; a refusing kernel; and
// the backend-independent logic (engine choice, peer order, the cache of opened peers) with a
// recording mock backend.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "alltoallv/alltoallv.h"
#include "ipc/backend.h"
#include "test_util.h"
#include "tucoll.h"

namespace tucoll::test {
namespace {

// ---- backend-independent pieces -------------------------------------------------------------

TEST(IpcLogic, EngineBySizeAndMode) {
    using ipc::CopyMode;
    using ipc::Engine;
    EXPECT_EQ(ipc::engine_for(1 << 20, CopyMode::kKernel, 512 << 10), Engine::kKernel);
    EXPECT_EQ(ipc::engine_for(16, CopyMode::kMemcpy, 512 << 10), Engine::kCopyEngine);
    EXPECT_EQ(ipc::engine_for((512 << 10) - 1, CopyMode::kHybrid, 512 << 10), Engine::kKernel);
    EXPECT_EQ(ipc::engine_for(512 << 10, CopyMode::kHybrid, 512 << 10), Engine::kCopyEngine);
}

TEST(IpcLogic, EachReceiverIsWrittenByOneSenderAtATime) {
    for (int q : {1, 2, 3, 4, 7, 8}) {
        for (int step = 0; step < q; ++step) {
            std::vector<int> writers(q, 0);
            for (int sender = 0; sender < q; ++sender) ++writers[ipc::peer_at(sender, q, step)];
            for (int r = 0; r < q; ++r) EXPECT_EQ(writers[r], 1) << "q=" << q << " step=" << step;
        }
        EXPECT_EQ(ipc::peer_at(2 % q, q, 0), 2 % q) << "self first";
    }
}

TEST(IpcLogic, OpenedOncePerMemoryNotPerOffset) {
    ipc::OpenedCache<int> cache(8);
    ipc::Descriptor a{}, b{};
    a.bytes[0] = 1;              // the allocation's handle
    a.bytes[70] = 5;             // an offset in it, outside the key
    b = a;
    b.bytes[70] = 9;             // the same allocation at another offset
    bool fresh = false;
    cache.lookup(a, 64, 1, &fresh) = 42;
    EXPECT_TRUE(fresh);
    EXPECT_EQ(cache.lookup(b, 64, 1, &fresh), 42);
    EXPECT_FALSE(fresh);
    b.bytes[0] = 2;  // another allocation
    cache.lookup(b, 64, 1, &fresh);
    EXPECT_TRUE(fresh);
    EXPECT_EQ(cache.opens(), 2u);
}

// Bounded, least recently used out first, nothing used since the last trim closed by the next,
// every entry closed once: by trim, by its last owner's release, or as stale.
TEST(IpcLogic, OpenedCacheIsBoundedAndClosesWhatItDrops) {
    ipc::OpenedCache<int> cache(3);
    std::vector<int> closed;
    const auto close = [&closed](int &v) { closed.push_back(v); };
    const auto desc = [](int id) {
        ipc::Descriptor d{};
        d.bytes[0] = static_cast<unsigned char>(id);
        return d;
    };
    bool fresh = false;
    for (int id = 1; id <= 5; ++id) cache.lookup(desc(id), 8, /*owner=*/id % 2 ? 100 : 200, &fresh) = id;
    cache.trim(8, close);  // all five in use in this period (a call in progress may still copy)
    EXPECT_TRUE(closed.empty());
    EXPECT_EQ(cache.size(), 5u);
    cache.lookup(desc(1), 8, 100, &fresh);  // 1 is used again: 2 and 3 are now the oldest
    EXPECT_FALSE(fresh);
    cache.trim(8, close);
    EXPECT_EQ(closed, (std::vector<int>{2, 3}));
    EXPECT_EQ(cache.size(), 3u);
    cache.lookup(desc(4), 8, 100, &fresh);  // 4 now has both owners
    cache.release(200, 8, close);           // 200's own entries (none left alone) stay
    EXPECT_EQ(closed.size(), 2u);
    cache.release(100, 8, close);  // 1, 5 and 4 lose their last owner
    EXPECT_EQ(closed.size(), 5u);
    EXPECT_EQ(cache.size(), 0u);
    cache.lookup(desc(7), 8, 100, &fresh) = 7;
    cache.drop_if(8, close, [](auto &e) { return e.opened == 7; });
    EXPECT_EQ(closed.back(), 7);
    EXPECT_EQ(cache.closes(), 6u);
    EXPECT_EQ(cache.find(desc(7), 8), nullptr);
}

TEST(IpcLogic, CopyParameterIsSpelledByName) {
    const RegistryBase &reg = alltoallv::registry();
    Selection sel;
    ASSERT_EQ(resolve_spec(reg, "ipc:copy=kernel", Scope{4, 4}, &sel), MPI_SUCCESS);
    EXPECT_EQ(sel.params.get("copy"), 0);
    EXPECT_NE(sel.spec.find("copy=kernel"), std::string::npos) << sel.spec;
    ASSERT_EQ(resolve_spec(reg, "ipc:copy=1", Scope{4, 4}, &sel), MPI_SUCCESS);
    EXPECT_NE(sel.spec.find("copy=memcpy"), std::string::npos) << sel.spec;
    EXPECT_EQ(resolve_spec(reg, "ipc:copy=dma", Scope{4, 4}, &sel), MPI_ERR_ARG);
    EXPECT_NE(std::string(tucoll_error_string(MPI_ERR_ARG)).find("kernel|memcpy|hybrid"), std::string::npos);
    EXPECT_EQ(resolve_spec(reg, "tuna:radix=fast", Scope{4, 4}, &sel), MPI_ERR_ARG);
}

// A backend that records every put (the local rank it wrote to, the engine) and copies through the
// build's own backend. The writer's rank travels in the unused tail of each descriptor.
class RecordingBackend final : public ipc::Backend {
  public:
    struct Put {
        int to;
        ipc::Engine engine;
        int64_t bytes;
    };
    explicit RecordingBackend(ipc::Backend &real) : real_(real) {}
    const char *name() const override { return "recording"; }
    bool available(ipc::Refusal *why) override { return real_.available(why); }
    int expose(void *base, int64_t bytes, ipc::Descriptor *out) override {
        const int rc = real_.expose(base, bytes, out);
        const int me = world_rank();
        std::memcpy(out->bytes + kRankAt, &me, sizeof me);
        return rc;
    }
    int open(const ipc::Descriptor &peer, uint64_t owner) override { return real_.open(peer, owner); }
    int put(const ipc::Descriptor &peer, int64_t offset, const void *src, int64_t bytes, ipc::Engine e) override {
        int to = -1;
        std::memcpy(&to, peer.bytes + kRankAt, sizeof to);
        puts.push_back({to, e, bytes});
        return real_.put(peer, offset, src, bytes, e);
    }
    int flush() override { return real_.flush(); }
    std::vector<Put> puts;

  private:
    static constexpr size_t kRankAt = sizeof(ipc::Descriptor::bytes) - sizeof(int);
    ipc::Backend &real_;
};

TEST(IpcMock, PeersInOrderEnginesBySize) {
    ipc::Backend &real = ipc::backend_for(nullptr);
    RecordingBackend recorder(real);
    ipc::set_backend_override(&recorder);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    const int p = world_size(), me = world_rank();
    // 1 KiB blocks: kernel; 1 MiB: copy engine (hybrid, memcpy_threshold 512 KiB).
    for (int ints : {256, 256 * 1024}) {
        recorder.puts.clear();
        EXPECT_TRUE(uniform_int_alltoallv("ipc:ipc_threshold=0", ints, comm));
        tucoll_stats_t stats;
        ASSERT_EQ(tucoll_get_stats(comm, &stats), MPI_SUCCESS);
        if (std::string(stats.path).find("refused") != std::string::npos) continue;  // a kernel that refuses
        ASSERT_EQ(static_cast<int>(recorder.puts.size()), p - 1);
        for (int step = 1; step < p; ++step) {
            const RecordingBackend::Put &put = recorder.puts[step - 1];
            EXPECT_EQ(put.to, (me + step) % p) << "step " << step;
            EXPECT_EQ(put.bytes, ints * 4);
            EXPECT_EQ(put.engine, ints * 4 < (512 << 10) ? ipc::Engine::kKernel : ipc::Engine::kCopyEngine);
        }
    }
    // Below ipc_threshold every block is a message: no put.
    recorder.puts.clear();
    EXPECT_TRUE(uniform_int_alltoallv("ipc", 16, comm));
    EXPECT_TRUE(recorder.puts.empty());
    ipc::set_backend_override(nullptr);
    MPI_Comm_free(&comm);
}

// ---- the host backend on the alltoallv matrix ------------------------------------------------

struct IpcCase {
    std::string spec;
    int ppn;  // 0: one node (as detected); else emulated nodes of that many ranks
    std::string dist, type;
};

std::vector<IpcCase> ipc_cases() {
    std::vector<IpcCase> out;
    for (const char *spec : {"ipc:ipc_threshold=0", "ipc:ipc_threshold=0,copy=kernel,overlap=0",
                             "ipc:ipc_threshold=64,uniform_check=1", "ipc"}) {
        for (int ppn : {0, 2}) {
            for (const std::string &dist : test_distributions()) {
                for (const std::string &type : test_types()) out.push_back({spec, ppn, dist, type});
            }
        }
    }
    return out;
}

class IpcMatrix : public ::testing::TestWithParam<IpcCase> {};

TEST_P(IpcMatrix, MatchesReference) {
    const IpcCase &c = GetParam();
    tucoll_stats_t stats;
    EXPECT_TRUE(alltoallv_matches(c.spec, comm_with_ppn(c.ppn), c.dist, c.type, bench::Layout::kScattered, 3000, 11,
                                  &stats));
    EXPECT_NE(std::string(stats.path).find("ipc"), std::string::npos) << stats.path;
}

INSTANTIATE_TEST_SUITE_P(Host, IpcMatrix, ::testing::ValuesIn(ipc_cases()), [](const auto &info) {
    return sanitize(info.param.spec + "_q" + std::to_string(info.param.ppn) + "_" + info.param.dist + "_" +
                    info.param.type);
});

// A block larger than its place, copied (not sent): the sender reports it, its node's ranks
// return an error too, everyone returns, and the next call is right.
TEST(IpcFaults, BlockLargerThanItsPlace) {
    const int p = world_size(), me = world_rank();
    if (p < 2) GTEST_SKIP();
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);  // MPICH raises completion errors there
    constexpr int n = 1024;
    std::vector<int> send(static_cast<size_t>(p) * n * 2, me), recv(send.size(), -1), scounts(p, n), rcounts(p, n),
        displs(p);
    for (int j = 0; j < p; ++j) displs[j] = 2 * j * n;
    if (me == 0) scounts[1] = 2 * n;  // rank 1 expects n
    const int rc = tucoll_alltoallv_with("ipc:ipc_threshold=0", send.data(), scounts.data(), displs.data(), MPI_INT,
                                         recv.data(), rcounts.data(), displs.data(), MPI_INT, comm);
    std::vector<int> rcs(p);
    MPI_Allgather(&rc, 1, MPI_INT, rcs.data(), 1, MPI_INT, comm);
    int cls = MPI_SUCCESS;
    if (rcs[0] != MPI_SUCCESS) MPI_Error_class(rcs[0], &cls);
    EXPECT_EQ(cls, MPI_ERR_TRUNCATE);
    EXPECT_NE(rcs[1], MPI_SUCCESS) << "rank 1 shares rank 0's node";
    if (me == 1) {
        EXPECT_EQ(recv[n], -1) << "nothing written past rank 0's place in rank 1's buffer";
    }
    EXPECT_TRUE(uniform_int_alltoallv("ipc:ipc_threshold=0", 64, comm));
    MPI_Comm_free(&comm);
}

// ---- when the kernel refuses ------------------------------------------------------------------

// (A kernel that refuses process_vm_writev itself is tested in test_ipc_refused.cpp, in a process
// of its own: the refusal, a seccomp filter, cannot be lifted once installed.)

TEST(IpcRefused, SwitchedOffByEnvironment) {
    setenv("TUCOLL_IPC_HOST", "off", 1);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    EXPECT_TRUE(uniform_int_alltoallv("ipc:ipc_threshold=0", 100, comm));
    tucoll_stats_t stats;
    ASSERT_EQ(tucoll_get_stats(comm, &stats), MPI_SUCCESS);
    EXPECT_NE(std::string(stats.path).find("refused"), std::string::npos) << stats.path;
    unsetenv("TUCOLL_IPC_HOST");
    MPI_Comm_free(&comm);
}

// ---- MPI_Alltoall ------------------------------------------------------------------------------

struct AlltoallCase {
    std::string spec;
    int count;
    bool in_place;
};

std::vector<AlltoallCase> alltoall_cases() {
    std::vector<AlltoallCase> out;
    std::vector<std::string> specs;
    for (const auto &alg : alltoallv::alltoall_registry()) specs.push_back(alg.name);
    specs.push_back("ipc:ipc_threshold=0");
    for (const std::string &spec : specs) {
        for (int count : {0, 1, 5, 1000}) out.push_back({spec, count, false});
        out.push_back({spec, 7, true});
    }
    return out;
}

class Alltoall : public ::testing::TestWithParam<AlltoallCase> {};

// Ints sent as MPI_INT and received as pairs of ints (a contiguous type): equal signatures,
// different types; in place, the receive buffer holds the data.
TEST_P(Alltoall, MatchesVendor) {
    const AlltoallCase &c = GetParam();
    const int p = world_size(), me = world_rank();
    const int n = c.count * 2;  // ints per block
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    std::vector<int> send(static_cast<size_t>(p) * n + 1), expected(send.size(), -1), got(send.size(), -1);
    for (size_t k = 0; k < send.size(); ++k) send[k] = me * 100000 + static_cast<int>(k);
    MPI_Comm comm = comm_with_ppn(p >= 4 ? 2 : 0);
    int rc = MPI_SUCCESS;
    if (c.in_place) {
        expected = send;
        got = send;
        ASSERT_EQ(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, expected.data(), c.count, pair, comm), MPI_SUCCESS);
        rc = tucoll_alltoall_with(c.spec.c_str(), MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, got.data(), c.count, pair, comm);
    } else {
        ASSERT_EQ(MPI_Alltoall(send.data(), n, MPI_INT, expected.data(), c.count, pair, comm), MPI_SUCCESS);
        rc = tucoll_alltoall_with(c.spec.c_str(), send.data(), n, MPI_INT, got.data(), c.count, pair, comm);
    }
    EXPECT_EQ(rc, MPI_SUCCESS) << tucoll_error_string(rc);
    EXPECT_TRUE(all_ranks(rc == MPI_SUCCESS && got == expected)) << c.spec;
    tucoll_stats_t stats;
    if (rc == MPI_SUCCESS && tucoll_get_stats(comm, &stats) == MPI_SUCCESS) {
        EXPECT_STREQ(stats.collective, "alltoall");
        // MPI_Alltoall needs no displacement exchange; below ipc_threshold no copy at all.
        const bool copies = c.spec.find("ipc_threshold=0") != std::string::npos || c.count * 8 >= 4096;
        if (c.spec.rfind("ipc", 0) == 0 && c.count > 0) {
            EXPECT_NE(std::string(stats.path).find(copies ? "uniform" : "below threshold"), std::string::npos)
                << stats.path;
        }
    }
    MPI_Type_free(&pair);
}

INSTANTIATE_TEST_SUITE_P(Registry, Alltoall, ::testing::ValuesIn(alltoall_cases()), [](const auto &info) {
    return sanitize(info.param.spec + "_" + std::to_string(info.param.count) + (info.param.in_place ? "_in_place" : ""));
});

TEST(AlltoallErrors, NegativeCountsAndUnknownSpec) {
    int x = 0;
    EXPECT_EQ(tucoll_alltoall(&x, -1, MPI_INT, &x, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_COUNT);
    EXPECT_EQ(tucoll_alltoall(&x, 1, MPI_INT, &x, -2, MPI_INT, MPI_COMM_WORLD), MPI_ERR_COUNT);
    std::vector<int> a(world_size()), b(world_size());
    EXPECT_EQ(tucoll_alltoall_with("nosuch", a.data(), 1, MPI_INT, b.data(), 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_ARG);
}

}  // namespace
}  // namespace tucoll::test
