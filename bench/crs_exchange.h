// tucoll-bench's sparse dynamic data exchanges: the send side from a matrix (the SpMV
// communication package) or a random pattern, and a dense reference to check the result.
#pragma once

#include "runner.h"
#include "typed_buffers.h"

namespace tucoll::bench {

// One rank's send side in elements of the send type.
struct CrsInput {
    std::vector<int> dest, counts, displs;
    Bytes values;
    int total = 0;  // elements in values
};

// What a rank receives, sorted by source, with each message's data in packed (signature) form.
struct CrsResult {
    std::vector<int> src;
    std::vector<int> counts;
    std::vector<std::vector<unsigned char>> data;
};

// `source`: "matrix:PATH" or "random:DEG". With a matrix, alltoall_crs sends every owner of a
// needed column how many of its columns are needed, alltoallv_crs sends the column indices
// (both as MPI_INT); the random pattern sends to DEG distinct ranks (possibly itself), S bytes
// per message (alltoall_crs) or uniform in [0, S] (alltoallv_crs).
std::string build_crs(const std::string &source, bool variable, int64_t size, const TypePair &types, uint64_t seed,
                      int rank, int nprocs, CrsInput *out);

// The dense reference: MPI_Alltoall of per-pair message counts and sizes, then MPI_Alltoallv.
int crs_reference(const CrsInput &in, const TypePair &types, MPI_Comm comm, CrsResult *out);

class CrsExchange final : public Exchange {
  public:
    CrsExchange(const BenchOptions &options, MPI_Comm comm, bool variable, std::string source);
    ~CrsExchange() override;
    const char *collective() const override { return variable_ ? "alltoallv_crs" : "alltoall_crs"; }
    std::string prepare(int64_t size) override;
    int run(const std::string &spec) override;
    int run_reference() override;
    void reset_output() override;
    int64_t compare_with_reference() const override;
    std::string workload() const override;

  private:
    const BenchOptions &options_;
    MPI_Comm comm_;
    bool variable_;
    std::string source_;
    TypePair types_;
    CrsInput input_;
    CrsResult reference_;
    // Outputs of the last call (owned by tucoll until reset_output frees them).
    int recv_nnz_ = 0, recv_size_ = 0;
    int *src_ = nullptr, *recvcounts_ = nullptr, *rdispls_ = nullptr;
    void *recvvals_ = nullptr;
};

}  // namespace tucoll::bench
