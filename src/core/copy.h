// Local memory copies made inside algorithms. Every algorithm copies through these functions, so
// that the simulated build charges their cost in one place (core/platform.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/platform.h"

namespace tucoll {

inline void local_copy(void *dst, const void *src, int64_t bytes) {
    if (bytes > 0 && dst != src) {
        std::memcpy(dst, src, static_cast<size_t>(bytes));
        platform::charge_copy(bytes);
    }
}

// Rotates `bytes` bytes at `buf` right by `shift` bytes, in place (std::rotate: no buffer).
inline void local_rotate(char *buf, int64_t bytes, int64_t shift) {
    if (bytes <= 0 || shift % bytes == 0) return;
    std::rotate(buf, buf + (bytes - shift % bytes), buf + bytes);
    platform::charge_copy(bytes);  // every byte moves once
}

}  // namespace tucoll
