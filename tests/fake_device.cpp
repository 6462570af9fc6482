#include "fake_device.h"

#include <fcntl.h>
#include <mpi.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>

#include "core/errors.h"
#include "ipc/backend.h"

namespace tucoll::test::fake {
namespace {

struct Allocation {
    char *user = nullptr;   // PROT_NONE: what the program and tucoll see
    char *alias = nullptr;  // the same pages, writable: what the fake GPU's copies use
    size_t size = 0;
    uint64_t id = 0;
    Kind kind = Kind::kDevice;
    std::string name;
};

std::map<uintptr_t, Allocation> &allocations() {
    static std::map<uintptr_t, Allocation> all;
    return all;
}

const Allocation *find(const void *ptr) {
    const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
    auto &all = allocations();
    auto it = all.upper_bound(p);
    if (it == all.begin()) return nullptr;
    --it;
    return p < it->first + it->second.size ? &it->second : nullptr;
}

// Where the fake GPU reads or writes `ptr`: the writable view of a fake allocation, or host memory.
char *gpu_view(const void *ptr) {
    const Allocation *a = find(ptr);
    if (a == nullptr) return static_cast<char *>(const_cast<void *>(ptr));
    return a->alias + (static_cast<const char *>(ptr) - a->user);
}

struct FakeDescriptor {
    uint64_t pid;
    uint64_t id;  // pid and id name the allocation: the cache key
    uint64_t offset;
    uint64_t bytes;
    uint64_t size;
    char name[64];
};
constexpr size_t kKeyBytes = 2 * sizeof(uint64_t);
static_assert(sizeof(FakeDescriptor) <= sizeof(ipc::Descriptor) - sizeof(int), "descriptor too large");

struct Mapping {
    char *base = nullptr;
    size_t size = 0;
};

std::atomic<size_t> mapped{0}, ever_mapped{0};

class FakeBackend final : public ipc::Backend {
  public:
    const char *name() const override { return "fake"; }
    bool available(ipc::Refusal *why) override {
        if (!refuse) return true;
        why->refused = true;
        std::snprintf(why->reason, sizeof why->reason, "fake device told to refuse");
        return false;
    }
    int expose(void *base, int64_t bytes, ipc::Descriptor *out) override {
        const Allocation *a = find(base);
        if (a == nullptr || a->kind != Kind::kDevice) return failf(MPI_ERR_BUFFER, "fake: %p cannot be exported", base);
        FakeDescriptor d{};
        d.pid = static_cast<uint64_t>(getpid());
        d.id = a->id;
        d.offset = static_cast<uint64_t>(static_cast<char *>(base) - a->user);
        d.bytes = static_cast<uint64_t>(bytes);
        d.size = a->size;
        std::snprintf(d.name, sizeof d.name, "%s", a->name.c_str());
        std::memset(out->bytes, 0, sizeof out->bytes);
        std::memcpy(out->bytes, &d, sizeof d);
        return MPI_SUCCESS;
    }
    int open(const ipc::Descriptor &peer, uint64_t owner) override {
        bool fresh = false;
        Mapping &m = cache_.lookup(peer, kKeyBytes, owner, &fresh);
        if (!fresh && m.base != nullptr) return MPI_SUCCESS;
        const FakeDescriptor d = decode(peer);
        const int fd = shm_open(d.name, O_RDWR, 0);
        void *base = fd < 0 ? MAP_FAILED : mmap(nullptr, d.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (fd >= 0) close(fd);
        if (base == MAP_FAILED) {
            cache_.erase(peer, kKeyBytes);
            return failf(MPI_ERR_OTHER, "fake: cannot map %s", d.name);
        }
        m = Mapping{static_cast<char *>(base), d.size};
        ++mapped;
        ++ever_mapped;
        return MPI_SUCCESS;
    }
    void release(uint64_t owner) override { cache_.release(owner, kKeyBytes, unmap); }
    int put(const ipc::Descriptor &peer, int64_t offset, const void *src, int64_t bytes, ipc::Engine) override {
        const FakeDescriptor d = decode(peer);
        Mapping *m = cache_.find(peer, kKeyBytes);
        if (m == nullptr || m->base == nullptr) return failf(MPI_ERR_INTERN, "fake: put to a peer not opened");
        if (offset < 0 || static_cast<uint64_t>(offset + bytes) > d.bytes) {
            return failf(MPI_ERR_TRUNCATE, "fake: %lld bytes at %lld do not fit", static_cast<long long>(bytes),
                         static_cast<long long>(offset));
        }
        std::memcpy(m->base + d.offset + offset, gpu_view(src), static_cast<size_t>(bytes));
        return MPI_SUCCESS;
    }
    int copy_self(void *dst, const void *src, int64_t bytes, ipc::Engine) override {
        std::memmove(gpu_view(dst), gpu_view(src), static_cast<size_t>(bytes));
        return MPI_SUCCESS;
    }
    int flush() override {
        cache_.trim(kKeyBytes, unmap);
        return MPI_SUCCESS;
    }

    bool refuse = false;

  private:
    static FakeDescriptor decode(const ipc::Descriptor &peer) {
        FakeDescriptor d;
        std::memcpy(&d, peer.bytes, sizeof d);
        return d;
    }
    static void unmap(Mapping &m) {
        if (m.base == nullptr) return;
        munmap(m.base, m.size);
        m.base = nullptr;
        --mapped;
    }
    ipc::OpenedCache<Mapping> cache_{kCacheCapacity};
};

class FakeRuntime final : public ipc::DeviceRuntime {
  public:
    ipc::Memory memory_of(const void *buf) override {
        const Allocation *a = find(buf);
        if (a == nullptr) return ipc::Memory::kHost;
        return a->kind == Kind::kManaged ? ipc::Memory::kManaged : ipc::Memory::kDevice;
    }
    int copy_async(void *dst, const void *src, int64_t bytes) override {
        std::memmove(gpu_view(dst), gpu_view(src), static_cast<size_t>(bytes));
        return MPI_SUCCESS;
    }
    int synchronize() override { return MPI_SUCCESS; }
    ipc::Backend &backend() override { return backend_; }
    FakeBackend backend_;
};

// Lives as long as the process: communicators' workspaces name its backend until they are freed.
FakeRuntime &runtime() {
    static FakeRuntime *r = new FakeRuntime;
    return *r;
}

}  // namespace

void install(bool refuse) {
    runtime().backend_.refuse = refuse;
    ipc::set_device_runtime_override(&runtime());
}

void uninstall() { ipc::set_device_runtime_override(nullptr); }

namespace {
bool cpu_visible = false;
}

void set_cpu_visible(bool visible) { cpu_visible = visible; }

void *allocate(size_t bytes, Kind kind) {
    static uint64_t next = 1;
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t size = (std::max<size_t>(bytes, 1) + page - 1) / page * page;
    Allocation a;
    a.id = next++;
    a.kind = kind;
    a.size = size;
    a.name = "/tucoll-fake-" + std::to_string(getpid()) + "-" + std::to_string(a.id);
    const int fd = shm_open(a.name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0) throw std::runtime_error("fake: shm_open " + a.name);
    void *alias = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    void *user = mmap(nullptr, size, cpu_visible ? PROT_READ | PROT_WRITE : PROT_NONE, MAP_SHARED, fd, 0);
    close(fd);
    if (alias == MAP_FAILED || user == MAP_FAILED) throw std::runtime_error("fake: mmap");
    a.alias = static_cast<char *>(alias);
    a.user = static_cast<char *>(user);
    allocations()[reinterpret_cast<uintptr_t>(user)] = a;
    return user;
}

void release(void *ptr) {
    auto &all = allocations();
    auto it = all.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == all.end()) return;
    munmap(it->second.user, it->second.size);
    munmap(it->second.alias, it->second.size);
    shm_unlink(it->second.name.c_str());
    all.erase(it);
}

void upload(void *device, const void *host, size_t bytes) { std::memcpy(gpu_view(device), host, bytes); }
void download(void *host, const void *device, size_t bytes) { std::memcpy(host, gpu_view(device), bytes); }

size_t open_mappings() { return mapped.load(); }
size_t mappings_made() { return ever_mapped.load(); }

}  // namespace tucoll::test::fake
