// The body of the cuda backend's copy kernel: `nthreads` threads copy `bytes` bytes from `src`
// to `dst`, thread `tid` taking every nthreads-th word. Written for any alignment, since
// alltoallv blocks sit at arbitrary displacements:
//   - the head, up to the first aligned destination word, byte by byte;
//   - the body with the widest word that source and destination share an alignment for (16, 8
//     or 4 bytes); where they share none (their addresses differ by 1, 2 or 3 mod 4), aligned
//     4-byte loads joined by a funnel shift, so that the body still moves words;
//   - the tail byte by byte.
// A funnel-shifted word reads the aligned source word holding its last byte whole, a few bytes
// past the block but never past the aligned word, so never past an allocation.
// Host and device code (the host build tests it on simulated threads: tests/test_ipc_device.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#ifdef __CUDACC__
#define TUCOLL_HD __host__ __device__
#else
#define TUCOLL_HD
#endif

namespace tucoll::ipc {

struct alignas(16) Word16 {
    uint64_t lo, hi;
};

template <class W>
TUCOLL_HD inline void copy_words(char *dst, const char *src, size_t words, unsigned tid, unsigned nthreads) {
    W *d = reinterpret_cast<W *>(dst);
    const W *s = reinterpret_cast<const W *>(src);
    for (size_t i = tid; i < words; i += nthreads) d[i] = s[i];
}

TUCOLL_HD inline uint32_t funnel_right(uint32_t lo, uint32_t hi, unsigned shift_bytes) {
#ifdef __CUDA_ARCH__
    return __funnelshift_r(lo, hi, 8 * shift_bytes);
#else
    return static_cast<uint32_t>(((static_cast<uint64_t>(hi) << 32) | lo) >> (8 * shift_bytes));
#endif
}

TUCOLL_HD inline void copy_range(char *dst, const char *src, size_t bytes, unsigned tid, unsigned nthreads) {
    const uintptr_t d = reinterpret_cast<uintptr_t>(dst), s = reinterpret_cast<uintptr_t>(src);
    const uintptr_t apart = d - s;
    const size_t word = apart % 16 == 0 ? 16 : apart % 8 == 0 ? 8 : 4;
    size_t head = (word - d % word) % word;
    if (head > bytes) head = bytes;
    for (size_t i = tid; i < head; i += nthreads) dst[i] = src[i];
    const size_t words = (bytes - head) / word;
    char *body = dst + head;
    const char *from = src + head;
    if (word == 16) {
        copy_words<Word16>(body, from, words, tid, nthreads);
    } else if (word == 8) {
        copy_words<uint64_t>(body, from, words, tid, nthreads);
    } else if (apart % 4 == 0) {
        copy_words<uint32_t>(body, from, words, tid, nthreads);
    } else {
        const unsigned shift = static_cast<unsigned>(reinterpret_cast<uintptr_t>(from) % 4);  // 1, 2 or 3
        const uint32_t *aligned = reinterpret_cast<const uint32_t *>(from - shift);
        uint32_t *out = reinterpret_cast<uint32_t *>(body);
        for (size_t i = tid; i < words; i += nthreads) out[i] = funnel_right(aligned[i], aligned[i + 1], shift);
    }
    for (size_t i = head + words * word + tid; i < bytes; i += nthreads) dst[i] = src[i];
}

}  // namespace tucoll::ipc
