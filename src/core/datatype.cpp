#include "core/datatype.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <mutex>

#include "core/errors.h"
#include "core/platform.h"

namespace tucoll {

int OwnedTypes::own(MPI_Datatype *type) {
    for (const auto &[theirs, ours] : types_) {
        if (theirs == *type || ours == *type) {
            *type = ours;
            return MPI_SUCCESS;
        }
    }
    int integers = 0, addresses = 0, datatypes = 0, combiner = MPI_COMBINER_NAMED;
    TUCOLL_MPI(MPI_Type_get_envelope(*type, &integers, &addresses, &datatypes, &combiner));
    if (combiner == MPI_COMBINER_NAMED) return MPI_SUCCESS;
    MPI_Datatype copy = MPI_DATATYPE_NULL;
    TUCOLL_MPI(MPI_Type_dup(*type, &copy));
    try {
        types_.emplace_back(*type, copy);
    } catch (...) {
        MPI_Type_free(&copy);
        return fail(MPI_ERR_NO_MEM, "no memory to keep a datatype");
    }
    *type = copy;
    return MPI_SUCCESS;
}

void OwnedTypes::release() {
    if (types_.empty()) return;  // the usual case: every completed nonblocking call comes here
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
        for (auto &entry : types_) MPI_Type_free(&entry.second);
    }
    types_.clear();
}

