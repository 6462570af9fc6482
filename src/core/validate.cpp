#include "core/validate.h"

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

bool global_checks_enabled() {
    const char *mode = std::getenv("TUCOLL_CHECK");
    return mode != nullptr && std::strcmp(mode, "global") == 0;
}

int agree_on_error(Context &ctx, int local_rc, const char *fn) {
    int local_class = MPI_SUCCESS;
    if (local_rc != MPI_SUCCESS) MPI_Error_class(local_rc, &local_class);
    int mine[2] = {local_class, ctx.rank()}, worst[2] = {0, 0};
    // MAXLOC: the largest error class, and the lowest rank that reported it.
    TUCOLL_MPI(MPI_Allreduce(mine, worst, 1, MPI_2INT, MPI_MAXLOC, ctx.comm()));
    if (local_rc != MPI_SUCCESS || worst[0] == MPI_SUCCESS) return local_rc;
    return failf(worst[0], "%s: rank %d rejected its arguments (TUCOLL_CHECK=global)", fn, worst[1]);
}

}  // namespace tucoll
