// The cuda backend and device runtime: CUDA IPC between the GPUs of a node (seed 002 §III-A).
//
// A rank exposes its device receive buffer by the IPC handle of the allocation holding it
// (cudaIpcGetMemHandle works on allocations, so the buffer's offset in its allocation travels
// with the handle); a peer opens the handle once per allocation (cached process-wide and bounded:
// ipc/opened_cache.h) and copies into base + offset with a copy kernel (`kernel`) or
// cudaMemcpyAsync on the copy engine (`memcpy`). flush() launches the kernel copies of the call
// as one batch, synchronises, and closes what the cache evicts; after it the exchange's
// node-wide reduction tells every receiver that its data have landed.
//
// Streams. tucoll copies on a non-blocking stream of its own per device, created on that device.
// It is not ordered after the program's streams: as with a CUDA-aware MPI, the buffers must be
// ready when the call starts (the program synchronises the work that fills the send buffer and
// that still reads the receive buffer) and they are when it returns (every copy into this rank
// has landed before the closing reduction). Being ordered after the legacy default stream would
// instead serialise tucoll with every blocking stream of the program, and would still not cover
// work on its non-blocking streams, nor order a peer's copies after this rank's work.
//
// Allocations are identified as UCX does: by the driver's buffer id, so that memory freed and
// allocated again at the same address is a new allocation, and the mapping of the old one is
// closed (an open mapping keeps the peer's freed memory alive).
//
// Built only when CMake finds a CUDA toolkit (TUCOLL_CUDA); the library then links cudart. Driver
// calls (cuPointerGetAttributes) are reached through cudaGetDriverEntryPointByVersion, so the
// library does not link libcuda and loads on machines without an NVIDIA driver (where no buffer
// is ever device memory). Every CUDA error tucoll handles is cleared from the runtime's error
// state, so that the program's next cudaGetLastError does not report it.
#include <cuda.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "core/errors.h"
#include "ipc/backend.h"
#include "ipc/copy_range.h"

namespace tucoll::ipc {
namespace {

struct CudaDescriptor {
    uint64_t pid;
    uint64_t buffer_id;  // pid and buffer id name the allocation: the cache key
    uint64_t base;       // the allocation's address in the exporting process
    uint64_t offset;     // of the exposed buffer in its allocation
    uint64_t bytes;
    cudaIpcMemHandle_t handle;
};
constexpr size_t kAllocationKeyBytes = 2 * sizeof(uint64_t);
static_assert(sizeof(CudaDescriptor) <= sizeof(Descriptor) - sizeof(int), "descriptor too large");

int cuda_fail(cudaError_t err, const char *what) {
    cudaGetLastError();  // handled here: not left for the program's next cudaGetLastError
    return failf(MPI_ERR_OTHER, "ipc cuda: %s: %s", what, cudaGetErrorString(err));
}

// ---- the copy kernel: every kernel-engine copy of a call in one launch ----------------------

constexpr int kMaxBatch = 64;
constexpr size_t kTileBytes = 64 * 1024;  // one thread block's share of a copy
constexpr int kThreads = 256;

struct CopyJob {
    char *dst;
    const char *src;
    size_t bytes;
};
struct CopyBatch {
    CopyJob jobs[kMaxBatch];
    unsigned first_tile[kMaxBatch + 1];  // job j owns tiles [first_tile[j], first_tile[j + 1])
    int count;
};

// Blocks are numbered in the order the copies were issued (peer order, seed 002 §III-A), and
// the GPU starts them roughly in that order.
__global__ void copy_batch(const CopyBatch batch) {
    const unsigned tile = blockIdx.x;
    int lo = 0, hi = batch.count - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (batch.first_tile[mid] <= tile) lo = mid;
        else hi = mid - 1;
    }
    const CopyJob &job = batch.jobs[lo];
    const size_t begin = static_cast<size_t>(tile - batch.first_tile[lo]) * kTileBytes;
    const size_t bytes = job.bytes - begin < kTileBytes ? job.bytes - begin : kTileBytes;
    copy_range(job.dst + begin, job.src + begin, bytes, threadIdx.x, blockDim.x);
}

// ---- devices, pointers, streams ---------------------------------------------------------------

// Makes `device` current for a scope and restores the program's device after it.
class DeviceGuard {
  public:
    explicit DeviceGuard(int device) {
        if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
        if (previous_ >= 0 && device >= 0 && device != previous_ && cudaSetDevice(device) == cudaSuccess) {
            switched_ = true;
        }
        cudaGetLastError();
    }
    ~DeviceGuard() {
        if (switched_ && cudaSetDevice(previous_) != cudaSuccess) cudaGetLastError();
    }
    DeviceGuard(const DeviceGuard &) = delete;
    DeviceGuard &operator=(const DeviceGuard &) = delete;

