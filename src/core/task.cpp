#include "core/task.h"

#include <cstdlib>
#include <exception>
#include <new>
#include <vector>

#include "core/errors.h"

namespace tucoll {
namespace {

// Freed frames by exact size. A program runs a handful of coroutines (one per algorithm and
// engine), so a short list of sizes, each keeping a few frames, serves every steady state.
struct FramePool {
    struct Bucket {
        size_t bytes;
        std::vector<void *> frames;
    };
    static constexpr size_t kFramesPerSize = 32;
    std::vector<Bucket> buckets;

    ~FramePool() {
        for (Bucket &b : buckets) {
            for (void *f : b.frames) std::free(f);
        }
    }
};

// One per thread, without a lock: a frame ended on another thread (a progress thread) joins that
// thread's pool.
FramePool &pool() {
    thread_local FramePool instance;
    return instance;
}

}  // namespace

void *allocate_frame(size_t bytes) {
    FramePool &p = pool();
    for (FramePool::Bucket &b : p.buckets) {
        if (b.bytes == bytes && !b.frames.empty()) {
            void *frame = b.frames.back();
            b.frames.pop_back();
            return frame;
        }
    }
    void *frame = std::malloc(bytes);
    if (frame == nullptr) throw std::bad_alloc();
    return frame;
}

void release_frame(void *frame, size_t bytes) noexcept {
    FramePool &p = pool();
    FramePool::Bucket *bucket = nullptr;
    for (FramePool::Bucket &b : p.buckets) {
        if (b.bytes == bytes) bucket = &b;
    }
    try {
        if (bucket == nullptr) {
            p.buckets.push_back({bytes, {}});
            bucket = &p.buckets.back();
        }
        if (bucket->frames.size() < FramePool::kFramesPerSize) {
            bucket->frames.push_back(frame);
            return;
        }
    } catch (...) {
        // No memory to keep it: it goes back to the system.
    }
    std::free(frame);
}

void Task::promise_type::unhandled_exception() noexcept {
    try {
        throw;
    } catch (const std::bad_alloc &) {
        rc = fail(MPI_ERR_NO_MEM, "out of memory in a collective's schedule");
    } catch (const std::exception &e) {
        rc = failf(MPI_ERR_INTERN, "internal error in a collective's schedule: %s", e.what());
    } catch (...) {
        rc = fail(MPI_ERR_INTERN, "internal error in a collective's schedule");
    }
}

namespace {
Task finished(int rc) { co_return rc; }
}  // namespace

Task Task::ready(int rc) { return finished(rc); }

}  // namespace tucoll
