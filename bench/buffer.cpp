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

void *buffer_allocate(size_t bytes) {
#ifdef TUCOLL_SIMULATION
    if (buffers_shared()) return SMPI_SHARED_MALLOC(bytes > 0 ? bytes : 1);
#endif
    void *p = std::malloc(bytes > 0 ? bytes : 1);
    if (p == nullptr) throw std::bad_alloc();
    return p;
}

void buffer_release(void *ptr, size_t) {
#ifdef TUCOLL_SIMULATION
    if (buffers_shared()) {
        SMPI_SHARED_FREE(ptr);
        return;
    }
#endif
    std::free(ptr);
}

}  // namespace tucoll::bench