  private:
    int previous_ = -1;
    bool switched_ = false;
};

struct PointerInfo {
    Memory memory = Memory::kHost;
    int device = -1;
};

PointerInfo pointer_info(const void *buf) {
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, buf) != cudaSuccess) {
        cudaGetLastError();
        return {};
    }
    if (attributes.type == cudaMemoryTypeDevice) return {Memory::kDevice, attributes.device};
    if (attributes.type == cudaMemoryTypeManaged) return {Memory::kManaged, attributes.device};
    return {};
}

using GetAttributes = CUresult (*)(unsigned count, CUpointer_attribute *attributes, void **data, CUdeviceptr ptr);

// cuPointerGetAttributes answers for any device's memory under unified addressing, whichever
// device is current (cuMemGetAddressRange wants the allocation's context current).
GetAttributes driver_pointer_attributes() {
    static GetAttributes fn = [] {
        void *entry = nullptr;
        cudaDriverEntryPointQueryResult status{};
        if (cudaGetDriverEntryPointByVersion("cuPointerGetAttributes", &entry, 12000, cudaEnableDefault, &status) !=
                cudaSuccess ||
            status != cudaDriverEntryPointSuccess) {
            cudaGetLastError();
            return static_cast<GetAttributes>(nullptr);
        }
        return reinterpret_cast<GetAttributes>(entry);
    }();
    return fn;
}

struct Allocation {
    CUdeviceptr base = 0;
    size_t size = 0;
    unsigned long long buffer_id = 0;
};

int allocation_of(const void *buf, Allocation *out) {
    GetAttributes get = driver_pointer_attributes();
    if (get == nullptr) return failf(MPI_ERR_OTHER, "ipc cuda: cuPointerGetAttributes is not available");
    CUpointer_attribute what[] = {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                  CU_POINTER_ATTRIBUTE_BUFFER_ID};
    void *data[] = {&out->base, &out->size, &out->buffer_id};
    if (get(3, what, data, reinterpret_cast<CUdeviceptr>(buf)) != CUDA_SUCCESS || out->base == 0) {
        return failf(MPI_ERR_BUFFER, "ipc cuda: %p is not in a device allocation", buf);
    }
    return MPI_SUCCESS;
}

