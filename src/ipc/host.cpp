// The host backend: Linux cross-memory attach. A rank copies its block straight into the receive
// buffer of another process of its node with process_vm_writev, one copy between address spaces
// (what Open MPI's and MPICH's shared-memory transports use for large messages), with no shared
// segment to set up. The kernel allows it where ptrace would be allowed (same user, the target
// dumpable, Yama's ptrace_scope permitting); where it refuses, the exchange falls back to messages.
//
// A descriptor names a process by its pid and proves it by a cookie: opening a peer reads the
// peer's cookie from the peer's memory and compares it with the published one, so a pid that is
// another process (ranks declared on one node that are not: TUCOLL_PPN on a real cluster) is
// never written to.
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>
#include <string>

#include "core/errors.h"
#include "ipc/backend.h"

namespace tucoll::ipc {
namespace {

struct HostDescriptor {
    uint64_t pid;
    uint64_t cookie;
    uint64_t cookie_address;  // pid, cookie and its address name the process: the cache key
    uint64_t address;
    uint64_t bytes;
};
constexpr size_t kProcessKeyBytes = 3 * sizeof(uint64_t);
static_assert(sizeof(HostDescriptor) <= sizeof(Descriptor), "descriptor too large");

// This process's cookie: random, read by peers (at its address) to check that a pid is this process.
const uint64_t *process_cookie() {
    static const uint64_t cookie = [] {
        std::random_device device;
        const uint64_t t = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
        return (static_cast<uint64_t>(device()) << 32 ^ device()) ^ t ^ static_cast<uint64_t>(getpid()) << 17;
    }();
    return &cookie;
}

class HostBackend final : public Backend {
  public:
    const char *name() const override { return "host"; }

    bool available(Refusal *why) override {
        const char *setting = std::getenv("TUCOLL_IPC_HOST");
        if (setting != nullptr && std::strcmp(setting, "off") == 0) {
            refuse(why, "TUCOLL_IPC_HOST=off");
            return false;
        }
        // Reading this process's own cookie through the system call tells whether it exists and
        // is allowed at all here (ENOSYS on old kernels, EPERM under some seccomp profiles).
        uint64_t copy = 0;
        if (read_remote(static_cast<uint64_t>(getpid()), reinterpret_cast<uint64_t>(process_cookie()), &copy,
                        sizeof copy) != 0 || copy != *process_cookie()) {
            refuse(why, std::string("process_vm_readv on this process: ") + std::strerror(errno));
            return false;
        }
        return true;
    }

    int expose(void *base, int64_t bytes, Descriptor *out) override {
        HostDescriptor d{static_cast<uint64_t>(getpid()), *process_cookie(), reinterpret_cast<uint64_t>(process_cookie()),
                         reinterpret_cast<uint64_t>(base), static_cast<uint64_t>(bytes)};
        std::memset(out->bytes, 0, sizeof out->bytes);
        std::memcpy(out->bytes, &d, sizeof d);
        return MPI_SUCCESS;
    }

    // A peer verified once is trusted from then on; one that was refused is asked again (it may
    // have become reachable: a process can change its dumpable flag).
    int open(const Descriptor &peer, uint64_t owner) override { return check(peer, owner, /*again=*/false); }
    int verify(const Descriptor &peer, uint64_t owner) override { return check(peer, owner, /*again=*/true); }
    void release(uint64_t owner) override {
        std::lock_guard<std::mutex> lock(mutex_);
        cache_.release(owner, kProcessKeyBytes, [](Opened &) {});
    }

