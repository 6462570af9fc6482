#include "core/errors.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>

namespace tucoll {
namespace {

struct LastError {
    int code = MPI_SUCCESS;
    std::string message;
    std::string scratch;  // backing store for error_string() results
};

thread_local LastError last_error;

std::string mpi_text(int code) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return "unknown error code " + std::to_string(code);
    return std::string(text, len);
}

}  // namespace

int fail(int mpi_class, std::string message) {
    last_error.code = mpi_class;
    last_error.message = std::move(message);
    return mpi_class;
}

int fail_from_exception(const char *where) noexcept {
    int code = MPI_ERR_INTERN;
    const char *what = "internal error";
    try {
        throw;
    } catch (const std::bad_alloc &) {
        code = MPI_ERR_NO_MEM;
        what = "out of memory";
    } catch (const std::exception &e) {
        what = e.what();
    } catch (...) {
    }
    try {
        return failf(code, "%s: %s", where, what);
    } catch (...) {
        return code;  // no memory left for the message
    }
}

int failf(int mpi_class, const char *format, ...) {
    char buffer[1024];
    va_list args;
    va_start(args, format);
    std::vsnprintf(buffer, sizeof buffer, format, args);
    va_end(args);
    return fail(mpi_class, buffer);
}

int prefix_error(int code, std::initializer_list<std::string_view> parts) {
    if (code == MPI_SUCCESS || code != last_error.code) return code;
    std::string prefix;
    for (std::string_view part : parts) prefix += part;
    last_error.message = prefix + last_error.message;
    return code;
}

bool verbose() {
    static const bool value = [] {
        const char *v = std::getenv("TUCOLL_VERBOSE");
        return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
    }();
    return value;
}

namespace {
std::atomic<bool> choice_log{true};
}  // namespace

bool choice_log_enabled() { return choice_log.load(std::memory_order_relaxed); }
void set_choice_log(bool on) { choice_log.store(on, std::memory_order_relaxed); }

void log_line(const std::string &message) {
    std::fprintf(stderr, "[tucoll] %s\n", message.c_str());
    std::fflush(stderr);
}

int mpi_fail(int code, const char *call) {
    int error_class = code;
    MPI_Error_class(code, &error_class);
    return fail(code, std::string(call) + " failed: " + mpi_text(code) + " (class " +
                          std::to_string(error_class) + ")");
}

const char *error_string(int code) {
    if (code == MPI_SUCCESS) return "success";
    if (code == last_error.code && !last_error.message.empty()) {
        last_error.scratch = "tucoll: " + last_error.message;
    } else {
        last_error.scratch = mpi_text(code);
    }
    return last_error.scratch.c_str();
}

std::string last_message(int code) {
    return code == last_error.code && !last_error.message.empty() ? last_error.message : mpi_text(code);
}

void assertion_failed(const char *condition, const char *file, int line) {
    std::fprintf(stderr, "[tucoll] internal check failed: %s (%s:%d)\n", condition, file, line);
    std::fflush(stderr);
    std::abort();
}

}  // namespace tucoll
