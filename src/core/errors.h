// Error reporting: MPI error classes plus a per-thread message saying what was wrong.
#pragma once

#include <mpi.h>

#include <initializer_list>
#include <string>
#include <string_view>

namespace tucoll {

// Records `message` as the explanation of `mpi_class` for this thread and returns `mpi_class`,
// so call sites read `return fail(MPI_ERR_COUNT, ...);`.
int fail(int mpi_class, std::string message);

// printf-style convenience over fail().
int failf(int mpi_class, const char *format, ...) __attribute__((format(printf, 2, 3)));

// Prepends the concatenation of `parts` to this thread's last failure message (context added on
// the way out). Nothing is built when `code` is MPI_SUCCESS, so success paths never allocate.
int prefix_error(int code, std::initializer_list<std::string_view> parts);
// The usual prefix: "fn: ".
inline int prefix_error(int code, const char *fn) { return code == MPI_SUCCESS ? code : prefix_error(code, {fn, ": "}); }

// Called inside a catch block: the exception being handled as an MPI error code — MPI_ERR_NO_MEM
// for bad_alloc (a vector growing), MPI_ERR_INTERN otherwise — its message saying `where`.
// Nothing tucoll throws crosses the C interface or a schedule.
int fail_from_exception(const char *where) noexcept;

// Turns the return code of an MPI call into a tucoll error naming the call.
int mpi_fail(int code, const char *call);

// The detailed message for `code` if it is this thread's last failure, else MPI's text.
const char *error_string(int code);

// TUCOLL_VERBOSE set (and not "0"): the library and the interposer log what they decide.
bool verbose();
// Whether contexts log what ran under TUCOLL_VERBOSE (tucoll_set_choice_log).
bool choice_log_enabled();
void set_choice_log(bool on);
// Writes "[tucoll] <message>" to stderr (one line, flushed) — callers decide which rank logs.
void log_line(const std::string &message);

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

namespace tucoll {
[[noreturn]] void assertion_failed(const char *condition, const char *file, int line);
}  // namespace tucoll

// Internal invariants (a position inside T, a block inside its place), checked in debug builds —
// `make sanitize` — so that an overrun fails there even inside a reused, larger buffer.
#ifdef NDEBUG
#define TUCOLL_ASSERT(condition) ((void)0)
#else
#define TUCOLL_ASSERT(condition) \
    ((condition) ? (void)0 : ::tucoll::assertion_failed(#condition, __FILE__, __LINE__))
#endif
