#include "core/datatype.h"

#include <algorithm>
#include <climits>

#include "core/errors.h"
#include "core/platform.h"

namespace tucoll {
namespace {

// Elements per MPI_Pack/MPI_Unpack call, so that every packed piece fits an int byte count.
int64_t elements_per_piece(const TypeInfo &info) {
    return std::max<int64_t>(1, INT_MAX / std::max<int64_t>(1, info.size));
}

}  // namespace

int TypeInfo::query(MPI_Datatype type, TypeInfo *out) {
    if (type == MPI_DATATYPE_NULL) return fail(MPI_ERR_TYPE, "datatype is MPI_DATATYPE_NULL");
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
    out->contiguous = size == 0 || (size == extent && size == true_extent);
    return MPI_SUCCESS;
}

int pack_blocks(const void *buf, MPI_Datatype type, const TypeInfo &info, int n, const int counts[],
                const int displs[], char *out, const int64_t offsets[], MPI_Comm comm) {
    const int64_t piece = elements_per_piece(info);
    for (int i = 0; i < n; ++i) {
        const char *src = static_cast<const char *>(buf) + static_cast<int64_t>(displs[i]) * info.extent;
        char *dst = out + offsets[i];
        for (int64_t done = 0; done < counts[i]; done += piece) {
            int64_t elems = std::min<int64_t>(piece, counts[i] - done);
            int position = 0;
            int bytes = static_cast<int>(elems * info.size);
            TUCOLL_MPI(MPI_Pack(src + done * info.extent, static_cast<int>(elems), type, dst, bytes,
                                &position, comm));
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

int unpack_blocks(const char *in, const int64_t offsets[], void *buf, MPI_Datatype type,
                  const TypeInfo &info, int n, const int counts[], const int displs[], MPI_Comm comm) {
    const int64_t piece = elements_per_piece(info);
    for (int i = 0; i < n; ++i) {
        char *dst = static_cast<char *>(buf) + static_cast<int64_t>(displs[i]) * info.extent;
        const char *src = in + offsets[i];
        for (int64_t done = 0; done < counts[i]; done += piece) {
            int64_t elems = std::min<int64_t>(piece, counts[i] - done);
            int position = 0;
            int bytes = static_cast<int>(elems * info.size);
            TUCOLL_MPI(MPI_Unpack(src, bytes, &position, dst + done * info.extent, static_cast<int>(elems),
                                  type, comm));
            src += bytes;
            platform::charge_copy(bytes);
        }
    }
    return MPI_SUCCESS;
}

}  // namespace tucoll
