// Error reporting: MPI error classes plus a per-thread message saying what was wrong.
#pragma once

#include <mpi.h>

#include <string>

namespace tucoll {

// Records `message` as the explanation of `mpi_class` for this thread and returns `mpi_class`,
// so call sites read `return fail(MPI_ERR_COUNT, ...);`.
int fail(int mpi_class, std::string message);

// printf-style convenience over fail().
int failf(int mpi_class, const char *format, ...) __attribute__((format(printf, 2, 3)));

// Prepends `prefix` to this thread's last failure message (context added on the way out).
int prefix_error(int code, const std::string &prefix);

// Turns the return code of an MPI call into a tucoll error naming the call.
int mpi_fail(int code, const char *call);

// The detailed message for `code` if it is this thread's last failure, else MPI's text.
const char *error_string(int code);

// This thread's last failure message as recorded (no "tucoll: " prefix), if its code is `code`;
// else MPI's text for `code`.
std::string last_message(int code);

}  // namespace tucoll

// Evaluates an MPI call and returns a tucoll error from the enclosing function if it failed.
#define TUCOLL_MPI(call)                                                   \
    do {                                                                   \
        int tucoll_rc_ = (call);                                           \
        if (tucoll_rc_ != MPI_SUCCESS) return ::tucoll::mpi_fail(tucoll_rc_, #call); \
    } while (0)

// Returns from the enclosing function when a tucoll-internal call failed (message already set).
#define TUCOLL_TRY(expr)                              \
    do {                                              \
        int tucoll_rc_ = (expr);                      \
        if (tucoll_rc_ != MPI_SUCCESS) return tucoll_rc_; \
    } while (0)
