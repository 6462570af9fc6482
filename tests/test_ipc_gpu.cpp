// The ipc algorithm on GPU buffers (the cuda backend): every rank's blocks in device memory,
// exchanged with tucoll_alltoall(v) and compared with the host reference. Skips when this process
// sees no CUDA device; `make test-gpu` runs it on a GPU machine (one rank per GPU of a node).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ipc/backend.h"
#include "test_util.h"
#include "tucoll.h"

namespace tucoll::test {
namespace {

bool have_device() {
    int devices = 0;
    const bool ok = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
    cudaGetLastError();
    if (ok) cudaSetDevice(world_rank() % devices);
    return all_ranks(ok);
}

struct DeviceInts {
    int *ptr = nullptr;
    explicit DeviceInts(size_t n) { EXPECT_EQ(cudaMalloc(&ptr, std::max<size_t>(1, n) * sizeof(int)), cudaSuccess); }
    ~DeviceInts() { cudaFree(ptr); }
};

class OnDevice : public ::testing::TestWithParam<std::string> {};

TEST_P(OnDevice, AlltoallAndAlltoallvMatchTheHostReference) {
    if (!have_device()) GTEST_SKIP() << "no CUDA device";
    const int p = world_size(), me = world_rank();
    for (int n : {1, 1024, 256 * 1024}) {  // 4 B (messages), 4 KiB (kernel), 1 MiB (copy engine)
        const size_t total = static_cast<size_t>(p) * n;
        std::vector<int> host(total), back(total, -1), counts(p, n), displs(p);
        for (size_t k = 0; k < total; ++k) host[k] = me * 1000000 + static_cast<int>(k);
        for (int j = 0; j < p; ++j) displs[j] = j * n;
        DeviceInts send(total), recv(total);
        ASSERT_EQ(cudaMemcpy(send.ptr, host.data(), total * sizeof(int), cudaMemcpyHostToDevice), cudaSuccess);
        EXPECT_TRUE(ipc::is_device_buffer(send.ptr));
        for (bool v : {false, true}) {
            cudaMemset(recv.ptr, 0xff, total * sizeof(int));
            const int rc = v ? tucoll_alltoallv_with(GetParam().c_str(), send.ptr, counts.data(), displs.data(), MPI_INT,
                                                      recv.ptr, counts.data(), displs.data(), MPI_INT, MPI_COMM_WORLD)
                             : tucoll_alltoall_with(GetParam().c_str(), send.ptr, n, MPI_INT, recv.ptr, n, MPI_INT,
                                                     MPI_COMM_WORLD);
            EXPECT_EQ(rc, MPI_SUCCESS) << tucoll_error_string(rc);
            ASSERT_EQ(cudaMemcpy(back.data(), recv.ptr, total * sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
            bool ok = rc == MPI_SUCCESS;
            for (int j = 0; ok && j < p; ++j) {
                for (int k = 0; ok && k < n; ++k) ok = back[j * n + k] == j * 1000000 + me * n + k;
            }
            EXPECT_TRUE(all_ranks(ok)) << GetParam() << (v ? " alltoallv" : " alltoall") << " n=" << n;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Cuda, OnDevice, ::testing::Values("ipc:ipc_threshold=0", "ipc:ipc_threshold=0,copy=kernel", "staged",
                                                           "staged:inner=tuna",
                                                           "ipc:ipc_threshold=0,copy=memcpy", "auto"),
                         [](const auto &info) { return sanitize(info.param); });

TEST(OnDevice, HostAlgorithmsAreRefused) {
    if (!have_device()) GTEST_SKIP() << "no CUDA device";
    const int p = world_size();
    DeviceInts send(p), recv(p);
    EXPECT_EQ(tucoll_alltoall_with("tuna", send.ptr, 1, MPI_INT, recv.ptr, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_BUFFER);
}

}  // namespace
}  // namespace tucoll::test
