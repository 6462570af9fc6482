// Which backend serves a buffer on this build, where a buffer lives, and whether MPI may see it.
#include <mpi.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "core/errors.h"
#include "ipc/backend.h"

#if !defined(TUCOLL_SIMULATION) && defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI: MPIX_Query_cuda_support
#endif
#endif

namespace tucoll::ipc {

// ipc/host.cpp on a real MPI, ipc/sim.cpp under SMPI.
Backend &platform_backend();
bool platform_models_device_link();                             // host: false
void platform_link_copy(void *dst, const void *src, int64_t bytes);  // host: a local copy
#ifdef TUCOLL_HAVE_CUDA
DeviceRuntime *cuda_runtime();  // ipc/cuda.cu: null where this process sees no GPU
#endif

namespace {
std::atomic<Backend *> override_backend{nullptr};
std::atomic<DeviceRuntime *> override_runtime{nullptr};
std::atomic<int> override_aware{-1};

DeviceRuntime *runtime() {
    if (DeviceRuntime *r = override_runtime.load()) return r;
#ifdef TUCOLL_HAVE_CUDA
    return cuda_runtime();
#else
    return nullptr;
#endif
}

bool ask_mpi_about_device_buffers() {
    if (const char *env = std::getenv("TUCOLL_MPI_CUDA_AWARE"); env != nullptr && *env != '\0') {
        return std::strcmp(env, "0") != 0;
    }
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
    return MPIX_Query_cuda_support() == 1;
#elif defined(MPIX_GPU_SUPPORT_CUDA) && !defined(TUCOLL_SIMULATION)
    int supported = 0;
    return MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &supported) == MPI_SUCCESS && supported != 0;
#else
    return false;
#endif
}
}  // namespace

void set_backend_override(Backend *backend) { override_backend.store(backend); }
void set_device_runtime_override(DeviceRuntime *r) { override_runtime.store(r); }
void set_mpi_device_aware_override(int aware) { override_aware.store(aware); }

Memory memory_of(const void *buf) {
    DeviceRuntime *r = runtime();
    return r != nullptr && buf != nullptr ? r->memory_of(buf) : Memory::kHost;
}

bool is_device_buffer(const void *buf) { return memory_of(buf) != Memory::kHost; }

bool mpi_takes_device_buffers() {
    const int forced = override_aware.load();
    if (forced >= 0) return forced != 0;
    static const bool aware = ask_mpi_about_device_buffers();
    return aware;
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
    if (is_device_buffer(dst) || is_device_buffer(src)) return runtime()->copy_async(dst, src, bytes);
    platform_link_copy(dst, src, bytes);
    return MPI_SUCCESS;
}

int finish_copies(bool device) {
    DeviceRuntime *r = device ? runtime() : nullptr;
    return r != nullptr ? r->synchronize() : MPI_SUCCESS;
}

Backend &backend_for(const void *buf) {
    if (Backend *b = override_backend.load()) return *b;
    if (memory_of(buf) == Memory::kDevice) return runtime()->backend();
    return platform_backend();
}

}  // namespace tucoll::ipc
