// Point-to-point helpers on byte counts that may exceed INT_MAX (64-bit sizes throughout).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tucoll {

// Library-internal tags. Library traffic runs on the context's private communicator, so these
// never meet user tags; distinct values keep phases of one algorithm apart.
enum Tag : int {
    kTagData = 11,
    kTagMeta = 12,
    kTagInter = 13,
    kTagIntra = 14,
    kTagBarrier = 15,  // platform::NonblockingBarrier's messages (SMPI builds)
};

// Non-blocking send/receive of `bytes` bytes. Messages above the large-message limit travel as
// one message of a derived datatype, so both sides must agree on `bytes` (they always do: the
// receiver's count comes from the same MPI_Alltoallv signature rules or from metadata).
int isend_bytes(const void *buf, int64_t bytes, int dest, int tag, MPI_Comm comm, MPI_Request *req);
int issend_bytes(const void *buf, int64_t bytes, int dest, int tag, MPI_Comm comm, MPI_Request *req);
int irecv_bytes(void *buf, int64_t bytes, int source, int tag, MPI_Comm comm, MPI_Request *req);

// Several memory ranges sent or received as one message: a single range goes out as plain
// bytes, several as an hindexed datatype over absolute addresses (MPI_BOTTOM), so blocks
// scattered over different buffers travel without being copied together first.
class BlockList {
  public:
    void clear();
    void add(const void *ptr, int64_t bytes);  // empty ranges are ignored
    int64_t bytes() const { return total_; }
    bool empty() const { return total_ == 0; }

  private:
    friend class Requests;
    std::vector<const char *> ptrs_;
    std::vector<int64_t> sizes_;
    int64_t total_ = 0;
};

// A set of outstanding requests completed together.
class Requests {
  public:
    explicit Requests(size_t expected = 0) {
        reqs_.reserve(expected);
        is_recv_.reserve(expected);
    }
    ~Requests();
    Requests(const Requests &) = delete;
    Requests &operator=(const Requests &) = delete;

    // Post operations; return MPI_SUCCESS or a tucoll error.
    int send(const void *buf, int64_t bytes, int dest, int tag, MPI_Comm comm);
    int recv(void *buf, int64_t bytes, int source, int tag, MPI_Comm comm);
    // A synchronous send: complete only once the receiver has matched it (NBX).
    int ssend(const void *buf, int64_t bytes, int dest, int tag, MPI_Comm comm);
    // One message made of the list's ranges (nothing is posted for an empty list). The ranges
    // must stay valid until wait_all().
    int send(const BlockList &blocks, int dest, int tag, MPI_Comm comm);
    int recv(const BlockList &blocks, int source, int tag, MPI_Comm comm);

    int wait_all();              // completes everything posted so far
    int test_all(int *done);     // *done = 1 (and the set emptied) when everything has completed
    size_t pending() const { return reqs_.size(); }

  private:
    int post_list(const BlockList &blocks, int peer, int tag, MPI_Comm comm, bool is_recv);
    std::vector<MPI_Request> reqs_;
    std::vector<char> is_recv_;
    std::vector<int> lengths_;        // reused by post_list
    std::vector<MPI_Aint> displs_;
};

namespace detail {
// Byte count above which a message is described by a derived datatype instead of an int count.
// Lowered by tests to exercise that path with small buffers.
void set_large_message_limit(int64_t bytes);
int64_t large_message_limit();
}  // namespace detail

}  // namespace tucoll
