// Byte buffers of the benchmark's workloads. Under SMPI with TUCOLL_SIM_SHARED_BUFFERS=1 they
// are SMPI shared allocations (one physical copy for all simulated ranks): runs at thousands of
// ranks then fit in memory, but the contents are meaningless, so such runs cannot --check. With
// TUCOLL_SIM_DEVICE_BUFFERS=1 (a GPU platform) they are declared to SMPI as device memory.
#pragma once

#include <cstddef>
#include <vector>

namespace tucoll::bench {

void *buffer_allocate(size_t bytes);
void buffer_release(void *ptr, size_t bytes);
bool buffers_shared();

template <class T>
struct BufferAllocator {
    using value_type = T;
    BufferAllocator() = default;
    template <class U>
    BufferAllocator(const BufferAllocator<U> &) {}
    T *allocate(size_t n) { return static_cast<T *>(buffer_allocate(n * sizeof(T))); }
    void deallocate(T *p, size_t n) { buffer_release(p, n * sizeof(T)); }
    template <class U>
    bool operator==(const BufferAllocator<U> &) const { return true; }
    template <class U>
    bool operator!=(const BufferAllocator<U> &) const { return false; }
};

using Bytes = std::vector<unsigned char, BufferAllocator<unsigned char>>;

}  // namespace tucoll::bench