// One non-blocking stream per device, made on that device; and the kernel copies not yet launched.
// Shared by the backend and the runtime's copies, each call locked.
class Streams {
  public:
    int copy_engine(int device, void *dst, const void *src, int64_t bytes) {
        std::lock_guard<std::mutex> lock(mutex_);
        cudaStream_t stream = nullptr;
        TUCOLL_TRY(get(device, &stream));
        const cudaError_t err = cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDefault, stream);
        return err == cudaSuccess ? MPI_SUCCESS : cuda_fail(err, "cudaMemcpyAsync");
    }

    int kernel(int device, char *dst, const char *src, int64_t bytes) {
        std::lock_guard<std::mutex> lock(mutex_);
        cudaStream_t stream = nullptr;
        TUCOLL_TRY(get(device, &stream));
        Lane &lane = lanes_[device];
        if (lane.batch.count == kMaxBatch) TUCOLL_TRY(launch(device, lane));
        CopyBatch &b = lane.batch;
        const unsigned tiles = static_cast<unsigned>((static_cast<size_t>(bytes) + kTileBytes - 1) / kTileBytes);
        if (b.count == 0) b.first_tile[0] = 0;
        b.jobs[b.count] = CopyJob{dst, src, static_cast<size_t>(bytes)};
        b.first_tile[b.count + 1] = b.first_tile[b.count] + tiles;
        ++b.count;
        return MPI_SUCCESS;
    }

    // Launches what is batched and waits for every stream used since the last time.
    int synchronize() {
        std::lock_guard<std::mutex> lock(mutex_);
        int rc = MPI_SUCCESS;
        for (auto &[device, lane] : lanes_) {
            if (!lane.used) continue;
            if (lane.batch.count > 0) {
                const int launched = launch(device, lane);
                if (rc == MPI_SUCCESS) rc = launched;
            }
            const cudaError_t err = cudaStreamSynchronize(lane.stream);
            if (err != cudaSuccess && rc == MPI_SUCCESS) rc = cuda_fail(err, "cudaStreamSynchronize");
            lane.used = false;
        }
        return rc;
    }

  private:
    struct Lane {
        cudaStream_t stream = nullptr;
        bool used = false;
        CopyBatch batch{};
    };

    int get(int device, cudaStream_t *out) {
        Lane &lane = lanes_[device];
        if (lane.stream == nullptr) {
            DeviceGuard guard(device);
            const cudaError_t err = cudaStreamCreateWithFlags(&lane.stream, cudaStreamNonBlocking);
            if (err != cudaSuccess) {
                lane.stream = nullptr;
                return cuda_fail(err, "cudaStreamCreateWithFlags");
            }
        }
        lane.used = true;
        *out = lane.stream;
        return MPI_SUCCESS;
    }

    static int launch(int device, Lane &lane) {
        DeviceGuard guard(device);
        const unsigned blocks = lane.batch.first_tile[lane.batch.count];
        copy_batch<<<blocks, kThreads, 0, lane.stream>>>(lane.batch);
        lane.batch.count = 0;
        const cudaError_t err = cudaGetLastError();
        return err == cudaSuccess ? MPI_SUCCESS : cuda_fail(err, "copy kernel launch");
    }

    std::mutex mutex_;
    std::map<int, Lane> lanes_;
};

// ---- the backend --------------------------------------------------------------------------------

struct Mapping {
    void *base = nullptr;  // the peer's allocation, mapped here
    int device = -1;       // the device it was opened on
};

