// Typed send/receive buffers built from a workload: the datatype pairs the tests and the bench
// exercise, element counts derived from byte sizes, and deterministic contents.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "buffer.h"
#include "workload.h"

namespace tucoll::bench {

// A send and a receive datatype with equal type signatures per `unit` bytes of data.
class TypePair {
  public:
    TypePair() = default;
    ~TypePair();
    TypePair(const TypePair &) = delete;
    TypePair &operator=(const TypePair &) = delete;
    TypePair(TypePair &&other) noexcept;
    TypePair &operator=(TypePair &&other) noexcept;

    // Names from type_pair_names(); empty string on success, else what is wrong.
    static std::string create(const std::string &name, TypePair *out);

    std::string name;
    MPI_Datatype send = MPI_DATATYPE_NULL;
    MPI_Datatype recv = MPI_DATATYPE_NULL;
    int64_t send_size = 1, send_extent = 1;
    int64_t recv_size = 1, recv_extent = 1;
    int64_t unit = 1;  // bytes of data per indivisible unit: lcm of the two sizes

    int64_t send_count(int64_t bytes) const { return bytes / unit * unit / send_size; }
    int64_t recv_count(int64_t bytes) const { return bytes / unit * unit / recv_size; }

  private:
    std::vector<MPI_Datatype> owned_;
};

// char, int, double, vector (2 ints with a gap, non-contiguous), and pairs whose send and
// receive types differ: char4-char (contiguous 4 chars vs char), int-vector (int vs the vector
// type) and char4-int (4 chars vs int: equal size, the pairing MPI programs use in practice).
const std::vector<std::string> &type_pair_names();

enum class Layout {
    kPacked,     // blocks in rank order, back to back
    kScattered,  // blocks in reverse rank order with a one-element gap after each
};

struct AlltoallvBuffers {
    std::vector<int> sendcounts, sdispls, recvcounts, rdispls;
    Bytes send, recv;

    void fill_recv_sentinel();  // 0xA5 everywhere, gaps included
};

// Element counts, displacements and contents of rank `rank` for `workload` with `types`
// (without `with_data`: counts and displacements only). Returns an empty string, or why the
// workload does not fit (counts above INT_MAX).
std::string build_alltoallv(const Workload &workload, const TypePair &types, int rank, Layout layout,
                            AlltoallvBuffers *out, bool with_data = true);

// Byte k of a rank's send buffer as build_alltoallv / build_allgather fill it (and, for an
// allgather in place, byte k of its own block in the receive buffer): references regenerate one
// sender's block from these without building its whole buffer.
unsigned char alltoallv_send_byte(int rank, size_t k);
unsigned char allgather_send_byte(int rank, size_t k);

struct AllgatherBuffers {
    int sendcount = 0;
    std::vector<int> recvcounts, displs;  // per rank, in recv elements (allgather: all equal)
    Bytes send, recv, initial_recv;

    void reset_recv() { recv = initial_recv; }
};

// Buffers of rank `rank` for an allgather of `block_bytes[i]` bytes from every rank i (equal for
// MPI_Allgather). With `in_place` the own block is written into the receive buffer, where
// MPI_IN_PLACE finds it; other blocks start as 0xA5 sentinels.
std::string build_allgather(const std::vector<int64_t> &block_bytes, const TypePair &types, int rank, Layout layout,
                            bool in_place, AllgatherBuffers *out);

// First byte where two buffers differ, or -1.
int64_t first_difference(const Bytes &a, const Bytes &b);

}  // namespace tucoll::bench
