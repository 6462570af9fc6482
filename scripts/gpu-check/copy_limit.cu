// The physical limit of an all-to-all on one GPU, for scripts/gpu-check.sh: the time of one
// device-to-device cudaMemcpy of all the bytes a call moves (P ranks on the GPU, P x P blocks of
// B bytes, a rank's block to itself included), the best of 20 after 3 warm-ups, timed by events.
//
//   copy_limit P B [B ...]     prints "P B bytes limit_us GBps" per size (GBps: bytes copied / s)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

int main(int argc, char **argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: copy_limit P B [B ...]\n");
        return 2;
    }
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        std::printf("SKIP: no CUDA device\n");
        return 0;
    }
    const long p = std::atol(argv[1]);
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    for (int a = 2; a < argc; ++a) {
        const size_t block = static_cast<size_t>(std::atoll(argv[a]));
        const size_t bytes = static_cast<size_t>(p) * p * block;
        void *src = nullptr, *dst = nullptr;
        if (cudaMalloc(&src, bytes) != cudaSuccess || cudaMalloc(&dst, bytes) != cudaSuccess) {
            std::printf("%ld %zu %zu - - (cannot allocate)\n", p, block, bytes);
            cudaGetLastError();
            continue;
        }
        cudaMemset(src, 1, bytes);
        float best = 1e30f;
        for (int i = 0; i < 23; ++i) {
            cudaEventRecord(start);
            cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice);
            cudaEventRecord(stop);
            cudaEventSynchronize(stop);
            float ms = 0;
            cudaEventElapsedTime(&ms, start, stop);
            if (i >= 3) best = std::min(best, ms);
        }
        std::printf("%ld %zu %zu %.2f %.1f\n", p, block, bytes, best * 1e3, bytes / (best * 1e-3) / 1e9);
        cudaFree(src);
        cudaFree(dst);
    }
    return 0;
}