class CudaBackend final : public Backend {
  public:
    explicit CudaBackend(Streams &streams) : streams_(streams) {}

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
        const PointerInfo info = pointer_info(base);
        if (info.memory != Memory::kDevice) return failf(MPI_ERR_BUFFER, "ipc cuda: %p is not device memory", base);
        device_ = info.device;  // peers are opened, and kernels run, on the receive buffer's device
        Allocation a;
        TUCOLL_TRY(allocation_of(base, &a));
        CudaDescriptor d{};
        d.pid = static_cast<uint64_t>(getpid());
        d.buffer_id = a.buffer_id;
        d.base = a.base;
        d.offset = reinterpret_cast<CUdeviceptr>(base) - a.base;
        d.bytes = static_cast<uint64_t>(bytes);
        DeviceGuard guard(info.device);
        // Fails for memory CUDA IPC cannot export (cudaMallocAsync pools, cuMemCreate).
        const cudaError_t err = cudaIpcGetMemHandle(&d.handle, reinterpret_cast<void *>(a.base));
        if (err != cudaSuccess) return cuda_fail(err, "cudaIpcGetMemHandle");
        std::memset(out->bytes, 0, sizeof out->bytes);
        std::memcpy(out->bytes, &d, sizeof d);
        return MPI_SUCCESS;
    }

    int open(const Descriptor &peer, uint64_t owner) override {
        std::lock_guard<std::mutex> lock(mutex_);
        const CudaDescriptor d = decode(peer);
        // The same address of the same process under another buffer id: the old allocation was
        // freed, and its mapping only keeps its memory alive.
        cache_.drop_if(kAllocationKeyBytes, close, [&d](auto &e) {
            const CudaDescriptor old = decode(e.descriptor);
            return old.pid == d.pid && old.base == d.base && old.buffer_id != d.buffer_id;
        });
        bool fresh = false;
        Mapping &m = cache_.lookup(peer, kAllocationKeyBytes, owner, &fresh);
        if (!fresh && m.base != nullptr) return MPI_SUCCESS;
        DeviceGuard guard(device_);
        const cudaError_t err = cudaIpcOpenMemHandle(&m.base, d.handle, cudaIpcMemLazyEnablePeerAccess);
        if (err != cudaSuccess) {
            cache_.erase(peer, kAllocationKeyBytes);
            return cuda_fail(err, "cudaIpcOpenMemHandle");
        }
        m.device = device_;
        return MPI_SUCCESS;
    }

    void release(uint64_t owner) override {
        std::lock_guard<std::mutex> lock(mutex_);
        cache_.release(owner, kAllocationKeyBytes, close);
    }

    int put(const Descriptor &peer, int64_t offset, const void *src, int64_t bytes, Engine engine) override {
        std::lock_guard<std::mutex> lock(mutex_);
        const CudaDescriptor d = decode(peer);
        Mapping *m = cache_.find(peer, kAllocationKeyBytes);
        if (m == nullptr || m->base == nullptr) return failf(MPI_ERR_INTERN, "ipc cuda: put to a peer not opened");
        if (offset < 0 || bytes < 0 || static_cast<uint64_t>(offset + bytes) > d.bytes) {
            return failf(MPI_ERR_TRUNCATE, "ipc cuda: %lld bytes at offset %lld do not fit the %llu bytes exposed",
                         static_cast<long long>(bytes), static_cast<long long>(offset),
                         static_cast<unsigned long long>(d.bytes));
        }
        if (bytes == 0) return MPI_SUCCESS;
        char *dst = static_cast<char *>(m->base) + d.offset + offset;
        return copy(m->device, dst, src, bytes, engine);
    }

    int copy_self(void *dst, const void *src, int64_t bytes, Engine engine) override {
        std::lock_guard<std::mutex> lock(mutex_);
        return copy(pointer_info(dst).device, static_cast<char *>(dst), src, bytes, engine);
    }

    int flush() override {
        std::lock_guard<std::mutex> lock(mutex_);
        const int rc = streams_.synchronize();
        cache_.trim(kAllocationKeyBytes, close);  // nothing is in flight now
        return rc;
    }

  private:
    static CudaDescriptor decode(const Descriptor &peer) {
        CudaDescriptor d;
        std::memcpy(&d, peer.bytes, sizeof d);
        return d;
    }

    static void close(Mapping &m) {
        if (m.base == nullptr) return;
        DeviceGuard guard(m.device);
        if (cudaIpcCloseMemHandle(m.base) != cudaSuccess) cudaGetLastError();
        m.base = nullptr;
    }

    // A kernel reads the source from the device it runs on; a source elsewhere goes by the copy
    // engine, which reaches any device's memory.
    int copy(int device, char *dst, const void *src, int64_t bytes, Engine engine) {
        const char *from = static_cast<const char *>(src);
        if (engine == Engine::kKernel && pointer_info(src).device == device) {
            return streams_.kernel(device, dst, from, bytes);
        }
        return streams_.copy_engine(device, dst, from, bytes);
    }

    std::mutex mutex_;
    Streams &streams_;
    OpenedCache<Mapping> cache_;
    int device_ = -1;  // of the receive buffer last exposed
};

// ---- the runtime --------------------------------------------------------------------------------

class CudaRuntime final : public DeviceRuntime {
  public:
    Memory memory_of(const void *buf) override { return pointer_info(buf).memory; }

    int copy_async(void *dst, const void *src, int64_t bytes) override {
        const PointerInfo to = pointer_info(dst);
        const int device = to.memory != Memory::kHost ? to.device : pointer_info(src).device;
        return streams_.copy_engine(std::max(device, 0), dst, src, bytes);
    }

    int synchronize() override { return streams_.synchronize(); }

    Backend &backend() override { return backend_; }

  private:
    Streams streams_;
    CudaBackend backend_{streams_};
};

}  // namespace

DeviceRuntime *cuda_runtime() {
    // Asked once per process: without a device (or a driver) nothing is device memory, and the
    // runtime is not consulted again on every call.
    static const bool any_device = [] {
        int devices = 0;
        const bool ok = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
        cudaGetLastError();
        return ok;
    }();
    if (!any_device) return nullptr;
    static CudaRuntime runtime;
    return &runtime;
}

}  // namespace tucoll::ipc
