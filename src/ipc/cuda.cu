// The cuda backend: CUDA IPC between the GPUs of a node (seed 002 §III-A). A rank exposes its
// device receive buffer by the IPC handle of the allocation holding it (cudaIpcGetMemHandle works
// on allocations, so the buffer's offset in its allocation travels with the handle); a peer opens
// the handle once per allocation (cudaIpcOpenMemHandle, cached process-wide: opening the same
// handle twice fails) and copies into base + offset with a copy kernel (`kernel`) or
// cudaMemcpyAsync on the copy engine (`memcpy`), both on one stream of this process; flush()
// synchronises that stream, after which the exchange's node-wide reduction tells every receiver
// that its data have landed.
//
// Built only when CMake finds a CUDA toolkit (TUCOLL_CUDA); the library then links cudart. The
// driver API's cuMemGetAddressRange is reached through cudaGetDriverEntryPointByVersion, so the
// library does not link libcuda and loads on machines without an NVIDIA driver (where no buffer is
// ever device memory).
#include <cuda.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "core/errors.h"
#include "ipc/backend.h"

namespace tucoll::ipc {
namespace {

struct CudaDescriptor {
    uint64_t pid;
    cudaIpcMemHandle_t handle;  // pid and handle name the allocation: the cache key
    uint64_t offset;            // of the exposed buffer in its allocation
    uint64_t bytes;
};
constexpr size_t kAllocationKeyBytes = sizeof(uint64_t) + sizeof(cudaIpcMemHandle_t);
static_assert(sizeof(CudaDescriptor) <= sizeof(Descriptor) - sizeof(int), "descriptor too large");

// 16-byte vectors where source, destination and length allow, else bytes.
__global__ void copy_kernel(char *dst, const char *src, size_t bytes) {
    const size_t first = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    const bool aligned = (reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) % 16 == 0;
    size_t done = 0;
    if (aligned) {
        const size_t vectors = bytes / 16;
        uint4 *d = reinterpret_cast<uint4 *>(dst);
        const uint4 *s = reinterpret_cast<const uint4 *>(src);
        for (size_t i = first; i < vectors; i += stride) d[i] = s[i];
        done = vectors * 16;
    }
    for (size_t i = done + first; i < bytes; i += stride) dst[i] = src[i];
}

int cuda_fail(cudaError_t err, const char *what) {
    return failf(MPI_ERR_OTHER, "ipc cuda: %s: %s", what, cudaGetErrorString(err));
}

using GetAddressRange = CUresult (*)(CUdeviceptr *base, size_t *size, CUdeviceptr ptr);

class CudaBackend final : public Backend {
  public:
    const char *name() const override { return "cuda"; }

    bool available(Refusal *why) override {
        int devices = 0;
        if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
            cudaGetLastError();
            why->refused = true;
            std::snprintf(why->reason, sizeof why->reason, "no CUDA device");
            return false;
        }
        return true;
    }

    int expose(void *base, int64_t bytes, Descriptor *out) override {
        std::lock_guard<std::mutex> lock(mutex_);
        GetAddressRange range = address_range();
        if (range == nullptr) return failf(MPI_ERR_OTHER, "ipc cuda: cuMemGetAddressRange is not available");
        CUdeviceptr allocation = 0;
        size_t size = 0;
        if (range(&allocation, &size, reinterpret_cast<CUdeviceptr>(base)) != CUDA_SUCCESS) {
            return failf(MPI_ERR_BUFFER, "ipc cuda: %p is not in a device allocation", base);
        }
        CudaDescriptor d{};
        d.pid = static_cast<uint64_t>(getpid());
        const cudaError_t err = cudaIpcGetMemHandle(&d.handle, reinterpret_cast<void *>(allocation));
        if (err != cudaSuccess) return cuda_fail(err, "cudaIpcGetMemHandle");
        d.offset = reinterpret_cast<CUdeviceptr>(base) - allocation;
        d.bytes = static_cast<uint64_t>(bytes);
        std::memset(out->bytes, 0, sizeof out->bytes);
        std::memcpy(out->bytes, &d, sizeof d);
        return MPI_SUCCESS;
    }

    int open(const Descriptor &peer) override {
        std::lock_guard<std::mutex> lock(mutex_);
        bool fresh = false;
        void *&base = cache_.lookup(peer, kAllocationKeyBytes, &fresh);
        if (!fresh && base != nullptr) return MPI_SUCCESS;
        const CudaDescriptor d = decode(peer);
        const cudaError_t err = cudaIpcOpenMemHandle(&base, d.handle, cudaIpcMemLazyEnablePeerAccess);
        if (err != cudaSuccess) {
            base = nullptr;
            return cuda_fail(err, "cudaIpcOpenMemHandle");
        }
        return MPI_SUCCESS;
    }

