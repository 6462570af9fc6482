#include "core/validate.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/errors.h"

namespace tucoll {

int check_counts(const char *fn, const char *what, const int *counts, int n) {
    if (counts == nullptr && n > 0) return failf(MPI_ERR_ARG, "%s: %s is NULL", fn, what);
    for (int i = 0; i < n; ++i) {
        if (counts[i] < 0) return failf(MPI_ERR_COUNT, "%s: %s[%d] = %d is negative", fn, what, i, counts[i]);
    }
    return MPI_SUCCESS;
}

int check_displs(const char *fn, const char *what, const int *displs) {
    if (displs == nullptr) return failf(MPI_ERR_ARG, "%s: %s is NULL", fn, what);
    return MPI_SUCCESS;
}

int check_buffer(const char *fn, const char *what, const void *buf, int64_t bytes, const TypeInfo &type) {
    if (buf == nullptr && bytes > 0 && type.true_lb == 0) {
        return failf(MPI_ERR_BUFFER, "%s: %s is NULL but holds %lld bytes", fn, what,
                     static_cast<long long>(bytes));
    }
    return MPI_SUCCESS;
}

int64_t total_bytes(const int *counts, int n, int64_t unit) {
    int64_t sum = 0;
    for (int i = 0; i < n; ++i) sum += counts[i];
    return sum * unit;
}

int check_disjoint(const char *fn, const char *what, const int *counts, const int *displs, int n,
                   std::vector<int> &order) {
    order.clear();
    for (int i = 0; i < n; ++i) {
        if (counts[i] > 0) order.push_back(i);
    }
    // Blocks usually lie in rank order: checked in one pass, sorted only when they do not.
    auto by_displacement = [&](int a, int b) { return displs[a] < displs[b]; };
    if (!std::is_sorted(order.begin(), order.end(), by_displacement)) {
        std::sort(order.begin(), order.end(), by_displacement);
    }
    for (size_t k = 1; k < order.size(); ++k) {
        const int a = order[k - 1], b = order[k];
        if (static_cast<int64_t>(displs[a]) + counts[a] > displs[b]) {
            return failf(MPI_ERR_ARG, "%s: the blocks of ranks %d and %d in %s overlap (elements %d..%lld and %d..)", fn,
                         a, b, what, displs[a], static_cast<long long>(displs[a]) + counts[a] - 1, displs[b]);
        }
    }
    return MPI_SUCCESS;
}

bool global_checks_requested() {
    const char *mode = std::getenv("TUCOLL_CHECK");
    return mode != nullptr && std::strcmp(mode, "global") == 0;
}

int agree_on_error(Context &ctx, int local_rc, const char *fn) {
    int local_class = MPI_SUCCESS;
    if (local_rc != MPI_SUCCESS) MPI_Error_class(local_rc, &local_class);
    int mine[2] = {local_class, ctx.rank()}, worst[2] = {0, 0};
    // MAXLOC: the largest error class, and the lowest rank that reported it.
    ctx.quiesce();
    TUCOLL_MPI(MPI_Allreduce(mine, worst, 1, MPI_2INT, MPI_MAXLOC, ctx.comm()));
    if (local_rc != MPI_SUCCESS || worst[0] == MPI_SUCCESS) return local_rc;
    return failf(worst[0], "%s: rank %d rejected its arguments (TUCOLL_CHECK=global)", fn, worst[1]);
}

namespace {

int compare_expected(const Context &ctx, const std::vector<int64_t> &incoming, const int64_t *expected) {
    for (int i = 0; i < ctx.size(); ++i) {
        if (incoming[i] != expected[i]) {
            return failf(MPI_ERR_TRUNCATE, "rank %d sends %lld bytes to rank %d, which expects %lld (TUCOLL_CHECK=global)",
                         i, static_cast<long long>(incoming[i]), ctx.rank(), static_cast<long long>(expected[i]));
        }
    }
    return MPI_SUCCESS;
}

}  // namespace

int check_pairwise_bytes(Context &ctx, const int64_t *sent, const int64_t *expected) {
    std::vector<int64_t> incoming(ctx.size());
    // PMPI: under the interposer the MPI_ name could come back into tucoll.
    ctx.quiesce();
    TUCOLL_MPI(PMPI_Alltoall(sent, 1, MPI_INT64_T, incoming.data(), 1, MPI_INT64_T, ctx.comm()));
    return compare_expected(ctx, incoming, expected);
}

int check_gathered_bytes(Context &ctx, int64_t sent, const int64_t *expected) {
    std::vector<int64_t> incoming(ctx.size());
    ctx.quiesce();
    TUCOLL_MPI(PMPI_Allgather(&sent, 1, MPI_INT64_T, incoming.data(), 1, MPI_INT64_T, ctx.comm()));
    return compare_expected(ctx, incoming, expected);
}

}  // namespace tucoll
