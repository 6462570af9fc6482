// The datatypes messages travel as: bytes beyond the large-message limit (int counts), and block
// lists as hindexed types, cached per communicator within bounds.
#include <algorithm>
#include <climits>
#include <utility>

#include "core/errors.h"
#include "core/p2p.h"

namespace tucoll {
namespace {

int64_t limit = INT_MAX;

// Datatypes of block lists kept per communicator: enough for the rounds of one call at the
// radices and sizes in use, few enough that a lookup stays cheap. The cache is also bounded in
// ranges (each costs this copy plus MPI's own, some 36 bytes): a type has up to P/2 ranges and a
// call up to 2 w (r - 1) types, so without a bound the cache grew as P^2 log P per rank (2 MB per
// rank at P = 4096, radix 2) and its memory, not the exchange, limited simulations at scale.
// Larger lists are described afresh each call and freed once posted.
constexpr size_t kCachedTypes = 48;
constexpr size_t kCachedRanges = 2048;
constexpr size_t kLargestCachedType = kCachedRanges / 4;

// A datatype of exactly `bytes` bytes: `bytes / chunk` chunks followed by the remainder. The
// chunk is the large-message limit itself, so every count stays within int.
int make_byte_type(int64_t bytes, MPI_Datatype *out) {
    const int64_t chunk = limit;
    const int64_t chunks = bytes / chunk;
    const int64_t rest = bytes % chunk;
    MPI_Datatype chunk_type;
    TUCOLL_MPI(MPI_Type_contiguous(static_cast<int>(chunk), MPI_BYTE, &chunk_type));
    int lengths[2] = {static_cast<int>(chunks), static_cast<int>(rest)};
    MPI_Aint displs[2] = {0, static_cast<MPI_Aint>(chunks * chunk)};
    MPI_Datatype types[2] = {chunk_type, MPI_BYTE};
    int rc = MPI_Type_create_struct(rest > 0 ? 2 : 1, lengths, displs, types, out);
    MPI_Type_free(&chunk_type);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Type_create_struct");
    TUCOLL_MPI(MPI_Type_commit(out));
    return MPI_SUCCESS;
}

}  // namespace

namespace detail {
void set_large_message_limit(int64_t bytes) { limit = bytes > 0 && bytes <= INT_MAX ? bytes : INT_MAX; }
namespace {
int64_t int_results = INT_MAX;
}  // namespace
void set_count_limit(int64_t count) { int_results = count > 0 && count <= INT_MAX ? count : INT_MAX; }
int64_t count_limit() { return int_results; }
}  // namespace detail

int byte_type(int64_t bytes, MPI_Datatype *type, int *count) {
    if (bytes <= limit) {
        *type = MPI_BYTE;
        *count = static_cast<int>(bytes);
        return MPI_SUCCESS;
    }
    *count = 1;
    return make_byte_type(bytes, type);
}

void BlockList::clear() {
    ptrs_.clear();
    sizes_.clear();
    total_ = 0;
}

void BlockList::add(const void *ptr, int64_t bytes) {
    if (bytes <= 0) return;
    ptrs_.push_back(static_cast<const char *>(ptr));
    sizes_.push_back(bytes);
    total_ += bytes;
}

// The hindexed type over the list's ranges (cut at the large-message limit so that every length
// fits an int), from the cache when the same ranges were described recently. `*cached` false:
// the caller owns the type and frees it once posted.
int Requests::list_type(const BlockList &blocks, MPI_Datatype *type, bool *cached) {
    lengths_.clear();
    displs_.clear();
    for (size_t k = 0; k < blocks.ptrs_.size(); ++k) {
        for (int64_t done = 0; done < blocks.sizes_[k]; done += limit) {
            MPI_Aint address;
            TUCOLL_MPI(MPI_Get_address(blocks.ptrs_[k] + done, &address));
            displs_.push_back(address);
            lengths_.push_back(static_cast<int>(std::min<int64_t>(limit, blocks.sizes_[k] - done)));
        }
    }
    ++uses_;
    *cached = true;
    for (CachedType &c : types_) {
        if (c.lengths == lengths_ && c.displs == displs_) {
            c.used = uses_;
            *type = c.type;
            return MPI_SUCCESS;
        }
    }
    MPI_Datatype created;
    TUCOLL_MPI(MPI_Type_create_hindexed(static_cast<int>(lengths_.size()), lengths_.data(), displs_.data(), MPI_BYTE,
                                        &created));
    TUCOLL_MPI(MPI_Type_commit(&created));
    *type = created;
    if (lengths_.size() > kLargestCachedType) {
        *cached = false;
        return MPI_SUCCESS;
    }
    // Least recently used first out, until the new type fits both bounds. MPI keeps a freed type
    // while requests use it.
    auto ranges = [this] {
        size_t n = 0;
        for (const CachedType &c : types_) n += c.lengths.size();
        return n;
    };
    auto by_use = [](const CachedType &a, const CachedType &b) { return a.used < b.used; };
    while (!types_.empty() && (types_.size() >= kCachedTypes || ranges() + lengths_.size() > kCachedRanges)) {
        auto oldest = std::min_element(types_.begin(), types_.end(), by_use);
        MPI_Type_free(&oldest->type);
        if (oldest != types_.end() - 1) *oldest = std::move(types_.back());
        types_.pop_back();
    }
    types_.push_back({lengths_, displs_, created, uses_});
    return MPI_SUCCESS;
}

}  // namespace tucoll