    int put(const Descriptor &peer, int64_t offset, const void *src, int64_t bytes, Engine engine) override {
        std::lock_guard<std::mutex> lock(mutex_);
        const CudaDescriptor d = decode(peer);
        void **base = cache_.find(peer, kAllocationKeyBytes);
        if (base == nullptr || *base == nullptr) return failf(MPI_ERR_INTERN, "ipc cuda: put to a peer not opened");
        if (offset < 0 || bytes < 0 || static_cast<uint64_t>(offset + bytes) > d.bytes) {
            return failf(MPI_ERR_TRUNCATE, "ipc cuda: %lld bytes at offset %lld do not fit the %llu bytes exposed",
                         static_cast<long long>(bytes), static_cast<long long>(offset),
                         static_cast<unsigned long long>(d.bytes));
        }
        if (bytes == 0) return MPI_SUCCESS;
        char *dst = static_cast<char *>(*base) + d.offset + offset;
        return copy(dst, src, bytes, engine);
    }

    int copy_self(void *dst, const void *src, int64_t bytes) override {
        std::lock_guard<std::mutex> lock(mutex_);
        return copy(static_cast<char *>(dst), src, bytes, Engine::kCopyEngine);
    }

    int flush() override {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stream_ == nullptr) return MPI_SUCCESS;
        const cudaError_t err = cudaStreamSynchronize(stream_);
        return err == cudaSuccess ? MPI_SUCCESS : cuda_fail(err, "cudaStreamSynchronize");
    }

  private:
    static CudaDescriptor decode(const Descriptor &peer) {
        CudaDescriptor d;
        std::memcpy(&d, peer.bytes, sizeof d);
        return d;
    }

    static GetAddressRange address_range() {
        static GetAddressRange fn = [] {
            void *entry = nullptr;
            cudaDriverEntryPointQueryResult status{};
            if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &entry, 12000, cudaEnableDefault, &status) !=
                    cudaSuccess ||
                status != cudaDriverEntryPointSuccess) {
                cudaGetLastError();
                return static_cast<GetAddressRange>(nullptr);
            }
            return reinterpret_cast<GetAddressRange>(entry);
        }();
        return fn;
    }

    int copy(char *dst, const void *src, int64_t bytes, Engine engine) {
        if (stream_ == nullptr) {
            const cudaError_t err = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
            if (err != cudaSuccess) return cuda_fail(err, "cudaStreamCreateWithFlags");
        }
        if (engine == Engine::kCopyEngine) {
            const cudaError_t err = cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice, stream_);
            return err == cudaSuccess ? MPI_SUCCESS : cuda_fail(err, "cudaMemcpyAsync");
        }
        constexpr int kThreads = 256;
        const size_t vectors = (static_cast<size_t>(bytes) + 15) / 16;
        const unsigned blocks = static_cast<unsigned>(std::min<size_t>(1024, (vectors + kThreads - 1) / kThreads));
        copy_kernel<<<blocks, kThreads, 0, stream_>>>(dst, static_cast<const char *>(src), static_cast<size_t>(bytes));
        const cudaError_t err = cudaGetLastError();
        return err == cudaSuccess ? MPI_SUCCESS : cuda_fail(err, "copy kernel launch");
    }

    std::mutex mutex_;
    OpenedCache<void *> cache_;
    cudaStream_t stream_ = nullptr;
};

}  // namespace

bool is_device_memory(const void *buf) {
    // Asked once per process: without a device (or a driver) nothing is device memory, and the
    // runtime is not consulted again on every call.
    static const bool any_device = [] {
        int devices = 0;
        const bool ok = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
        cudaGetLastError();
        return ok;
    }();
    if (!any_device || buf == nullptr) return false;
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, buf) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    return attributes.type == cudaMemoryTypeDevice;
}

int cuda_copy(void *dst, const void *src, int64_t bytes) {
    const cudaError_t err = cudaMemcpy(dst, src, static_cast<size_t>(bytes), cudaMemcpyDefault);
    return err == cudaSuccess ? MPI_SUCCESS : cuda_fail(err, "cudaMemcpy");
}

Backend &cuda_backend() {
    static CudaBackend backend;
    return backend;
}

}  // namespace tucoll::ipc
