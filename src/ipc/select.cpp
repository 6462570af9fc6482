// Which backend serves a buffer on this build.
#include <atomic>

#include "ipc/backend.h"

namespace tucoll::ipc {

// ipc/host.cpp on a real MPI, ipc/sim.cpp under SMPI.
Backend &platform_backend();
bool platform_models_device_link();                             // host: false
void platform_link_copy(void *dst, const void *src, int64_t bytes);  // host: a local copy
#ifdef TUCOLL_HAVE_CUDA
bool is_device_memory(const void *buf);  // ipc/cuda.cu
Backend &cuda_backend();
int cuda_copy(void *dst, const void *src, int64_t bytes);
#endif

namespace {
std::atomic<Backend *> override_backend{nullptr};
}

void set_backend_override(Backend *backend) { override_backend.store(backend); }

bool is_device_buffer(const void *buf) {
#ifdef TUCOLL_HAVE_CUDA
    return is_device_memory(buf);
#else
    (void)buf;
    return false;
#endif
}

bool crosses_device_link(const void *sbuf, const void *rbuf) {
    return is_device_buffer(sbuf) || is_device_buffer(rbuf) || platform_models_device_link();
}

int copy_between(void *dst, const void *src, int64_t bytes, bool device) {
    if (bytes <= 0) return MPI_SUCCESS;
    if (!device) {
        local_copy(dst, src, bytes);
        return MPI_SUCCESS;
    }
#ifdef TUCOLL_HAVE_CUDA
    if (is_device_buffer(dst) || is_device_buffer(src)) return cuda_copy(dst, src, bytes);
#endif
    platform_link_copy(dst, src, bytes);
    return MPI_SUCCESS;
}

Backend &backend_for(const void *buf) {
    if (Backend *b = override_backend.load()) return *b;
#ifdef TUCOLL_HAVE_CUDA
    if (is_device_memory(buf)) return cuda_backend();
#endif
    (void)buf;
    return platform_backend();
}

}  // namespace tucoll::ipc
