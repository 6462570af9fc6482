// The context's RMA window (sparse/rma's arrival flags and payloads), and the MPICH 4.0 workaround
// it needs.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "core/context.h"
#include "core/errors.h"

namespace tucoll {

namespace {

// MPICH 4.0 with ch4:ucx and UCX 1.13 or newer (Debian 12 pairs 4.0.2 with 1.13.1) sets the base
// of a window from MPI_Win_allocate wrongly, so puts land at the wrong place when ranks put into
// each other at once (fixed by pmodels/mpich#6140, merged for 4.1; NWChem works around it the same
// way, with MPI_Win_create). A two-rank program of one MPI_Put each way shows it there, and passes
// with MPI_Win_create and with MPICH 5.0.2. Every MPICH 4.0.x gets the workaround.
bool win_allocate_misplaces_puts() {
    static const bool affected = [] {
        char text[MPI_MAX_LIBRARY_VERSION_STRING] = "";
        int length = 0;
        if (MPI_Get_library_version(text, &length) != MPI_SUCCESS) return false;
        int major = 0, minor = 0;
        if (std::sscanf(text, "MPICH Version: %d.%d", &major, &minor) < 2) return false;
        return major == 4 && minor == 0;
    }();
    return affected;
}

}  // namespace

void Context::release_window() {
    if (window_ != MPI_WIN_NULL) MPI_Win_free(&window_);
    if (window_memory_ != nullptr) MPI_Free_mem(window_memory_);
    window_memory_ = nullptr;
    window_base_ = nullptr;
    window_bytes_ = 0;
}

int Context::window(size_t bytes, MPI_Win *win, char **base) {
    if (window_ == MPI_WIN_NULL || window_bytes_ < bytes) {
        quiesce();
        release_window();
        const size_t size = std::max<size_t>(bytes, 1);
        if (win_allocate_misplaces_puts()) {
            TUCOLL_MPI(MPI_Alloc_mem(static_cast<MPI_Aint>(size), MPI_INFO_NULL, &window_memory_));
            window_base_ = static_cast<char *>(window_memory_);
            const int rc = MPI_Win_create(window_base_, static_cast<MPI_Aint>(size), 1, MPI_INFO_NULL, comm_, &window_);
            if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Win_create");
        } else {
            // MPI allocates the memory so that it can use shared memory (Open MPI's osc/sm, which
            // serves MPI_Win_allocate on one node but not MPI_Win_create) or registered buffers.
            TUCOLL_MPI(MPI_Win_allocate(static_cast<MPI_Aint>(size), 1, MPI_INFO_NULL, comm_, &window_base_, &window_));
        }
        TUCOLL_MPI(MPI_Win_set_errhandler(window_, MPI_ERRORS_RETURN));
        // Zeroed before its first fence: users of the window (rma's arrival flags) rely on it.
        std::memset(window_base_, 0, size);
        window_bytes_ = size;
    }
    *win = window_;
    *base = window_base_;
    return MPI_SUCCESS;
}

}  // namespace tucoll
