#include "buffer.h"

#include <cstdlib>
#include <cstring>
#include <new>

#ifdef TUCOLL_SIMULATION
#include <mpi.h>  // SMPI: smpi_shared_malloc
#endif

namespace tucoll::bench {
namespace {

// Whether `tucoll sim` set the environment variable `name` to 1 (always false outside SMPI).
bool sim_flag(const char *name) {
#ifdef TUCOLL_SIMULATION
    const char *text = std::getenv(name);
    return text != nullptr && std::strcmp(text, "1") == 0;
#else
    (void)name;
    return false;
#endif
}

#ifdef TUCOLL_SMPI_DEVICE_MEMORY
// On a simulated GPU platform the simulated ranks are GPUs and the benchmark's buffers stand for
// their memory (`tucoll sim` sets TUCOLL_SIM_DEVICE_BUFFERS=1): they are declared to SMPI as device
// memory, whose messages cost what the platform says a GPU-aware MPI adds to them
// (sim/simgrid-patches/smpi-device-messages.patch). What the library allocates stays host memory.
bool buffers_on_device() {
    static const bool device = sim_flag("TUCOLL_SIM_DEVICE_BUFFERS");
    return device;
}
#endif

}  // namespace

bool buffers_shared() {
    static const bool shared = sim_flag("TUCOLL_SIM_SHARED_BUFFERS");
    return shared;
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
