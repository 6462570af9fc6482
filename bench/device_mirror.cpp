#include "device_mirror.h"

#include <algorithm>

#include "node_rank.h"

#ifdef TUCOLL_BENCH_CUDA
#include <cuda_runtime.h>
#endif

namespace tucoll::bench {

std::string DeviceMirror::supported(const std::string &memory) {
    if (memory == "host") return "";
#ifdef TUCOLL_BENCH_CUDA
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return "--memory device: no CUDA device here";
    return "";
#else
    return "--memory device needs a CUDA build of tucoll (a CUDA toolkit found by CMake)";
#endif
}

std::string DeviceMirror::mirror(const std::string &memory, const Bytes &send, const Bytes &recv) {
    release();
    std::string err = supported(memory);
    if (!err.empty() || memory == "host") return err;
#ifdef TUCOLL_BENCH_CUDA
    int devices = 1;
    cudaGetDeviceCount(&devices);
    cudaSetDevice(node_local_rank() % devices);
    recv_bytes_ = recv.size();
    // At least one byte each: a rank that sends or receives nothing still passes GPU addresses.
    if (cudaMalloc(&send_, std::max<size_t>(1, send.size())) != cudaSuccess ||
        cudaMalloc(&recv_, std::max<size_t>(1, recv.size())) != cudaSuccess ||
        cudaMemcpy(send_, send.data(), send.size(), cudaMemcpyHostToDevice) != cudaSuccess) {
        release();
        return "--memory device: cannot allocate or fill the GPU buffers";
    }
    reset_recv(recv);
    return "";
#else
    (void)send, (void)recv;
    return "--memory device needs a CUDA build of tucoll";
#endif
}

void DeviceMirror::release() {
#ifdef TUCOLL_BENCH_CUDA
    cudaFree(send_);
    cudaFree(recv_);
#endif
    send_ = recv_ = nullptr;
    recv_bytes_ = 0;
}

void DeviceMirror::reset_recv(const Bytes &host) {
#ifdef TUCOLL_BENCH_CUDA
    if (!active()) return;
    cudaMemcpy(recv_, host.data(), std::min(recv_bytes_, host.size()), cudaMemcpyHostToDevice);
    // From pageable memory cudaMemcpy may return before the copy has landed: the buffers are
    // ready when the timed call starts (tucoll's rule, and a CUDA-aware MPI's).
    cudaDeviceSynchronize();
#else
    (void)host;
#endif
}

const Bytes &DeviceMirror::received(const Bytes &host) const {
    if (!active()) return host;
    back_.resize(recv_bytes_);
#ifdef TUCOLL_BENCH_CUDA
    cudaMemcpy(back_.data(), recv_, recv_bytes_, cudaMemcpyDeviceToHost);
#endif
    return back_;
}

}  // namespace tucoll::bench
