#include "core/task.h"

#include <cstdlib>
#include <exception>
#include <new>

#include "core/errors.h"

namespace tucoll {
// A frame is preceded by a header naming its pool, since operator delete is told only the size.
// Freed frames wait in 64-byte size classes, each class a list threaded through the frames
// themselves; a class holds at most as many frames as were ever alive at once in it. Frames above
// the largest class go to malloc and back.
namespace {
struct alignas(16) Header {
    FramePool *pool;
};
}  // namespace

FramePool::~FramePool() {
    for (Free *&head : heads_) {
        while (head != nullptr) {
            Free *next = head->next;
            std::free(reinterpret_cast<Header *>(head) - 1);
            head = next;
        }
    }
}

void *FramePool::take(size_t bytes) noexcept {
    const size_t c = (bytes + kGrain - 1) / kGrain;
    if (c < kClasses && heads_[c] != nullptr) {
        Free *frame = heads_[c];
        heads_[c] = frame->next;
        return frame;
    }
    auto *header = static_cast<Header *>(std::malloc(sizeof(Header) + (c < kClasses ? c * kGrain : bytes)));
    if (header == nullptr) return nullptr;
    header->pool = c < kClasses ? this : nullptr;
    return header + 1;
}

void FramePool::give(void *frame, size_t bytes) noexcept {
    Header *header = static_cast<Header *>(frame) - 1;
    FramePool *pool = header->pool;
    if (pool == nullptr) {
        std::free(header);
        return;
    }
    Free *f = static_cast<Free *>(frame);
    const size_t c = (bytes + kGrain - 1) / kGrain;
    f->next = pool->heads_[c];
    pool->heads_[c] = f;
}

void Task::promise_type::unhandled_exception() noexcept { rc = fail_from_exception("a collective's schedule"); }

Task Task::promise_type::get_return_object_on_allocation_failure() {
    return Task::finished(fail(MPI_ERR_NO_MEM, "no memory for a collective's schedule"));
}

}  // namespace tucoll