namespace {

// Elements per MPI_Pack/MPI_Unpack call, so that every packed piece fits an int byte count.
int64_t elements_per_piece(const TypeInfo &info) {
    return std::max<int64_t>(1, INT_MAX / std::max<int64_t>(1, info.size));
}

// How `type`'s data lie. kInOrder when it is a duplicate, contiguous repetition or resizing of a
// type that is named or so built, each repeated type's extent at least its true extent: its data
// then lie in type-map order in memory order (gaps, if any, are caught by the caller's
// size/extent test). A repetition of a type resized below its true extent interleaves its copies
// (a transpose: resized to 4 bytes, two copies of ints at 0 and 8 lie at 0, 8, 4, 12); every other
// constructor may permute or interleave (an indexed type with displacements {1, 0}). Both kOther.
enum class Order { kNamed, kInOrder, kOther };

// The one datatype that a type built by a one-type constructor (dup, contiguous, resized) is
// built from, with the constructor and a contiguous type's count. MPI_Type_get_contents hands
// out new handles of derived types: this one is freed at the end of its scope.
struct InnerType {
    int combiner = MPI_UNDEFINED;  // until read: a failed read is not taken for a named type
    int count = 0;                 // MPI_COMBINER_CONTIGUOUS's repetitions
    MPI_Datatype type = MPI_DATATYPE_NULL;
    bool derived = false;
    InnerType() = default;
    InnerType(const InnerType &) = delete;
    InnerType &operator=(const InnerType &) = delete;
    ~InnerType() {
        if (derived) MPI_Type_free(&type);
    }
    // Reads `outer`'s constructor; true with `type` set when it takes one datatype and at most
    // 1 integer and 2 addresses, as dup, contiguous and resized do (so does an empty hindexed
    // type: callers tell them apart by `combiner`). Sets no error message: callers say what
    // they needed.
    bool read(MPI_Datatype outer) {
        int ni = 0, na = 0, nd = 0;
        if (MPI_Type_get_envelope(outer, &ni, &na, &nd, &combiner) != MPI_SUCCESS) return false;
        if (combiner == MPI_COMBINER_NAMED || ni > 1 || na > 2 || nd != 1) return false;
        int ints[1] = {0};
        MPI_Aint addresses[2];
        if (MPI_Type_get_contents(outer, ni, na, nd, ints, addresses, &type) != MPI_SUCCESS) return false;
        count = ints[0];
        int ni2 = 0, na2 = 0, nd2 = 0, inner_combiner = MPI_COMBINER_NAMED;
        derived = MPI_Type_get_envelope(type, &ni2, &na2, &nd2, &inner_combiner) != MPI_SUCCESS ||
                  inner_combiner != MPI_COMBINER_NAMED;
        return true;
    }
};

Order order_of(MPI_Datatype type, int depth) {
    InnerType inner;
    if (!inner.read(type)) return inner.combiner == MPI_COMBINER_NAMED ? Order::kNamed : Order::kOther;
    const bool order_preserving = inner.combiner == MPI_COMBINER_DUP ||
                                  inner.combiner == MPI_COMBINER_CONTIGUOUS || inner.combiner == MPI_COMBINER_RESIZED;
    if (!order_preserving || depth > 32) return Order::kOther;
    const Order inner_order = order_of(inner.type, depth + 1);
    if (inner_order == Order::kOther) return Order::kOther;
    if (inner.combiner == MPI_COMBINER_CONTIGUOUS && inner.count > 1) {
        MPI_Count lb = 0, extent = 0, true_lb = 0, true_extent = 0;
        if (MPI_Type_get_extent_x(inner.type, &lb, &extent) != MPI_SUCCESS ||
            MPI_Type_get_true_extent_x(inner.type, &true_lb, &true_extent) != MPI_SUCCESS || extent < true_extent) {
            return Order::kOther;
        }
    }
    return Order::kInOrder;
}

// MPI_BOTTOM is a null pointer in MPICH, whose MPI_Pack/MPI_Unpack reject a null buffer even
// when the datatype holds absolute addresses (MPICH 4.0 and 5.0). A piece that starts at address
// 0 is therefore described from a non-null anchor: one element of a type displaced by -anchor.
char null_anchor;

struct FromAnchor {
    MPI_Datatype type = MPI_DATATYPE_NULL;
    ~FromAnchor() {
        if (type != MPI_DATATYPE_NULL) MPI_Type_free(&type);
    }
    // Sets *buf, *count and *piece_type so that they describe `elems` elements of `type` at `at`.
    int describe(const void *at, int64_t elems, MPI_Datatype type_in, void **buf, int *count,
                 MPI_Datatype *piece_type) {
        *buf = const_cast<void *>(at);
        *count = static_cast<int>(elems);
        *piece_type = type_in;
        if (at != nullptr) return MPI_SUCCESS;
        const int length = static_cast<int>(elems);
        const MPI_Aint displacement = MPI_Aint_diff(0, reinterpret_cast<MPI_Aint>(&null_anchor));
        TUCOLL_MPI(MPI_Type_create_hindexed(1, &length, &displacement, type_in, &type));
        TUCOLL_MPI(MPI_Type_commit(&type));
        *buf = &null_anchor;
        *count = 1;
        *piece_type = type;
        return MPI_SUCCESS;
    }
};

// An element of more than INT_MAX bytes is more than one MPI_Pack or MPI_Unpack call takes. A
// contiguous repetition (MPI_Alltoall's block type beyond int displacements: alltoall/api.cpp) is
// handled as its inner type's elements, k per element; any other such type is refused.
struct InnerElements {
    InnerType inner;
    TypeInfo info;
    std::vector<int64_t> counts, displs;
};

template <class I>
int inner_elements(MPI_Datatype type, const TypeInfo &info, int n, const I counts[], const I displs[],
                   InnerElements *elements) {
    InnerType &inner = elements->inner;
    if (!inner.read(type) || inner.combiner != MPI_COMBINER_CONTIGUOUS) {
        return failf(MPI_ERR_COUNT, "an element of %lld bytes of a non-contiguous datatype is more than MPI_Pack "
                     "takes at once (2^31 - 1 bytes)", static_cast<long long>(info.size));
    }
    TUCOLL_TRY(TypeInfo::query(inner.type, &elements->info));
    const int64_t k = inner.count;
    elements->counts.resize(n);
    elements->displs.resize(n);
    for (int i = 0; i < n; ++i) {  // element e of `type` is inner elements e k .. e k + k - 1
        elements->counts[i] = static_cast<int64_t>(counts[i]) * k;
        elements->displs[i] = static_cast<int64_t>(displs[i]) * k;
    }
    return MPI_SUCCESS;
}

template <class I>
int pack(const void *buf, MPI_Datatype type, const TypeInfo &info, int n, const I counts[], const I displs[],
         char *out, const int64_t offsets[], MPI_Comm comm) {
    if (info.size > INT_MAX) {
        InnerElements elements;
        TUCOLL_TRY(inner_elements(type, info, n, counts, displs, &elements));
        return pack(buf, elements.inner.type, elements.info, n, elements.counts.data(), elements.displs.data(), out,
                    offsets, comm);
    }
    const int64_t piece = elements_per_piece(info);
    for (int i = 0; i < n; ++i) {
        const char *src = static_cast<const char *>(buf) + static_cast<int64_t>(displs[i]) * info.extent;
        char *dst = out + offsets[i];
        for (int64_t done = 0; done < static_cast<int64_t>(counts[i]); done += piece) {
            const int64_t elems = std::min<int64_t>(piece, static_cast<int64_t>(counts[i]) - done);
            int position = 0;
            const int bytes = static_cast<int>(elems * info.size);
            FromAnchor anchored;
            void *at = nullptr;
            int count = 0;
            MPI_Datatype piece_type = MPI_DATATYPE_NULL;
            TUCOLL_TRY(anchored.describe(src + done * info.extent, elems, type, &at, &count, &piece_type));
            TUCOLL_MPI(MPI_Pack(at, count, piece_type, dst, bytes, &position, comm));
            if (position != bytes) {
                return failf(MPI_ERR_TYPE, "MPI_Pack produced %d bytes for %d bytes of data; tucoll needs "
                             "a homogeneous MPI whose packed form is the raw data", position, bytes);
            }
            dst += bytes;
            platform::charge_copy(bytes);
        }
    }
    return MPI_SUCCESS;
}

template <class I>
int unpack(const char *in, const int64_t offsets[], void *buf, MPI_Datatype type, const TypeInfo &info, int n,
           const I counts[], const I displs[], MPI_Comm comm) {
    if (info.size > INT_MAX) {
        InnerElements elements;
        TUCOLL_TRY(inner_elements(type, info, n, counts, displs, &elements));
        return unpack(in, offsets, buf, elements.inner.type, elements.info, n, elements.counts.data(),
                      elements.displs.data(), comm);
    }
    const int64_t piece = elements_per_piece(info);
    for (int i = 0; i < n; ++i) {
        char *dst = static_cast<char *>(buf) + static_cast<int64_t>(displs[i]) * info.extent;
        const char *src = in + offsets[i];
        for (int64_t done = 0; done < static_cast<int64_t>(counts[i]); done += piece) {
            const int64_t elems = std::min<int64_t>(piece, static_cast<int64_t>(counts[i]) - done);
            int position = 0;
            const int bytes = static_cast<int>(elems * info.size);
            FromAnchor anchored;
            void *at = nullptr;
            int count = 0;
            MPI_Datatype piece_type = MPI_DATATYPE_NULL;
            TUCOLL_TRY(anchored.describe(dst + done * info.extent, elems, type, &at, &count, &piece_type));
            TUCOLL_MPI(MPI_Unpack(src, bytes, &position, at, count, piece_type, comm));
            src += bytes;
            platform::charge_copy(bytes);
        }
    }
    return MPI_SUCCESS;
}

}  // namespace

