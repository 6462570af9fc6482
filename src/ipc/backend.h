// The two things seed 002's IPC all-to-all needs from the machine, behind one interface: "expose
// my receive buffer to the ranks of my node" and "copy my block into a peer's exposed buffer".
// The exchange itself (alltoallv/ipc.cpp) is written once over it. Implementations:
//   host  Linux cross-memory attach (process_vm_writev) between processes of a node (ipc/host.cpp)
//   sim   SimGrid's SMPI, where every rank lives in one process: memcpy, time charged at the
//         platform's intra-node copy bandwidth (ipc/sim.cpp)
//   cuda  CUDA IPC memory handles, copies by kernel or copy engine (ipc/cuda.cu, CUDA builds)
// and a recording mock in the tests.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/copy.h"

namespace tucoll::ipc {

// What a rank publishes about its exposed buffer: opaque to the exchange, laid out by the
// backend, exchanged among the ranks of a node as bytes. 96 bytes hold a CUDA IPC handle (64)
// with the buffer's offset in its allocation, or a process id, an address and a cookie.
struct Descriptor {
    unsigned char bytes[96];
};

// How a block is copied into a peer (seed 002, §III-B): by the copying processor itself (a copy
// kernel on a GPU, the CPU's memcpy on the host) or by a DMA/copy engine (cudaMemcpyAsync).
enum class Engine { kKernel, kCopyEngine };

// Why a backend cannot serve a communicator: it is then never used on it (the exchange falls back
// to messages) and the reason is logged once.
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
    // Describes [base, base + bytes) so that the ranks of this node can copy into it.
    virtual int expose(void *base, int64_t bytes, Descriptor *out) = 0;
    // Opens what a peer published, before the first put to it (the backend caches what it opens:
    // CUDA handles once per allocation). A peer that cannot be opened fails: not the process it
    // claims to be, or one the kernel does not let this one write to.
    virtual int open(const Descriptor &peer) = 0;
    // As open, but asks again rather than trusting what it cached: the exchange calls it once
    // per communicator to agree on whether the backend can serve it.
    virtual int verify(const Descriptor &peer) { return open(peer); }
    // Copies `bytes` bytes from `src` to `offset` bytes into what `peer` exposed (opened before).
    virtual int put(const Descriptor &peer, int64_t offset, const void *src, int64_t bytes, Engine engine) = 0;
    // Copies this rank's block to itself (device memory needs the GPU's copy).
    virtual int copy_self(void *dst, const void *src, int64_t bytes) {
        local_copy(dst, src, bytes);
        return 0;
    }
    // Waits until every put issued so far has landed (stream synchronisation on a GPU).
    virtual int flush() = 0;
};

// The backend for buffers at `buf` on this build: cuda for device memory in a CUDA build, else
// sim under SMPI, else host. Never null.
Backend &backend_for(const void *buf);

// Whether `buf` is GPU memory (always false without CUDA): the exchanges that can serve it are
// then the only ones allowed.
bool is_device_buffer(const void *buf);

// Whether copies between these buffers and host memory cross a GPU's link to the host: they are
// GPU memory (is_device_buffer), or, under SMPI, the simulated platform models its ranks as GPUs
// (`tucoll sim` on a platform with a "host_link" cost sets TUCOLL_SIM_HOST_LINK_{LAT,BW}).
// Asked once per call, not per block; copy_between then asks which side is the device's once
// per copy (a copy of a run of blocks, see staged).
bool crosses_device_link(const void *sbuf, const void *rbuf);

// Copies `bytes` bytes between host memory and memory on the far side of a GPU's link when
// `device` (crosses_device_link: cudaMemcpy in a CUDA build, a charged copy under SMPI),
// synchronously; a plain local copy otherwise. MPI_SUCCESS or an error with a message.
int copy_between(void *dst, const void *src, int64_t bytes, bool device);

// Tests replace the backend (a recording mock); nullptr restores the build's.
void set_backend_override(Backend *backend);

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

// What a backend opened, keyed by the part of a descriptor that names the memory: the host
// backend keys by process (pid, cookie), checked once per process; the CUDA backend by process
// and allocation handle, not by the buffer's offset in it, so cudaIpcOpenMemHandle runs once per
// allocation a peer receives into, and the mapping is kept for the next call. Process-wide (the
// same peer seen through two communicators is opened once); callers serialize access.
template <class Opened>
class OpenedCache {
  public:
    // The entry named by the first `key_bytes` bytes of `d`; *fresh when it was not there (the
    // caller opens it).
    Opened &lookup(const Descriptor &d, size_t key_bytes, bool *fresh) {
        if (Opened *o = find(d, key_bytes)) {
            *fresh = false;
            return *o;
        }
        *fresh = true;
        ++opens_;
        entries_.push_back(Entry{d, key_bytes, Opened{}});
        return entries_.back().opened;
    }
    Opened *find(const Descriptor &d, size_t key_bytes) {
        for (Entry &e : entries_) {
            if (e.key_bytes == key_bytes && std::memcmp(e.key.bytes, d.bytes, key_bytes) == 0) return &e.opened;
        }
        return nullptr;
    }
    uint64_t opens() const { return opens_; }

  private:
    struct Entry {
        Descriptor key;
        size_t key_bytes;
        Opened opened;
    };
    std::vector<Entry> entries_;
    uint64_t opens_ = 0;
};

}  // namespace tucoll::ipc
