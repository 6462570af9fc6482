// The sim backend: under SimGrid's SMPI every simulated rank lives in one process, so a peer's
// exposed buffer is directly addressable. A put is a memcpy (skipped when buffers are SMPI shared
// allocations, whose contents are meaningless anyway) whose time is charged to the sending rank.
//
// On a GPU platform (one whose "ipc" entry `tucoll sim` passes as TUCOLL_SIM_IPC_* and
// TUCOLL_SIM_HOST_LINK_*) it is charged as the cuda backend (ipc/cuda.cu) copies: the copy engine
// one cudaMemcpyAsync per block, each paying its latency and its bytes at the engine's bandwidth
// one after another (one stream); the copy kernel once per call, at flush(), where the cuda
// backend launches every kernel copy of the call, the self copy included, as one batch: one
// latency, then all their bytes at the kernel's bandwidth. The engines differ in both figures,
// which gives seed 002's kernel/memcpy crossover.
//
// On a CPU platform the real exchange copies by cross-memory attach (ipc/host.cpp), whose cost per
// system call has no source here yet. Until one has, a put there is still charged per block at the
// engine figures below (a GPU's, the defaults), which the CPU platforms' sweeps were simulated with.
//
// On a GPU platform the simulated ranks are GPUs, and the copies `staged` makes between their
// buffers and host memory cross the GPU's link to the host (PCIe, or NVLink to the CPU):
// charged at TUCOLL_SIM_HOST_LINK_{LAT,BW}, which `tucoll sim` sets from the platform's
// "host_link" entry; without them (CPU platforms) such copies are ordinary local copies.
#include <mpi.h>
#include <simgrid/actor.h>

#include <cstring>
#include <unordered_map>

#include "core/copy.h"
#include "core/errors.h"
#include "core/platform.h"
#include "ipc/backend.h"
#include "platform/sim_setting.h"

namespace tucoll::ipc {
namespace {

struct SimDescriptor {
    uint64_t address;
    uint64_t bytes;
};

struct CopyCost {
    double latency, bandwidth;
};

const CopyCost &cost(Engine engine) {
    // A copy kernel starts fast but moves less per second than the copy engines; cudaMemcpyAsync
    // pays a larger launch cost.
    using platform::sim_setting;
    static const CopyCost kernel{sim_setting("TUCOLL_SIM_IPC_KERNEL_LAT", 4e-6),
                                 sim_setting("TUCOLL_SIM_IPC_KERNEL_BW", 150e9)};
    static const CopyCost memcpy{sim_setting("TUCOLL_SIM_IPC_MEMCPY_LAT", 10e-6),
                                 sim_setting("TUCOLL_SIM_IPC_MEMCPY_BW", 240e9)};
    return engine == Engine::kKernel ? kernel : memcpy;
}

// The GPU's link to the host, on platforms that model one (else null).
const CopyCost *host_link() {
    static const CopyCost link{platform::sim_setting("TUCOLL_SIM_HOST_LINK_LAT", 0.0),
                               platform::sim_setting("TUCOLL_SIM_HOST_LINK_BW", 0.0)};
    return link.bandwidth > 0 ? &link : nullptr;
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
        copy(reinterpret_cast<char *>(d.address) + offset, src, bytes, engine);
        return MPI_SUCCESS;
    }

    int copy_self(void *dst, const void *src, int64_t bytes, Engine engine) override {
        if (host_link() == nullptr) return Backend::copy_self(dst, src, bytes, engine);  // a local copy
        copy(dst, src, bytes, engine);
        return MPI_SUCCESS;
    }

    int flush() override {
        const auto batch = kernel_bytes_.find(sg_actor_self_get_pid());
        if (batch != kernel_bytes_.end()) {
            const CopyCost &c = cost(Engine::kKernel);
            platform::charge_seconds(c.latency + batch->second / c.bandwidth);
            kernel_bytes_.erase(batch);
        }
        return MPI_SUCCESS;
    }

  private:
    void copy(void *dst, const void *src, int64_t bytes, Engine engine) {
        if (bytes <= 0) return;
        if (!platform::shared_buffers()) std::memcpy(dst, src, static_cast<size_t>(bytes));
        if (engine == Engine::kKernel && host_link() != nullptr) {
            kernel_bytes_[sg_actor_self_get_pid()] += static_cast<double>(bytes);  // launched at flush()
        } else {
            const CopyCost &c = cost(engine);
            platform::charge_seconds(c.latency + static_cast<double>(bytes) / c.bandwidth);
        }
    }

    // Each simulated rank's kernel copies not yet launched: the ranks share this backend, and the
    // simulation runs one at a time, so no lock.
    std::unordered_map<aid_t, double> kernel_bytes_;
};

}  // namespace

Backend &platform_backend() {
    static SimBackend backend;  // shared by the simulated ranks of the process
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
