// ScratchBuffer: a buffer kept from call to call, grown on demand, with a count of allocations
// and a hook that makes the next ones fail (tests).
#include <algorithm>
#include <atomic>

#include "core/context.h"
#include "core/platform.h"

namespace tucoll {

namespace {
std::atomic<uint64_t> scratch_allocations{0};
std::atomic<int> failing_allocations{0};
}  // namespace

uint64_t ScratchBuffer::allocations() { return scratch_allocations.load(); }
void ScratchBuffer::fail_next_allocations(int count) { failing_allocations = count; }

ScratchBuffer::~ScratchBuffer() { platform::release(data_); }

char *ScratchBuffer::get(size_t bytes) {
    if (bytes <= capacity_ && data_ != nullptr) return data_;
    platform::release(data_);
    data_ = nullptr;
    capacity_ = 0;
    if (failing_allocations > 0 && failing_allocations-- > 0) return nullptr;
    ++scratch_allocations;
    const size_t rounded = std::max<size_t>(64, (bytes + 63) / 64 * 64);
    data_ = static_cast<char *>(platform::allocate(rounded));
    if (data_ != nullptr) capacity_ = rounded;
    return data_;
}

}  // namespace tucoll
