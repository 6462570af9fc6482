#include "core/errors.h"

#include <cstdarg>
#include <cstdio>

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

int failf(int mpi_class, const char *format, ...) {
    char buffer[1024];
    va_list args;
    va_start(args, format);
    std::vsnprintf(buffer, sizeof buffer, format, args);
    va_end(args);
    return fail(mpi_class, buffer);
}

int prefix_error(int code, const std::string &prefix) {
    if (code != MPI_SUCCESS && code == last_error.code) last_error.message = prefix + last_error.message;
    return code;
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

}  // namespace tucoll
