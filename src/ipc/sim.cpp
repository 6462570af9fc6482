// The sim backend: under SimGrid's SMPI every simulated rank lives in one process, so a peer's
// exposed buffer is directly addressable. A put is a memcpy (skipped when buffers are SMPI shared
// allocations, whose contents are meaningless anyway) and its time is charged to the sending rank
// as the platform's intra-node GPU copy costs it: latency + bytes / bandwidth, per engine
// (a copy kernel and the copy engine differ in both; seed 002's crossover comes from that).
// `tucoll sim` sets the four figures from the platform file (TUCOLL_SIM_IPC_*); the defaults are
// those of thetagpu-like (sim/platforms/thetagpu-like.xml says where they come from).
//
// On a GPU platform the simulated ranks are GPUs, and the copies `staged` makes between their
// buffers and host memory cross the GPU's link to the host (PCIe, or NVLink to the CPU):
// charged at TUCOLL_SIM_HOST_LINK_{LAT,BW}, which `tucoll sim` sets from the platform's
// "host_link" entry; without them (CPU platforms) such copies are ordinary local copies.
#include <mpi.h>

#include <cstdlib>
#include <cstring>

#include "core/copy.h"
#include "core/errors.h"
#include "core/platform.h"
#include "ipc/backend.h"

namespace tucoll::ipc {
namespace {

struct SimDescriptor {
    uint64_t address;
    uint64_t bytes;
};

double env_or(const char *name, double fallback) {
    const char *text = std::getenv(name);
    const double v = text != nullptr ? std::atof(text) : 0.0;
    return v > 0 ? v : fallback;
}

struct CopyCost {
    double latency, bandwidth;
};

const CopyCost &cost(Engine engine) {
    // A copy kernel starts fast but moves less per second than the copy engines; cudaMemcpyAsync
    // pays a larger launch cost.
    static const CopyCost kernel{env_or("TUCOLL_SIM_IPC_KERNEL_LAT", 4e-6), env_or("TUCOLL_SIM_IPC_KERNEL_BW", 150e9)};
    static const CopyCost memcpy{env_or("TUCOLL_SIM_IPC_MEMCPY_LAT", 10e-6), env_or("TUCOLL_SIM_IPC_MEMCPY_BW", 240e9)};
    return engine == Engine::kKernel ? kernel : memcpy;
}

class SimBackend final : public Backend {
  public:
    const char *name() const override { return "sim"; }
    bool available(Refusal *) override { return true; }

    int expose(void *base, int64_t bytes, Descriptor *out) override {
        const SimDescriptor d{reinterpret_cast<uint64_t>(base), static_cast<uint64_t>(bytes)};
        std::memset(out->bytes, 0, sizeof out->bytes);
        std::memcpy(out->bytes, &d, sizeof d);
        return MPI_SUCCESS;
    }

    int open(const Descriptor &, uint64_t) override { return MPI_SUCCESS; }  // one address space

    int put(const Descriptor &peer, int64_t offset, const void *src, int64_t bytes, Engine engine) override {
        SimDescriptor d;
        std::memcpy(&d, peer.bytes, sizeof d);
        if (offset < 0 || bytes < 0 || static_cast<uint64_t>(offset + bytes) > d.bytes) {
            return failf(MPI_ERR_TRUNCATE, "ipc sim: %lld bytes at offset %lld do not fit the %llu bytes exposed",
                         static_cast<long long>(bytes), static_cast<long long>(offset),
                         static_cast<unsigned long long>(d.bytes));
        }
        if (bytes == 0) return MPI_SUCCESS;
        if (!platform::shared_buffers()) std::memcpy(reinterpret_cast<char *>(d.address) + offset, src, static_cast<size_t>(bytes));
        const CopyCost &c = cost(engine);
        platform::charge_seconds(c.latency + static_cast<double>(bytes) / c.bandwidth);
        return MPI_SUCCESS;
    }

    int flush() override { return MPI_SUCCESS; }  // each put was charged as it was made
};

// The GPU's link to the host, on platforms that model one (else null).
const CopyCost *host_link() {
    static const CopyCost link{env_or("TUCOLL_SIM_HOST_LINK_LAT", 0.0), env_or("TUCOLL_SIM_HOST_LINK_BW", 0.0)};
    return link.bandwidth > 0 ? &link : nullptr;
}

}  // namespace

Backend &platform_backend() {
    static SimBackend backend;  // stateless: shared by the simulated ranks of the process
    return backend;
}

bool platform_models_device_link() { return host_link() != nullptr; }

void platform_link_copy(void *dst, const void *src, int64_t bytes) {
    const CopyCost *link = host_link();
    if (link == nullptr) return local_copy(dst, src, bytes);
    if (!platform::shared_buffers()) std::memcpy(dst, src, static_cast<size_t>(bytes));
    platform::charge_seconds(link->latency + static_cast<double>(bytes) / link->bandwidth);
}

}  // namespace tucoll::ipc
