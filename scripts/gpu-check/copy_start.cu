// What a copy costs to start and wait for on this card, for scripts/gpu-check.sh: the per-copy
// terms the simulated GPU platforms charge (sim/platforms/platforms.json "ipc": kernel_latency,
// memcpy_latency, host_latency; thetagpu-like's smpi/device-copy per piece), measured rather
// than read from seed 002's Fig. 4. Each is timed on the host, launch to completion, as the
// callers wait for them: an empty kernel; cudaMemcpyAsync device to device of 16 B and of 128 KiB
// (Open MPI 4.1.1's piece); device to pinned host and back, 16 B. Median and best of 200 after
// 20 warm-ups, on a non-blocking stream.
//
//   copy_start     prints "what bytes median_us best_us" per line
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

namespace {

__global__ void empty_kernel() {}

void report(const char *what, size_t bytes, cudaStream_t stream, const std::function<void()> &start) {
    std::vector<double> us;
    for (int i = 0; i < 220; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        start();
        cudaStreamSynchronize(stream);
        const auto t1 = std::chrono::steady_clock::now();
        if (i >= 20) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    if (cudaGetLastError() != cudaSuccess) {
        std::printf("%s %zu - - (failed)\n", what, bytes);
        return;
    }
    std::sort(us.begin(), us.end());
    std::printf("%s %zu %.2f %.2f\n", what, bytes, us[us.size() / 2], us.front());
}

}  // namespace

int main() {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        std::printf("SKIP: no CUDA device\n");
        return 0;
    }
    constexpr size_t kPiece = 128 * 1024;
    cudaStream_t stream;
    void *src = nullptr, *dst = nullptr, *host = nullptr;
    if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess ||
        cudaMalloc(&src, kPiece) != cudaSuccess || cudaMalloc(&dst, kPiece) != cudaSuccess ||
        cudaMallocHost(&host, kPiece) != cudaSuccess) {
        std::printf("SKIP: cannot set up (%s)\n", cudaGetErrorString(cudaGetLastError()));
        return 0;
    }
    cudaMemset(src, 1, kPiece);
    cudaDeviceSynchronize();
    report("kernel", 0, stream, [&] { empty_kernel<<<1, 1, 0, stream>>>(); });
    for (size_t bytes : {size_t{16}, kPiece}) {
        report("d2d", bytes, stream, [&] { cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream); });
    }
    report("d2h", 16, stream, [&] { cudaMemcpyAsync(host, src, 16, cudaMemcpyDeviceToHost, stream); });
    report("h2d", 16, stream, [&] { cudaMemcpyAsync(dst, host, 16, cudaMemcpyHostToDevice, stream); });
    cudaFreeHost(host);
    cudaFree(src);
    cudaFree(dst);
    cudaStreamDestroy(stream);
    return 0;
}
