// Device buffers without a GPU: what tucoll does with GPU memory and an MPI that does not take it
// (the common case), on a fake device whose memory the CPU cannot touch (tests/fake_device.h: any
// CPU access is a SIGSEGV). Every path must copy it by the device runtime alone: auto (ipc within
// a node, staged across nodes), ipc at every size (nothing below a threshold goes to MPI), mixed
// device/host buffers, MPI_IN_PLACE, managed memory, a rank whose buffer cannot be exported, a
// refused backend; imported mappings bounded and closed with their communicator; the copy
// kernel's body on every alignment; the sparse exchanges refusing device values. tests/test_ipc_gpu.cpp runs the same on a real GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "fake_device.h"
#include "ipc/backend.h"
#include "ipc/copy_range.h"
#include "sparse/sparse.h"
#include "test_util.h"
#include "tucoll.h"

namespace tucoll::test {
namespace {

// The copy kernel's body (ipc/copy_range.h) on simulated threads: every pair of alignments of
// source and destination, lengths around the word sizes, bytes around the destination untouched.
TEST(CopyRange, EveryAlignmentAndLength) {
    std::vector<char> src(512), dst(512);
    for (size_t k = 0; k < src.size(); ++k) src[k] = static_cast<char>(k * 131 + 7);
    for (size_t s = 0; s < 16; ++s) {
        for (size_t d = 0; d < 16; ++d) {
            for (size_t n : {0, 1, 3, 4, 5, 15, 16, 17, 31, 33, 64, 100, 255, 300}) {
                std::fill(dst.begin(), dst.end(), '\x55');
                for (unsigned threads : {1u, 7u, 32u}) {
                    for (unsigned t = 0; t < threads; ++t) ipc::copy_range(dst.data() + 64 + d, src.data() + 64 + s, n, t, threads);
                }
                bool ok = std::memcmp(dst.data() + 64 + d, src.data() + 64 + s, n) == 0;
                for (size_t k = 0; k < 64 + d; ++k) ok = ok && dst[k] == '\x55';
                for (size_t k = 64 + d + n; k < dst.size(); ++k) ok = ok && dst[k] == '\x55';
                ASSERT_TRUE(ok) << "src+" << s << " dst+" << d << " n=" << n;
            }
        }
    }
}

// What rank `from` sends rank `to` in element k.
unsigned char value(int from, int to, int k) { return static_cast<unsigned char>(from * 31 + to * 7 + k * 13 + 1); }

// Counts of an irregular exchange of `base`-sized blocks with some empty and an odd-sized one, so
// that blocks sit at unaligned byte offsets.
int count_of(int from, int to, int base) {
    if ((from + to) % 4 == 3) return 0;
    return base + (from * 5 + to * 3) % 7;
}

struct Exchange {
    int p = 1, me = 0;
    std::vector<int> sc, sd, rc, rd;
    std::vector<unsigned char> send, expected;
    Exchange(MPI_Comm comm, int base, bool uniform) {
        MPI_Comm_size(comm, &p);
        MPI_Comm_rank(comm, &me);
        sc.resize(p), sd.resize(p), rc.resize(p), rd.resize(p);
        int s = 0, r = 0;
        for (int j = 0; j < p; ++j) {
            sc[j] = uniform ? base : count_of(me, j, base);
            rc[j] = uniform ? base : count_of(j, me, base);
            sd[j] = s, rd[j] = r;
            s += sc[j], r += rc[j];
        }
        send.resize(s);
        expected.resize(r);
        for (int j = 0; j < p; ++j) {
            for (int k = 0; k < sc[j]; ++k) send[sd[j] + k] = value(me, j, k);
            for (int k = 0; k < rc[j]; ++k) expected[rd[j] + k] = value(j, me, k);
        }
    }
};

// Buffers on the fake device (or on the host where `host_*`), released with it.
struct Buffers {
    void *send = nullptr, *recv = nullptr;
    bool host_send, host_recv;
    std::vector<unsigned char> host_s, host_r;
    Buffers(const Exchange &x, fake::Kind kind, bool host_send_ = false, bool host_recv_ = false)
        : host_send(host_send_), host_recv(host_recv_) {
        host_s = x.send;
        host_r.assign(x.expected.size() + 1, 0xEE);
        send = host_send ? static_cast<void *>(host_s.data()) : fake::allocate(x.send.size(), kind);
        recv = host_recv ? static_cast<void *>(host_r.data()) : fake::allocate(host_r.size(), kind);
        if (!host_send) fake::upload(send, x.send.data(), x.send.size());
        if (!host_recv) fake::upload(recv, host_r.data(), host_r.size());
    }
    ~Buffers() {
        if (!host_send) fake::release(send);
        if (!host_recv) fake::release(recv);
    }
    std::vector<unsigned char> received() {
        std::vector<unsigned char> out(host_r.size());
        if (host_recv) return host_r;
        fake::download(out.data(), recv, out.size());
        return out;
    }
};

bool matches(Buffers &b, const Exchange &x) {
    const std::vector<unsigned char> got = b.received();
    return std::memcmp(got.data(), x.expected.data(), x.expected.size()) == 0 && got.back() == 0xEE;
}

std::string path_of(MPI_Comm comm) {
    tucoll_stats_t st;
    tucoll_get_stats(comm, &st);
    return st.path;
}

class FakeDevice : public ::testing::Test {
  protected:
    void SetUp() override {
        fake::install();
        ipc::set_mpi_device_aware_override(0);  // the MPI must never see a device pointer
    }
    void TearDown() override {
        ipc::set_mpi_device_aware_override(-1);
        fake::uninstall();
    }
};

int run(const std::string &spec, bool alltoall, const Exchange &x, Buffers &b, MPI_Comm comm) {
    if (alltoall) return tucoll_alltoall_with(spec.c_str(), b.send, x.sc[0], MPI_BYTE, b.recv, x.rc[0], MPI_BYTE, comm);
    return tucoll_alltoallv_with(spec.c_str(), b.send, x.sc.data(), x.sd.data(), MPI_BYTE, b.recv, x.rc.data(),
                                 x.rd.data(), MPI_BYTE, comm);
}

// A program that allocates a new receive buffer for every call: the mappings of its peers' old
// allocations stay within the cache's bound, and freeing the communicator closes them all.
TEST_F(FakeDevice, MappingsAreBoundedAndClosedWithTheCommunicator) {
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    const size_t open_before = fake::open_mappings();  // 0: this test runs first
    const size_t before = fake::mappings_made();
    size_t most = 0;
    for (int call = 0; call < 12; ++call) {
        const Exchange x(comm, 1000, true);
        Buffers b(x, fake::Kind::kDevice);
        EXPECT_EQ(run("ipc", true, x, b, comm), MPI_SUCCESS);
        EXPECT_TRUE(all_ranks(matches(b, x), comm));
        most = std::max(most, fake::open_mappings());
    }
    if (world_size() > 1) {
        EXPECT_GE(fake::mappings_made() - before, 12u);  // one peer at least, a new allocation each call
        EXPECT_LE(most, fake::kCacheCapacity);  // trimmed at each flush
    }
    MPI_Comm_free(&comm);
    EXPECT_LE(fake::open_mappings(), open_before);
}

// Every spec that takes device buffers, at sizes below and above ipc's threshold, on one node
// and on emulated nodes of 2 ranks: correct, and the CPU never touched the device memory.
TEST_F(FakeDevice, EverySpecAndSizeWithoutTouchingDeviceMemory) {
    for (int ppn : {0, 2}) {
        MPI_Comm comm = comm_with_ppn(ppn);
        const int nodes = ppn == 0 ? 1 : (world_size() + ppn - 1) / ppn;
        for (const char *spec : {"auto", "ipc", "ipc:copy=kernel,ipc_threshold=65536", "staged", "staged:inner=tuna"}) {
            for (bool alltoall : {true, false}) {
                for (int base : {1, 37, 5000}) {
                    const Exchange x(comm, base, alltoall);
                    Buffers b(x, fake::Kind::kDevice);
                    const int rc = run(spec, alltoall, x, b, comm);
                    EXPECT_EQ(rc, MPI_SUCCESS) << tucoll_error_string(rc);
                    const std::string path = path_of(comm);
                    EXPECT_TRUE(all_ranks(rc == MPI_SUCCESS && matches(b, x), comm))
                        << spec << (alltoall ? " alltoall" : " alltoallv") << " base " << base << " ppn " << ppn
                        << ": " << path;
                    if (std::string(spec).rfind("staged", 0) != 0) {
                        // ipc copies on one node and stages across nodes: never the MPI's own alltoall.
                        EXPECT_EQ(path.find("ipc", 0) != std::string::npos, true) << path;
                        EXPECT_EQ(path.find("staged") != std::string::npos, nodes > 1) << path;
                        EXPECT_EQ(path.find("MPI's alltoall"), std::string::npos) << path;
                    }
                }
            }
        }
    }
}

// A device send buffer with a host receive buffer and the reverse, and MPI_IN_PLACE on device
// memory: staged through host memory by the runtime's copies.
TEST_F(FakeDevice, MixedBuffersAndInPlace) {
    MPI_Comm comm = comm_with_ppn(0);
    for (const char *spec : {"auto", "ipc", "staged"}) {
        for (int mix : {1, 2}) {
            const Exchange x(comm, 300, false);
            Buffers b(x, fake::Kind::kDevice, /*host_send=*/mix == 1, /*host_recv=*/mix == 2);
            const int rc = run(spec, false, x, b, comm);
            EXPECT_TRUE(all_ranks(rc == MPI_SUCCESS && matches(b, x), comm)) << spec << " mix " << mix << ": " << path_of(comm);
        }
        // In place: a symmetric exchange (what a rank sends j is what j sends it, in size).
        const Exchange x(comm, 200, true);
        Buffers b(x, fake::Kind::kDevice);
        fake::upload(b.recv, x.send.data(), x.send.size());
        const int rc = tucoll_alltoallv_with(spec, MPI_IN_PLACE, nullptr, nullptr, MPI_BYTE, b.recv, x.rc.data(),
                                             x.rd.data(), MPI_BYTE, comm);
        EXPECT_TRUE(all_ranks(rc == MPI_SUCCESS && matches(b, x), comm)) << spec << " in place: " << path_of(comm)
                                                                          << tucoll_error_string(rc);
    }
}

// Managed memory is served as device memory, by staging.
TEST_F(FakeDevice, ManagedMemoryIsStaged) {
    MPI_Comm comm = comm_with_ppn(0);
    const Exchange x(comm, 100, false);
    Buffers b(x, fake::Kind::kManaged);
    const int rc = run("auto", false, x, b, comm);
    EXPECT_TRUE(all_ranks(rc == MPI_SUCCESS && matches(b, x), comm)) << path_of(comm);
    EXPECT_NE(path_of(comm).find("staged"), std::string::npos) << path_of(comm);
}

// One rank's receive buffer cannot be exported (a pool allocation): it publishes an invalid
// descriptor, the whole node stages that call (no rank waits in a collective another skipped),
// and the next call with exportable buffers copies again.
TEST_F(FakeDevice, ARankThatCannotExposeFallsBackWithItsNode) {
    MPI_Comm comm = comm_with_ppn(0);
    const int me = world_rank();
    for (int round = 0; round < 2; ++round) {
        const bool odd = round == 0 && me == world_size() - 1;
        const Exchange x(comm, 2000, false);
        Buffers b(x, odd ? fake::Kind::kNotExportable : fake::Kind::kDevice);
        const int rc = run("ipc", false, x, b, comm);
        EXPECT_TRUE(all_ranks(rc == MPI_SUCCESS && matches(b, x), comm)) << path_of(comm);
        const bool staged = path_of(comm).find("staged") != std::string::npos;
        EXPECT_EQ(staged, round == 0) << path_of(comm);
    }
}

// A rank that receives nothing may pass no receive buffer: it exposes nothing, its send buffer
// picks the backend, and the node still copies (nothing is staged for it).
TEST_F(FakeDevice, ARankThatReceivesNothingPassesNoReceiveBuffer) {
    MPI_Comm comm = comm_with_ppn(0);
    const int p = world_size(), me = world_rank();
    const int n = 700;
    std::vector<int> sc(p, n), sd(p), rc(p, n), rd(p);
    for (int j = 0; j < p; ++j) sd[j] = j * n, rd[j] = j * n;
    sc[0] = 0;  // nobody sends to rank 0
    if (me == 0) std::fill(rc.begin(), rc.end(), 0);
    std::vector<unsigned char> host(static_cast<size_t>(p) * n);
    for (size_t k = 0; k < host.size(); ++k) host[k] = value(me, static_cast<int>(k / n), static_cast<int>(k % n));
    void *send = fake::allocate(host.size());
    fake::upload(send, host.data(), host.size());
    void *recv = me == 0 ? nullptr : fake::allocate(host.size());
    const int code = tucoll_alltoallv_with("ipc", send, sc.data(), sd.data(), MPI_BYTE, recv, rc.data(), rd.data(),
                                           MPI_BYTE, comm);
    bool ok = code == MPI_SUCCESS;
    if (recv != nullptr) {
        std::vector<unsigned char> got(host.size());
        fake::download(got.data(), recv, got.size());
        for (int j = 0; ok && j < p; ++j) {
            for (int k = 0; ok && k < n; ++k) ok = got[j * n + k] == value(j, me, k);
        }
        fake::release(recv);
    }
    fake::release(send);
    EXPECT_TRUE(all_ranks(ok, comm)) << tucoll_error_string(code) << " " << path_of(comm);
    EXPECT_EQ(path_of(comm).find("staged"), std::string::npos) << path_of(comm);
}

// The sparse exchanges run on host memory: device values are refused on the rank that passes them
// (every rank here), before anything reads them.
TEST_F(FakeDevice, SparseExchangesRefuseDeviceValues) {
    const int me = world_rank(), self[1] = {me};
    void *values = fake::allocate(64);
    for (bool variable : {false, true}) {
        const auto &registry = variable ? sparse::alltoallv_crs_registry() : sparse::alltoall_crs_registry();
        for (size_t i = 0; i < registry.size(); ++i) {
            const std::string spec = registry.info(i).name;
            int nnz = -1, size = -1, *src = nullptr, *counts = nullptr, *displs = nullptr;
            const int four[1] = {4}, at[1] = {0};
            void *vals = nullptr;
            const int rc = variable ? tucoll_alltoallv_crs_with(spec.c_str(), 1, 4, self, four, at, MPI_INT, values,
                                                                &nnz, &size, &src, &counts, &displs, MPI_INT, &vals,
                                                                MPI_COMM_WORLD)
                                    : tucoll_alltoall_crs_with(spec.c_str(), 1, self, 4, MPI_INT, values, &nnz, &src,
                                                               4, MPI_INT, &vals, MPI_COMM_WORLD);
            EXPECT_EQ(rc, MPI_ERR_BUFFER) << spec << ": " << tucoll_error_string(rc);
            EXPECT_NE(std::string(tucoll_error_string(rc)).find("sendvals is GPU memory"), std::string::npos)
                << tucoll_error_string(rc);
            EXPECT_EQ(vals, nullptr);
        }
    }
    fake::release(values);
}

// A backend refused on a communicator: with an MPI that does not take device buffers, every call
// on it stages (never messages on device pointers).
TEST_F(FakeDevice, RefusedBackendStages) {
    fake::install(/*refuse=*/true);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    for (int call = 0; call < 2; ++call) {
        const Exchange x(comm, 64, call == 1);
        Buffers b(x, fake::Kind::kDevice);
        const int rc = run("auto", call == 1, x, b, comm);
        EXPECT_TRUE(all_ranks(rc == MPI_SUCCESS && matches(b, x), comm)) << path_of(comm);
        if (world_size() > 1) {
            EXPECT_NE(path_of(comm).find("staged"), std::string::npos) << path_of(comm);
        }
    }
    MPI_Comm_free(&comm);
    fake::install(/*refuse=*/false);
}

// With an MPI that takes device buffers (fake device memory the CPU can reach, as such an MPI
// does): ipc keeps its threshold (a uniform exchange below it is the MPI's own alltoall), a rank
// whose buffer cannot be exported receives its node's blocks as messages while the others copy,
// and nothing is staged.
TEST_F(FakeDevice, WithACudaAwareMpiMessagesServeWhatCopiesCannot) {
    ipc::set_mpi_device_aware_override(1);
    fake::set_cpu_visible(true);
    MPI_Comm comm = comm_with_ppn(0);
    const bool odd = world_rank() == world_size() - 1;
    for (int base : {1, 3000, 9000}) {  // below and above ipc_threshold (4096)
        const Exchange x(comm, base, false);
        Buffers b(x, odd ? fake::Kind::kNotExportable : fake::Kind::kDevice);
        const int rc = run("ipc", false, x, b, comm);
        const std::string path = path_of(comm);
        EXPECT_TRUE(all_ranks(rc == MPI_SUCCESS && matches(b, x), comm)) << base << ": " << path;
        EXPECT_EQ(path.find("staged"), std::string::npos) << path;
        EXPECT_NE(path.find("ipc fake"), std::string::npos) << path;
    }
    const Exchange x(comm, 16, true);
    Buffers b(x, fake::Kind::kDevice);
    EXPECT_TRUE(all_ranks(run("ipc", true, x, b, comm) == MPI_SUCCESS && matches(b, x), comm));
    EXPECT_NE(path_of(comm).find("MPI's alltoall"), std::string::npos) << path_of(comm);
    fake::set_cpu_visible(false);
}

// What cannot take device buffers says so, on every rank, with MPI_ERR_BUFFER.
TEST_F(FakeDevice, HostAlgorithmsAndAllgathersRefuse) {
    MPI_Comm comm = comm_with_ppn(0);
    const int p = world_size();
    void *send = fake::allocate(64), *recv = fake::allocate(64 * p);
    int cls = MPI_SUCCESS;
    MPI_Error_class(tucoll_alltoall_with("tuna", send, 16, MPI_BYTE, recv, 16, MPI_BYTE, comm), &cls);
    EXPECT_EQ(cls, MPI_ERR_BUFFER);
    MPI_Error_class(tucoll_allgather(send, 16, MPI_BYTE, recv, 16, MPI_BYTE, comm), &cls);
    EXPECT_EQ(cls, MPI_ERR_BUFFER) << tucoll_error_string(cls);
    MPI_Error_class(tucoll_alltoall_with("vendor", send, 16, MPI_BYTE, recv, 16, MPI_BYTE, comm), &cls);
    EXPECT_EQ(cls, MPI_ERR_BUFFER);
    fake::release(send);
    fake::release(recv);
}

}  // namespace
}  // namespace tucoll::test
