// A fake GPU for testing, on machines without one, what tucoll does with device buffers: its
// memory is mapped PROT_NONE where the program sees it, so any CPU read or write of it — a
// memcpy in an algorithm, MPI handed a device pointer, MPI_Pack on it — is a SIGSEGV, not a
// silent success. Its runtime (ipc::DeviceRuntime) copies through a second, writable view of the
// same pages, and its IPC backend maps a peer's allocation by name (POSIX shared memory), as
// CUDA IPC maps a peer's allocation by handle, through the same bounded cache as the cuda backend
// (ipc/opened_cache.h), so the tests can count what is mapped.
#pragma once

#include <cstddef>

namespace tucoll::test::fake {

enum class Kind {
    kDevice,          // like cudaMalloc
    kNotExportable,   // device memory that IPC cannot export (like cudaMallocAsync pools)
    kManaged,         // like cudaMallocManaged
};

// Device memory the CPU can read and write: what a CUDA-aware MPI reaches (it copies device
// buffers itself), for testing the paths that hand device buffers to such an MPI. Set before
// allocating; the default (false) is memory the CPU cannot touch.
void set_cpu_visible(bool visible);

// Installs the fake as tucoll's device runtime (idempotent); `refuse`: its backend refuses to
// serve (as a machine where IPC is not allowed). uninstall() restores the build's.
void install(bool refuse = false);
void uninstall();

void *allocate(size_t bytes, Kind kind = Kind::kDevice);
void release(void *ptr);
// cudaMemcpy between host memory and a fake allocation (either side).
void upload(void *device, const void *host, size_t bytes);
void download(void *host, const void *device, size_t bytes);

// Peers' allocations this process has mapped now, and how many it ever mapped.
size_t open_mappings();
size_t mappings_made();
// The bound of the fake backend's cache of mappings.
constexpr size_t kCacheCapacity = 4;

}  // namespace tucoll::test::fake
