// The two things seed 002's IPC all-to-all needs from the machine, behind one interface: "expose
// my receive buffer to the ranks of my node" and "copy my block into a peer's exposed buffer".
// The exchange itself (alltoallv/ipc.cpp) is written once over it. Implementations:
//   host  Linux cross-memory attach (process_vm_writev) between processes of a node (ipc/host.cpp)
//   sim   SimGrid's SMPI, where every rank lives in one process: memcpy, time charged at the
//         platform's intra-node copy bandwidth (ipc/sim.cpp)
//   cuda  CUDA IPC memory handles, copies by kernel or copy engine (ipc/cuda.cu, CUDA builds)
// and, in the tests, a recording mock and a fake device (tests/fake_device.h).
#pragma once

#include <cstdint>
#include <cstring>

#include "core/copy.h"
#include "ipc/opened_cache.h"

namespace tucoll::ipc {

// How a block is copied into a peer (seed 002, §III-B): by the copying processor itself (a copy
// kernel on a GPU, the CPU's memcpy on the host) or by a DMA/copy engine (cudaMemcpyAsync).
enum class Engine { kKernel, kCopyEngine };

// Why a backend cannot serve a communicator: it is then never used on it (the exchange falls back
// to messages, or to staging for device memory and an MPI that does not take it) and the reason
// is logged once.
struct Refusal {
    bool refused = false;
    char reason[200] = {};
};

class Backend {
  public:
    virtual ~Backend() = default;
    virtual const char *name() const = 0;
    // Whether this rank can expose a buffer and copy into its node's ranks at all (the host
    // backend asks the kernel: ptrace policy, seccomp). Local; the exchange agrees on it once per
    // communicator.
    virtual bool available(Refusal *why) = 0;
    // Describes [base, base + bytes) so that the ranks of this node can copy into it. It may fail
    // for some memory (CUDA: pool allocations, cuMemCreate): the exchange then publishes an
    // invalid descriptor and its node serves this rank otherwise.
    virtual int expose(void *base, int64_t bytes, Descriptor *out) = 0;
    // Opens what a peer published, before the first put to it, on behalf of `owner` (a
    // communicator's workspace: what it opened is closed when it is released). The backend
    // caches what it opens (ipc/opened_cache.h: CUDA handles once per allocation, bounded). A
    // peer that cannot be opened fails: not the process it claims to be, or one the kernel does
    // not let this one write to.
    virtual int open(const Descriptor &peer, uint64_t owner) = 0;
    // As open, but asks again rather than trusting what it cached: the exchange calls it once
    // per communicator to agree on whether the backend can serve it.
    virtual int verify(const Descriptor &peer, uint64_t owner) { return open(peer, owner); }
    // `owner`'s communicator is freed: what no other communicator uses is closed.
    virtual void release(uint64_t owner) { (void)owner; }
    // Copies `bytes` bytes from `src` to `offset` bytes into what `peer` exposed (opened before).
    virtual int put(const Descriptor &peer, int64_t offset, const void *src, int64_t bytes, Engine engine) = 0;
    // Copies this rank's block to itself with `engine` (device memory needs the GPU's copy).
    virtual int copy_self(void *dst, const void *src, int64_t bytes, Engine engine) {
        (void)engine;
        local_copy(dst, src, bytes);
        return 0;
    }
    // Waits until every put issued so far has landed (stream synchronisation on a GPU).
    virtual int flush() = 0;
};

// Where a buffer lives, as far as who may touch it goes.
enum class Memory {
    kHost,     // the CPU reads and writes it (pageable, pinned or registered host memory)
    kDevice,   // GPU memory: only the GPU's copies touch it
    kManaged,  // CUDA managed memory: served as device memory, staged by the runtime's copies.
               // The CPU may touch it, but a GPU-resident page then migrates one fault at a time,
               // and CUDA IPC cannot export it.
};

// A GPU runtime as tucoll sees it: what memory a pointer is, copies across the GPU's link, and
// the IPC backend of its memory. The CUDA build's (ipc/cuda.cu) when this process sees a GPU;
// tests install a fake one (tests/fake_device.h) whose device memory the CPU cannot touch.
class DeviceRuntime {
  public:
    virtual ~DeviceRuntime() = default;
    virtual Memory memory_of(const void *buf) = 0;
    // Starts a copy of `bytes` bytes between any two of host, device and managed memory, on
    // tucoll's own stream (not ordered after the program's work: see USER_GUIDE, "GPU buffers").
    virtual int copy_async(void *dst, const void *src, int64_t bytes) = 0;
    // Waits until every copy started has landed.
    virtual int synchronize() = 0;
    virtual Backend &backend() = 0;
};

// The backend for buffers at `buf` on this build: the device runtime's for device memory, else
// sim under SMPI, else host. Never null.
Backend &backend_for(const void *buf);

// Where `buf` lives (always host memory without a device runtime).
Memory memory_of(const void *buf);

// Whether `buf` is memory the CPU must not touch (device or managed memory): the exchanges that
// can serve it are then the only ones allowed.
bool is_device_buffer(const void *buf);

// Whether the MPI library takes GPU buffers in its calls (a CUDA-aware MPI). Open MPI and MPICH
// are asked (MPIX_Query_cuda_support, MPIX_GPU_query_support); TUCOLL_MPI_CUDA_AWARE=1 or 0
// overrides the answer for an MPI that does not say (Cray MPICH with MPICH_GPU_SUPPORT_ENABLED).
// Without one, nothing on a device buffer is handed to MPI.
bool mpi_takes_device_buffers();

// Whether copies between these buffers and host memory cross a GPU's link to the host: they are
// GPU memory (is_device_buffer), or, under SMPI, the simulated platform models its ranks as GPUs
// (`tucoll sim` on a platform with a "host_link" cost sets TUCOLL_SIM_HOST_LINK_{LAT,BW}).
// Asked once per call, not per block; copy_between then asks which side is the device's once
// per copy (a copy of a run of blocks, see staged).
bool crosses_device_link(const void *sbuf, const void *rbuf);

// Copies `bytes` bytes between host memory and memory on the far side of a GPU's link when
// `device` (crosses_device_link): started on the device runtime's stream in a CUDA build (landed
// after finish_copies), a charged copy under SMPI; a plain local copy otherwise. MPI_SUCCESS or
// an error with a message.
int copy_between(void *dst, const void *src, int64_t bytes, bool device);
// Waits until the copies copy_between started have landed.
int finish_copies(bool device);

// Tests replace the backend (a recording mock), the device runtime (a fake device) and the MPI's
// answer on device buffers (-1: ask it); nullptr restores the build's.
void set_backend_override(Backend *backend);
void set_device_runtime_override(DeviceRuntime *runtime);
void set_mpi_device_aware_override(int aware);

// The engine for a block of `bytes` bytes (seed 002: a kernel below memcpy_threshold, the copy
// engine from there on; `copy` fixes one of them or, hybrid, switches by size).
enum class CopyMode { kKernel = 0, kMemcpy = 1, kHybrid = 2 };
inline Engine engine_for(int64_t bytes, CopyMode mode, int64_t memcpy_threshold) {
    if (mode == CopyMode::kKernel) return Engine::kKernel;
    if (mode == CopyMode::kMemcpy) return Engine::kCopyEngine;
    return bytes < memcpy_threshold ? Engine::kKernel : Engine::kCopyEngine;
}

// The order in which a rank writes into the ranks of its node: itself, then local+1, local+2, ...
// (seed 002, §III-A): at any moment each receiver is written by one sender.
inline int peer_at(int local_rank, int local_size, int step) { return (local_rank + step) % local_size; }

}  // namespace tucoll::ipc
