// What an IPC backend opened of its peers (a CUDA IPC mapping, a verified process), keyed by the
// part of a descriptor that names the memory, bounded, and closed when no longer wanted.
//
// Process-wide (the same peer seen through two communicators is opened once); callers serialize
// access. An entry is closed (the backend's `close` is handed its value):
//   - when every communicator that used it is freed (release: its workspace names itself as the
//     owner of what it opens);
//   - when the cache holds more than its capacity, least recently used first (trim: called after a
//     flush, when nothing is in flight), except what was used since the previous trim: a call in
//     progress, another thread's perhaps, may still copy into it;
//   - when the backend finds it stale (drop_if: the CUDA backend drops a peer's old allocation
//     once the same address comes back as another one, as a program that frees and allocates
//     again does).
// The capacity is TUCOLL_IPC_CACHE entries (default 64): a mapping of a peer's allocation keeps
// that allocation alive on the GPU until it is closed, so the bound is memory, not only speed.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

namespace tucoll::ipc {

// What a rank publishes about its exposed buffer: opaque to the exchange, laid out by the
// backend, exchanged among the ranks of a node as bytes. 128 bytes hold a CUDA IPC handle (64)
// with the allocation's identity and the buffer's offset in it, or a process id, an address and
// a cookie.
struct Descriptor {
    unsigned char bytes[128];
};

inline size_t cache_capacity_from_env() {
    const char *text = std::getenv("TUCOLL_IPC_CACHE");
    const long v = text != nullptr ? std::atol(text) : 0;
    return v > 0 ? static_cast<size_t>(v) : 64;
}

template <class Opened>
class OpenedCache {
  public:
    struct Entry {
        Descriptor descriptor;        // as last published (the key is its first key_bytes bytes)
        Opened opened{};
        std::vector<uint64_t> owners;  // the communicators (their workspaces) that used it
        uint64_t used_in = 0;          // the trim period it was last used in
    };

    explicit OpenedCache(size_t capacity = cache_capacity_from_env()) : capacity_(capacity) {}

    // The entry named by the first `key_bytes` bytes of `d`, now the most recently used, with
    // `owner` among its users; *fresh when it was not there (the caller opens it, and erases it
    // if that fails).
    Opened &lookup(const Descriptor &d, size_t key_bytes, uint64_t owner, bool *fresh) {
        const std::string key = key_of(d, key_bytes);
        auto it = index_.find(key);
        *fresh = it == index_.end();
        if (*fresh) {
            ++opens_;
            lru_.push_front(Entry{d, Opened{}, {}});
            it = index_.emplace(key, lru_.begin()).first;
        } else if (it->second != lru_.begin()) {
            lru_.splice(lru_.begin(), lru_, it->second);
        }
        Entry &e = *it->second;
        e.descriptor = d;
        e.used_in = period_;
        bool known = false;
        for (uint64_t o : e.owners) known = known || o == owner;
        if (!known) e.owners.push_back(owner);
        return e.opened;
    }

    Opened *find(const Descriptor &d, size_t key_bytes) {
        const auto it = index_.find(key_of(d, key_bytes));
        if (it == index_.end()) return nullptr;
        it->second->used_in = period_;
        return &it->second->opened;
    }

    // Forgets an entry whose opening failed (nothing to close).
    void erase(const Descriptor &d, size_t key_bytes) {
        const auto it = index_.find(key_of(d, key_bytes));
        if (it == index_.end()) return;
        lru_.erase(it->second);
        index_.erase(it);
    }

    // `owner` is gone (its communicator was freed): entries no one else uses are closed.
    template <class Close>
    void release(uint64_t owner, size_t key_bytes, Close close) {
        drop_if(key_bytes, close, [owner](Entry &e) {
            for (size_t i = 0; i < e.owners.size(); ++i) {
                if (e.owners[i] == owner) {
                    e.owners.erase(e.owners.begin() + static_cast<long>(i));
                    break;
                }
            }
            return e.owners.empty();
        });
    }

    // Closes the least recently used entries beyond the capacity, but none used since the
    // previous trim; starts a new period.
    template <class Close>
    void trim(size_t key_bytes, Close close) {
        for (auto it = lru_.end(); lru_.size() > capacity_ && it != lru_.begin();) {
            --it;
            if (it->used_in == period_) continue;
            close(it->opened);
            ++closes_;
            index_.erase(key_of(it->descriptor, key_bytes));
            it = lru_.erase(it);
        }
        ++period_;
    }

    // Closes every entry for which stale(entry) holds.
    template <class Close, class Stale>
    void drop_if(size_t key_bytes, Close close, Stale stale) {
        for (auto it = lru_.begin(); it != lru_.end();) {
            if (!stale(*it)) {
                ++it;
                continue;
            }
            close(it->opened);
            ++closes_;
            index_.erase(key_of(it->descriptor, key_bytes));
            it = lru_.erase(it);
        }
    }

    size_t size() const { return lru_.size(); }
    size_t capacity() const { return capacity_; }
    uint64_t opens() const { return opens_; }
    uint64_t closes() const { return closes_; }

  private:
    static std::string key_of(const Descriptor &d, size_t key_bytes) {
        return std::string(reinterpret_cast<const char *>(d.bytes), key_bytes);
    }

    size_t capacity_;
    std::list<Entry> lru_;  // most recently used first
    std::unordered_map<std::string, typename std::list<Entry>::iterator> index_;
    uint64_t opens_ = 0, closes_ = 0;
    uint64_t period_ = 1;  // trims so far, plus one
};

}  // namespace tucoll::ipc
