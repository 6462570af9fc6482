// The ipc algorithm on GPU buffers (the cuda backend) and everything else tucoll does with device
// memory, on a real GPU: exchanges compared with the host reference, for every spec that takes
// device buffers, at sizes below and above ipc's thresholds and at unaligned offsets; mixed
// device/host buffers, MPI_IN_PLACE, managed memory, pool memory that CUDA IPC cannot export
// (the node falls back together, and no CUDA error is left for the program), a program that
// allocates a new buffer for every call (the imported mappings stay bounded), the copy kernel
// on every alignment. Skips when this process sees no CUDA device; `make test-gpu` and
// scripts/gpu-check.sh run it (ranks share the node's GPUs by node-local rank).
//
// Buffers are ready when a call starts (MPI's rule for CUDA-aware MPIs, and tucoll's): every
// set-up copy or memset is followed by cudaDeviceSynchronize before the call.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "ipc/backend.h"
#include "node_rank.h"
#include "test_util.h"
#include "tucoll.h"

namespace tucoll::test {
namespace {

bool have_device() {
    int devices = 0;
    const bool ok = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
    cudaGetLastError();
    if (ok) cudaSetDevice(bench::node_local_rank() % devices);
    return all_ranks(ok);
}

#define REQUIRE_DEVICE() \
    if (!have_device()) GTEST_SKIP() << "no CUDA device"

enum class Mem { kDevice, kManaged, kPool, kHost };

struct Buffer {
    void *ptr = nullptr;
    Mem mem;
    std::vector<char> host;
    Buffer(size_t bytes, Mem m) : mem(m) {
        bytes = std::max<size_t>(bytes, 1);
        switch (m) {
            case Mem::kDevice: EXPECT_EQ(cudaMalloc(&ptr, bytes), cudaSuccess); break;
            case Mem::kManaged: EXPECT_EQ(cudaMallocManaged(&ptr, bytes), cudaSuccess); break;
            case Mem::kPool: EXPECT_EQ(cudaMallocAsync(&ptr, bytes, nullptr), cudaSuccess); break;
            case Mem::kHost: host.resize(bytes); ptr = host.data(); break;
        }
        cudaDeviceSynchronize();
    }
    ~Buffer() {
        if (mem == Mem::kPool) cudaFreeAsync(ptr, nullptr);
        else if (mem != Mem::kHost) cudaFree(ptr);
        cudaDeviceSynchronize();
    }
    void fill(const void *data, size_t bytes) {
        ASSERT_EQ(cudaMemcpy(ptr, data, bytes, cudaMemcpyDefault), cudaSuccess);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // ready when the call starts
    }
    std::vector<unsigned char> read(size_t bytes) {
        std::vector<unsigned char> out(bytes);
        EXPECT_EQ(cudaMemcpy(out.data(), ptr, bytes, cudaMemcpyDefault), cudaSuccess);
        return out;
    }
};

unsigned char value(int from, int to, int k) { return static_cast<unsigned char>(from * 31 + to * 7 + k * 13 + 1); }

// An irregular exchange (some empty blocks, odd sizes: unaligned offsets) or a uniform one.
struct Exchange {
    int p = world_size(), me = world_rank();
    std::vector<int> sc, sd, rc, rd;
    std::vector<unsigned char> send, expected;
    Exchange(int base, bool uniform) : sc(p), sd(p), rc(p), rd(p) {
        const auto count = [&](int from, int to) {
            if (uniform) return base;
            return (from + to) % 4 == 3 ? 0 : base + (from * 5 + to * 3) % 7;
        };
        int s = 0, r = 0;
        for (int j = 0; j < p; ++j) {
            sc[j] = count(me, j), rc[j] = count(j, me), sd[j] = s, rd[j] = r;
            s += sc[j], r += rc[j];
        }
        send.resize(s), expected.resize(r);
        for (int j = 0; j < p; ++j) {
            for (int k = 0; k < sc[j]; ++k) send[sd[j] + k] = value(me, j, k);
            for (int k = 0; k < rc[j]; ++k) expected[rd[j] + k] = value(j, me, k);
        }
    }
    int run(const std::string &spec, bool alltoall, void *s, void *r) const {
        if (alltoall) return tucoll_alltoall_with(spec.c_str(), s, sc[0], MPI_BYTE, r, rc[0], MPI_BYTE, MPI_COMM_WORLD);
        return tucoll_alltoallv_with(spec.c_str(), s, sc.data(), sd.data(), MPI_BYTE, r, rc.data(), rd.data(), MPI_BYTE,
                                     MPI_COMM_WORLD);
    }
};

// One exchange with buffers in `send_mem` / `recv_mem`: right on every rank, nothing written past
// the received bytes, and no CUDA error left behind.
bool exchange_ok(const std::string &spec, bool alltoall, int base, Mem send_mem, Mem recv_mem, std::string *why) {
    const Exchange x(base, alltoall);
    Buffer s(x.send.size(), send_mem), r(x.expected.size() + 1, recv_mem);
    s.fill(x.send.data(), x.send.size());
    std::vector<unsigned char> sentinel(x.expected.size() + 1, 0xEE);
    r.fill(sentinel.data(), sentinel.size());
    const int rc = x.run(spec, alltoall, s.ptr, r.ptr);
    const std::vector<unsigned char> got = r.read(sentinel.size());
    const cudaError_t left = cudaGetLastError();
    tucoll_stats_t st;
    tucoll_get_stats(MPI_COMM_WORLD, &st);
    *why = std::string(tucoll_error_string(rc)) + " | path " + st.path + " | left " + cudaGetErrorString(left);
    return rc == MPI_SUCCESS && left == cudaSuccess && std::memcmp(got.data(), x.expected.data(), x.expected.size()) == 0 &&
           got.back() == 0xEE;
}

class OnDevice : public ::testing::TestWithParam<std::string> {};

TEST_P(OnDevice, AlltoallAndAlltoallvMatchTheReference) {
    REQUIRE_DEVICE();
    for (int base : {1, 4, 4093, 1 << 20}) {  // messages' sizes, kernel copies, copy engine (hybrid)
        for (bool alltoall : {true, false}) {
            std::string why;
            const bool ok = exchange_ok(GetParam(), alltoall, base, Mem::kDevice, Mem::kDevice, &why);
            EXPECT_TRUE(all_ranks(ok)) << GetParam() << (alltoall ? " alltoall " : " alltoallv ") << base << ": " << why;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Cuda, OnDevice,
                         ::testing::Values("auto", "ipc", "ipc:copy=kernel", "ipc:copy=memcpy", "ipc:copy=hybrid",
                                           "staged", "staged:inner=tuna"),
                         [](const auto &info) { return sanitize(info.param); });

TEST(OnDevice, MixedManagedAndPoolMemory) {
    REQUIRE_DEVICE();
    struct Case {
        Mem send, recv;
        const char *name;
    };
    for (const Case &c : {Case{Mem::kDevice, Mem::kHost, "device->host"}, Case{Mem::kHost, Mem::kDevice, "host->device"},
                          Case{Mem::kManaged, Mem::kManaged, "managed"}, Case{Mem::kPool, Mem::kPool, "pool"}}) {
        for (const char *spec : {"auto", "ipc", "staged"}) {
            std::string why;
            const bool ok = exchange_ok(spec, false, 3000, c.send, c.recv, &why);
            EXPECT_TRUE(all_ranks(ok)) << spec << " " << c.name << ": " << why;
        }
    }
}

// Only the last rank's receive buffer comes from a pool (CUDA IPC cannot export it): its node
// falls back together, and the next call copies again.
TEST(OnDevice, OneRankThatCannotExpose) {
    REQUIRE_DEVICE();
    const bool odd = world_rank() == world_size() - 1;
    std::string why;
    bool ok = exchange_ok("ipc", false, 5000, Mem::kDevice, odd ? Mem::kPool : Mem::kDevice, &why);
    EXPECT_TRUE(all_ranks(ok)) << why;
    ok = exchange_ok("ipc", false, 5000, Mem::kDevice, Mem::kDevice, &why);
    EXPECT_TRUE(all_ranks(ok)) << why;
    EXPECT_EQ(why.find("staged"), std::string::npos) << why;
}

TEST(OnDevice, InPlace) {
    REQUIRE_DEVICE();
    const Exchange x(777, true);
    Buffer r(x.send.size(), Mem::kDevice);
    r.fill(x.send.data(), x.send.size());
    for (const char *spec : {"auto", "ipc", "staged"}) {
        r.fill(x.send.data(), x.send.size());
        const int rc = tucoll_alltoallv_with(spec, MPI_IN_PLACE, nullptr, nullptr, MPI_BYTE, r.ptr, x.rc.data(),
                                             x.rd.data(), MPI_BYTE, MPI_COMM_WORLD);
        const bool ok = rc == MPI_SUCCESS && r.read(x.expected.size()) == x.expected;
        EXPECT_TRUE(all_ranks(ok)) << spec << ": " << tucoll_error_string(rc);
    }
}

// A program that allocates its receive buffer anew for every call: the peers' mappings of the old
// allocations are closed (else each would keep its freed memory alive on the GPU).
TEST(OnDevice, NewBufferEveryCallKeepsMemoryBounded) {
    REQUIRE_DEVICE();
    const size_t block = 8 << 20;  // 8 MiB per peer: a leak of 200 allocations would show
    const Exchange x(static_cast<int>(block), true);
    Buffer s(x.send.size(), Mem::kDevice);
    s.fill(x.send.data(), x.send.size());
    size_t free_before = 0, free_after = 0, total = 0;
    cudaMemGetInfo(&free_before, &total);
    bool ok = true;
    for (int call = 0; call < 200 && ok; ++call) {
        Buffer r(x.expected.size(), Mem::kDevice);
        ok = x.run("ipc", true, s.ptr, r.ptr) == MPI_SUCCESS;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    cudaMemGetInfo(&free_after, &total);
    const double lost = static_cast<double>(free_before) - static_cast<double>(free_after);
    // The cache holds at most TUCOLL_IPC_CACHE (64) allocations of each peer's; 200 would be 25 GB.
    EXPECT_TRUE(all_ranks(ok));
    EXPECT_LT(lost, 70.0 * x.expected.size() * world_size()) << "GPU memory lost: " << lost / 1e9 << " GB";
}

// The copy kernel on every alignment: one rank's exchange with itself, copied by the kernel on
// its GPU; offsets 0..15 on both sides, lengths around the word sizes.
TEST(OnDevice, CopyKernelOnEveryAlignment) {
    REQUIRE_DEVICE();
    MPI_Comm self;
    MPI_Comm_split(MPI_COMM_WORLD, world_rank(), 0, &self);
    std::vector<unsigned char> data(4096);
    for (size_t k = 0; k < data.size(); ++k) data[k] = static_cast<unsigned char>(k * 131 + 7);
    Buffer s(data.size(), Mem::kDevice), r(data.size(), Mem::kDevice);
    s.fill(data.data(), data.size());
    bool ok = true;
    for (int so = 0; so < 16 && ok; ++so) {
        for (int ro = 0; ro < 16 && ok; ++ro) {
            for (int n : {1, 3, 15, 17, 64, 1001, 3000}) {
                int sd = so, rd = ro;
                std::vector<unsigned char> back(n);
                const int rc = tucoll_alltoallv_with("ipc:copy=kernel", s.ptr, &n, &sd, MPI_BYTE, r.ptr, &n, &rd,
                                                     MPI_BYTE, self);
                ok = rc == MPI_SUCCESS && cudaMemcpy(back.data(), static_cast<char *>(r.ptr) + ro, n, cudaMemcpyDefault) ==
                                              cudaSuccess &&
                     std::memcmp(back.data(), data.data() + so, n) == 0;
                if (!ok) ADD_FAILURE() << "src+" << so << " dst+" << ro << " n=" << n << ": " << tucoll_error_string(rc);
            }
        }
    }
    MPI_Comm_free(&self);
    EXPECT_TRUE(all_ranks(ok));
}

TEST(OnDevice, HostAlgorithmsAreRefused) {
    REQUIRE_DEVICE();
    const int p = world_size();
    Buffer send(4 * p, Mem::kDevice), recv(4 * p, Mem::kDevice);
    int cls = MPI_SUCCESS;
    MPI_Error_class(tucoll_alltoall_with("tuna", send.ptr, 1, MPI_INT, recv.ptr, 1, MPI_INT, MPI_COMM_WORLD), &cls);
    EXPECT_EQ(cls, MPI_ERR_BUFFER);
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
}  // namespace tucoll::test
