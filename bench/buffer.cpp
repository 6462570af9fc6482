#include "buffer.h"

#include <cstdlib>
#include <cstring>
#include <new>

#ifdef TUCOLL_SIMULATION
#include <mpi.h>  // SMPI: smpi_shared_malloc
#endif

namespace tucoll::bench {

bool buffers_shared() {
#ifdef TUCOLL_SIMULATION
    static const bool shared = [] {
        const char *text = std::getenv("TUCOLL_SIM_SHARED_BUFFERS");
        return text != nullptr && std::strcmp(text, "1") == 0;
    }();
    return shared;
#else
    return false;
#endif
}

// On a simulated GPU platform the simulated ranks are GPUs and the benchmark's buffers stand for
// their memory (`tucoll sim` sets TUCOLL_SIM_DEVICE_BUFFERS=1): they are declared to SMPI as device
// memory, whose messages cost what the platform says a GPU-aware MPI adds to them
// (sim/simgrid-patches/smpi-device-messages.patch). What the library allocates stays host memory.
bool buffers_on_device() {
#ifdef TUCOLL_SIMULATION
    static const bool device = [] {
        const char *text = std::getenv("TUCOLL_SIM_DEVICE_BUFFERS");
        return text != nullptr && std::strcmp(text, "1") == 0;
    }();
    return device;
#else
    return false;
#endif
}

void *buffer_allocate(size_t bytes) {
    void *p = nullptr;
#ifdef TUCOLL_SIMULATION
    if (buffers_shared()) p = SMPI_SHARED_MALLOC(bytes > 0 ? bytes : 1);
#endif
    if (p == nullptr) p = std::malloc(bytes > 0 ? bytes : 1);
    if (p == nullptr) throw std::bad_alloc();
#ifdef TUCOLL_SMPI_DEVICE_MEMORY
    if (buffers_on_device()) smpi_device_memory_add(p, bytes);
#endif
    return p;
}

void buffer_release(void *ptr, size_t) {
#ifdef TUCOLL_SMPI_DEVICE_MEMORY
    if (buffers_on_device()) smpi_device_memory_remove(ptr);
#endif
#ifdef TUCOLL_SIMULATION
    if (buffers_shared()) {
        SMPI_SHARED_FREE(ptr);
        return;
    }
#endif
    std::free(ptr);
}

}  // namespace tucoll::bench
