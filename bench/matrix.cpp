#include "matrix.h"

#include <suitesparse/cholmod.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>

namespace tucoll::bench {

std::string read_matrix_market(const std::string &path, SparseMatrix *out) {
    std::unique_ptr<FILE, int (*)(FILE *)> file(std::fopen(path.c_str(), "r"), std::fclose);
    if (!file) return "cannot open matrix file " + path;
    cholmod_common cm;
    cholmod_l_start(&cm);
    cm.print = 0;
    cm.prefer_binary = 1;  // a symmetric pattern reads as ones, not as a made-up positive definite matrix
    cholmod_sparse *a = cholmod_l_read_sparse(file.get(), &cm);
    if (a == nullptr) {
        cholmod_l_finish(&cm);
        return path + ": not a Matrix Market coordinate file CHOLMOD can read";
    }
    // Both triangles of symmetric storage; CHOLMOD stores columns, we want rows: transpose.
    cholmod_sparse *full = a->stype != 0 ? cholmod_l_copy(a, 0, 1, &cm) : a;
    cholmod_sparse *rows = cholmod_l_transpose(full, 1, &cm);
    if (rows == nullptr) {
        if (full != a) cholmod_l_free_sparse(&full, &cm);
        cholmod_l_free_sparse(&a, &cm);
        cholmod_l_finish(&cm);
        return path + ": CHOLMOD could not convert the matrix";
    }
    // The transpose's columns are A's rows.
    const auto *p = static_cast<const SuiteSparse_long *>(rows->p);
    const auto *i = static_cast<const SuiteSparse_long *>(rows->i);
    const auto *x = static_cast<const double *>(rows->x);
    out->rows = static_cast<int64_t>(rows->ncol);
    out->cols = static_cast<int64_t>(rows->nrow);
    out->rowptr.assign(p, p + rows->ncol + 1);
    out->colind.assign(i, i + p[rows->ncol]);
    out->values.assign(p[rows->ncol], 1.0);
    if (rows->xtype == CHOLMOD_REAL && x != nullptr) out->values.assign(x, x + p[rows->ncol]);
    cholmod_l_free_sparse(&rows, &cm);
    if (full != a) cholmod_l_free_sparse(&full, &cm);
    cholmod_l_free_sparse(&a, &cm);
    cholmod_l_finish(&cm);
    return "";
}

int Partition::owner(int64_t i) const {
    const int64_t base = n / p, extra = n % p;
    const int64_t big = extra * (base + 1);  // items held by the ranks with one more
    if (i < big) return static_cast<int>(i / (base + 1));
    return static_cast<int>(extra + (i - big) / std::max<int64_t>(base, 1));
}

ColumnNeeds needed_columns(const SparseMatrix &a, int rank, int nprocs) {
    const Partition rows{a.rows, nprocs}, cols{a.cols, nprocs};
    std::map<int, std::vector<int64_t>> by_owner;
    for (int64_t r = rows.first(rank); r < rows.first(rank + 1); ++r) {
        for (int64_t k = a.rowptr[r]; k < a.rowptr[r + 1]; ++k) {
            const int owner = cols.owner(a.colind[k]);
            if (owner != rank) by_owner[owner].push_back(a.colind[k]);
        }
    }
    ColumnNeeds needs;
    for (auto &[owner, columns] : by_owner) {
        std::sort(columns.begin(), columns.end());
        columns.erase(std::unique(columns.begin(), columns.end()), columns.end());
        needs.owners.push_back(owner);
        needs.columns.push_back(std::move(columns));
    }
    return needs;
}

}  // namespace tucoll::bench
