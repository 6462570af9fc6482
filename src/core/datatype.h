// Datatype handling: a byte view of typed buffers. Contiguous types are used in place; others
// are packed into scratch with MPI_Pack (and unpacked with MPI_Unpack), block by block.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace tucoll {

// A request's own handles on the derived datatypes it uses after its call returns, so that the
// caller may free theirs meanwhile (MPI allows it): duplicates, freed with the request or when
// it completes. Predefined types are used as they are.
class OwnedTypes {
  public:
    OwnedTypes() = default;
    OwnedTypes(const OwnedTypes &) = delete;
    OwnedTypes &operator=(const OwnedTypes &) = delete;
    ~OwnedTypes() { release(); }
    // *type becomes this request's handle on it (one duplicate per distinct type).
    int own(MPI_Datatype *type);
    // Frees the duplicates (the storage stays, for the next call).
    void release();

  private:
    std::vector<std::pair<MPI_Datatype, MPI_Datatype>> types_;  // the caller's, the duplicate
};

struct TypeInfo {
    int64_t size = 0;         // bytes of data in one element
    int64_t extent = 0;       // stride between consecutive elements
    int64_t true_lb = 0;      // offset of the first data byte from the element's address
    int64_t true_extent = 0;  // span from the first to the last data byte of one element
    // n elements are n * size bytes in type-map order, starting at true_lb: the type is built
    // from a named type by duplication, contiguous repetition and resizing only, with no gaps.
    // Any other constructor — a permuted indexed type, a struct — is packed, even where its
    // size, extent and true extent happen to agree (the byte order would be memory order, not
    // the type map's).
    bool contiguous = false;

    static int query(MPI_Datatype type, TypeInfo *out);  // MPI_ERR_TYPE on a null/invalid type
};

// Packs `n` blocks — block i holds counts[i] elements at buf + displs[i]*extent — into
// `out + offsets[i]`. Block sizes in bytes are counts[i] * info.size. Counts and displacements
// come as the user's ints or as 64-bit values computed from them (allgather's j * recvcount).
int pack_blocks(const void *buf, MPI_Datatype type, const TypeInfo &info, int n, const int counts[],
                const int displs[], char *out, const int64_t offsets[], MPI_Comm comm);
int pack_blocks(const void *buf, MPI_Datatype type, const TypeInfo &info, int n, const int64_t counts[],
                const int64_t displs[], char *out, const int64_t offsets[], MPI_Comm comm);

// The inverse of pack_blocks.
int unpack_blocks(const char *in, const int64_t offsets[], void *buf, MPI_Datatype type, const TypeInfo &info, int n,
                  const int counts[], const int displs[], MPI_Comm comm);
int unpack_blocks(const char *in, const int64_t offsets[], void *buf, MPI_Datatype type, const TypeInfo &info, int n,
                  const int64_t counts[], const int64_t displs[], MPI_Comm comm);

}  // namespace tucoll