    int put(const Descriptor &peer, int64_t offset, const void *src, int64_t bytes, Engine) override {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            const Opened *o = cache_.find(peer, kProcessKeyBytes);
            if (o == nullptr || !o->verified) return failf(MPI_ERR_INTERN, "ipc host: put to a peer not opened");
        }
        const HostDescriptor d = decode(peer);
        if (offset < 0 || bytes < 0 || static_cast<uint64_t>(offset + bytes) > d.bytes) {
            return failf(MPI_ERR_TRUNCATE, "ipc host: %lld bytes at offset %lld do not fit the %llu bytes pid %llu exposed",
                         static_cast<long long>(bytes), static_cast<long long>(offset),
                         static_cast<unsigned long long>(d.bytes), static_cast<unsigned long long>(d.pid));
        }
        const char *from = static_cast<const char *>(src);
        uint64_t to = d.address + static_cast<uint64_t>(offset);
        while (bytes > 0) {
            iovec local{const_cast<char *>(from), static_cast<size_t>(bytes)};
            iovec remote{reinterpret_cast<void *>(to), static_cast<size_t>(bytes)};
            const ssize_t done = process_vm_writev(static_cast<pid_t>(d.pid), &local, 1, &remote, 1, 0);
            if (done <= 0) {
                return failf(MPI_ERR_OTHER, "ipc host: process_vm_writev to pid %llu: %s",
                             static_cast<unsigned long long>(d.pid), done < 0 ? std::strerror(errno) : "no progress");
            }
            from += done;
            to += static_cast<uint64_t>(done);
            bytes -= done;
        }
        return MPI_SUCCESS;
    }

    // process_vm_writev has landed when it returns; what the cache holds beyond its bound is
    // forgotten (a process is verified again when it comes back).
    int flush() override {
        std::lock_guard<std::mutex> lock(mutex_);
        cache_.trim(kProcessKeyBytes, [](Opened &) {});
        return MPI_SUCCESS;
    }

  private:
    struct Opened {
        bool verified = false;
        const char *error = "";
    };

    static void refuse(Refusal *why, const std::string &reason) {
        why->refused = true;
        std::snprintf(why->reason, sizeof why->reason, "%s", reason.c_str());
    }

    static int read_remote(uint64_t pid, uint64_t address, void *out, size_t bytes) {
        errno = 0;
        iovec local{out, bytes};
        iovec remote{reinterpret_cast<void *>(address), bytes};
        const ssize_t done = process_vm_readv(static_cast<pid_t>(pid), &local, 1, &remote, 1, 0);
        return done == static_cast<ssize_t>(bytes) ? 0 : -1;
    }

    int check(const Descriptor &peer, uint64_t owner, bool again) {
        std::lock_guard<std::mutex> lock(mutex_);
        bool fresh = false;
        Opened &o = cache_.lookup(peer, kProcessKeyBytes, owner, &fresh);
        if (fresh || again || !o.verified) {
            const HostDescriptor d = decode(peer);
            uint64_t cookie = 0;
            o.verified = read_remote(d.pid, d.cookie_address, &cookie, sizeof cookie) == 0 && cookie == d.cookie;
            if (!o.verified) o.error = errno != 0 ? std::strerror(errno) : "it is another process (cookie differs)";
        }
        return o.verified ? MPI_SUCCESS : refused(peer, o);
    }

    static HostDescriptor decode(const Descriptor &peer) {
        HostDescriptor d;
        std::memcpy(&d, peer.bytes, sizeof d);
        return d;
    }

    static int refused(const Descriptor &peer, const Opened &o) {
        return failf(MPI_ERR_OTHER, "ipc host: cannot write into pid %llu: %s",
                     static_cast<unsigned long long>(decode(peer).pid), o.error);
    }

    std::mutex mutex_;  // two threads may exchange on two communicators at once
    OpenedCache<Opened> cache_;
};

}  // namespace

Backend &platform_backend() {
    static HostBackend backend;
    return backend;
}

// Host memory has no link to cross: only GPU memory (a CUDA build) makes copy_between cross one.
bool platform_models_device_link() { return false; }
void platform_link_copy(void *dst, const void *src, int64_t bytes) { local_copy(dst, src, bytes); }

}  // namespace tucoll::ipc
