// Sparse matrices from Matrix Market files (read with SuiteSparse's CHOLMOD) and the
// communication pattern of a row-partitioned sparse matrix-vector product.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tucoll::bench {

// Compressed sparse rows, symmetric storage expanded, pattern entries read as 1.
struct SparseMatrix {
    int64_t rows = 0, cols = 0;
    std::vector<int64_t> rowptr;
    std::vector<int64_t> colind;
    std::vector<double> values;
};

// "" on success, else what went wrong.
std::string read_matrix_market(const std::string &path, SparseMatrix *out);

// Contiguous partition of n items over p ranks; the first n % p ranks hold one more.
struct Partition {
    int64_t n = 0;
    int p = 1;
    int64_t first(int rank) const { return rank * (n / p) + std::min<int64_t>(rank, n % p); }
    int64_t count(int rank) const { return first(rank + 1) - first(rank); }
    int owner(int64_t i) const;
};

// What rank `rank` needs from other ranks for y = A x with A's rows and x's entries partitioned
// contiguously: for every other owner of a column in its rows, the sorted distinct columns.
struct ColumnNeeds {
    std::vector<int> owners;                  // ascending
    std::vector<std::vector<int64_t>> columns;  // per owner, global column indices
};
ColumnNeeds needed_columns(const SparseMatrix &a, int rank, int nprocs);

}  // namespace tucoll::bench