namespace {

// What MPI says of a named datatype holds for the whole run (named types are never freed and
// their handles never reused), so the few a program passes are kept: a call with them spares
// the five MPI queries below, which cost more than a small exchange's own work. Derived types
// are asked every time: a freed one's handle may come back describing another layout.
class NamedTypes {
public:
    bool find(MPI_Datatype type, TypeInfo *out) const {
        const int n = used_.load(std::memory_order_acquire);
        for (int i = 0; i < n; ++i) {
            if (slots_[i].type == type) {
                *out = slots_[i].info;
                return true;
            }
        }
        return false;
    }
    void add(MPI_Datatype type, const TypeInfo &info) {
        std::lock_guard<std::mutex> lock(mutex_);
        TypeInfo known;
        const int n = used_.load(std::memory_order_relaxed);
        if (n == kSlots || find(type, &known)) return;
        slots_[n] = {type, info};
        used_.store(n + 1, std::memory_order_release);  // the slot is written before it is seen
    }

private:
    static constexpr int kSlots = 16;
    struct Slot {
        MPI_Datatype type = MPI_DATATYPE_NULL;
        TypeInfo info;
    };
    Slot slots_[kSlots];
    std::atomic<int> used_{0};
    std::mutex mutex_;
};

NamedTypes named_types;

}  // namespace

int TypeInfo::query(MPI_Datatype type, TypeInfo *out) {
    if (type == MPI_DATATYPE_NULL) return fail(MPI_ERR_TYPE, "datatype is MPI_DATATYPE_NULL");
    if (named_types.find(type, out)) return MPI_SUCCESS;
    MPI_Count size = 0, lb = 0, extent = 0, true_lb = 0, true_extent = 0;
    if (MPI_Type_size_x(type, &size) != MPI_SUCCESS || MPI_Type_get_extent_x(type, &lb, &extent) != MPI_SUCCESS ||
        MPI_Type_get_true_extent_x(type, &true_lb, &true_extent) != MPI_SUCCESS) {
        return fail(MPI_ERR_TYPE, "invalid datatype");
    }
    if (size == MPI_UNDEFINED || extent == MPI_UNDEFINED) {
        return fail(MPI_ERR_TYPE, "datatype size does not fit MPI_Count");
    }
    out->size = size;
    out->extent = extent;
    out->true_lb = true_lb;
    out->true_extent = true_extent;
    // The envelope that tells the order also tells a named type, which is then kept (one with
    // gaps, such as MPI_SHORT_INT, is asked again next time).
    const Order order = size != 0 && size == extent && size == true_extent ? order_of(type, 0) : Order::kOther;
    out->contiguous = size == 0 || order != Order::kOther;
    if (order == Order::kNamed) named_types.add(type, *out);
    return MPI_SUCCESS;
}

int pack_blocks(const void *buf, MPI_Datatype type, const TypeInfo &info, int n, const int counts[],
                const int displs[], char *out, const int64_t offsets[], MPI_Comm comm) {
    return pack(buf, type, info, n, counts, displs, out, offsets, comm);
}

int pack_blocks(const void *buf, MPI_Datatype type, const TypeInfo &info, int n, const int64_t counts[],
                const int64_t displs[], char *out, const int64_t offsets[], MPI_Comm comm) {
    return pack(buf, type, info, n, counts, displs, out, offsets, comm);
}

int unpack_blocks(const char *in, const int64_t offsets[], void *buf, MPI_Datatype type, const TypeInfo &info, int n,
                  const int counts[], const int displs[], MPI_Comm comm) {
    return unpack(in, offsets, buf, type, info, n, counts, displs, comm);
}

int unpack_blocks(const char *in, const int64_t offsets[], void *buf, MPI_Datatype type, const TypeInfo &info, int n,
                  const int64_t counts[], const int64_t displs[], MPI_Comm comm) {
    return unpack(in, offsets, buf, type, info, n, counts, displs, comm);
}

}  // namespace tucoll
