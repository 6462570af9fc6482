// The Fortran bindings (mpif.h and `use mpi`) of the blocking collectives.
// Open MPI's Fortran wrappers call PMPI_* and would bypass the C functions (bindings.cpp), so the
// Fortran symbols are defined here too. Fortran's MPI_IN_PLACE and MPI_BOTTOM are the addresses of
// common blocks whose names depend on the MPI library; where they are not Open MPI's
// (mpi_fortran_in_place and mpi_fortran_bottom, in any of the four spellings), the call goes to
// the library's own binding.
#include <dlfcn.h>

#include <cstdio>

#include "interpose.h"

extern "C" {
#define TUCOLL_FORTRAN_MARKER(lower, upper)                  \
    extern int lower __attribute__((weak));                 \
    extern int lower##_ __attribute__((weak));              \
    extern int lower##__ __attribute__((weak));             \
    extern int upper __attribute__((weak));
TUCOLL_FORTRAN_MARKER(mpi_fortran_in_place, MPI_FORTRAN_IN_PLACE)
TUCOLL_FORTRAN_MARKER(mpi_fortran_bottom, MPI_FORTRAN_BOTTOM)
#undef TUCOLL_FORTRAN_MARKER
}

namespace {

const int *const kInPlace[] = {&mpi_fortran_in_place, &mpi_fortran_in_place_, &mpi_fortran_in_place__,
                               &MPI_FORTRAN_IN_PLACE};
const int *const kBottom[] = {&mpi_fortran_bottom, &mpi_fortran_bottom_, &mpi_fortran_bottom__,
                              &MPI_FORTRAN_BOTTOM};

bool is_marker(const void *fortran, const int *const (&spellings)[4]) {
    for (const int *marker : spellings) {
        if (marker != nullptr && fortran == marker) return true;
    }
    return false;
}

bool fortran_layout_known() {
    auto any = [](const int *const (&spellings)[4]) {
        for (const int *marker : spellings) {
            if (marker != nullptr) return true;
        }
        return false;
    };
    return any(kInPlace) && any(kBottom);
}

const void *c_buffer(const void *fortran) {
    if (is_marker(fortran, kInPlace)) return MPI_IN_PLACE;
    if (is_marker(fortran, kBottom)) return MPI_BOTTOM;
    return fortran;
}

// Neither Open MPI's markers nor the library's own binding: the buffers cannot be translated
// safely (MPI_IN_PLACE would be read as data), so the call fails with a message.
MPI_Fint unknown_fortran_layout(const char *binding) {
    std::fprintf(stderr, "[tucoll] %s: this MPI's Fortran MPI_IN_PLACE/MPI_BOTTOM are unknown to the interposer and "
                 "its own Fortran binding was not found; set TUCOLL_DISABLE=1 for Fortran programs on this MPI\n",
                 binding);
    std::fflush(stderr);
    return MPI_ERR_INTERN;
}

template <class Fn>
Fn library_binding(const char *name) {
    return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

using FAlltoallv = void (*)(void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, void *, MPI_Fint *, MPI_Fint *, MPI_Fint *,
                            MPI_Fint *, MPI_Fint *);
// MPI_ALLTOALL has MPI_ALLGATHER's Fortran signature.
using FAllgather = void (*)(void *, MPI_Fint *, MPI_Fint *, void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);
using FAllgatherv = void (*)(void *, MPI_Fint *, MPI_Fint *, void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *,
                             MPI_Fint *);

static_assert(sizeof(MPI_Fint) == sizeof(int), "Fortran INTEGER arrays are passed to the C API as int arrays");

void fortran_alltoallv(void *sendbuf, MPI_Fint *sendcounts, MPI_Fint *sdispls, MPI_Fint *sendtype, void *recvbuf,
                       MPI_Fint *recvcounts, MPI_Fint *rdispls, MPI_Fint *recvtype, MPI_Fint *comm, MPI_Fint *ierr) {
    if (!fortran_layout_known()) {
        if (auto f = library_binding<FAlltoallv>("pmpi_alltoallv_")) {
            return f(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm, ierr);
        }
        *ierr = unknown_fortran_layout("mpi_alltoallv");
        return;
    }
    *ierr = MPI_Alltoallv(c_buffer(sendbuf), sendcounts, sdispls, PMPI_Type_f2c(*sendtype),
                          const_cast<void *>(c_buffer(recvbuf)), recvcounts, rdispls, PMPI_Type_f2c(*recvtype),
                          PMPI_Comm_f2c(*comm));
}

// MPI_ALLTOALL and MPI_ALLGATHER: the same arguments, one count and type per side. `c_call` is the
// C function here (this interposer's), `binding` the library's own Fortran one, `name` for messages.
using CUniform = int (*)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm);
void fortran_uniform(CUniform c_call, const char *binding, const char *name, void *sendbuf, MPI_Fint *sendcount,
                     MPI_Fint *sendtype, void *recvbuf, MPI_Fint *recvcount, MPI_Fint *recvtype, MPI_Fint *comm,
                     MPI_Fint *ierr) {
    if (!fortran_layout_known()) {
        if (auto f = library_binding<FAllgather>(binding)) {
            return f(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, ierr);
        }
        *ierr = unknown_fortran_layout(name);
        return;
    }
    *ierr = c_call(c_buffer(sendbuf), *sendcount, PMPI_Type_f2c(*sendtype), const_cast<void *>(c_buffer(recvbuf)),
                   *recvcount, PMPI_Type_f2c(*recvtype), PMPI_Comm_f2c(*comm));
}

void fortran_alltoall(void *sendbuf, MPI_Fint *sendcount, MPI_Fint *sendtype, void *recvbuf, MPI_Fint *recvcount,
                      MPI_Fint *recvtype, MPI_Fint *comm, MPI_Fint *ierr) {
    fortran_uniform(MPI_Alltoall, "pmpi_alltoall_", "mpi_alltoall", sendbuf, sendcount, sendtype, recvbuf, recvcount,
                    recvtype, comm, ierr);
}

void fortran_allgather(void *sendbuf, MPI_Fint *sendcount, MPI_Fint *sendtype, void *recvbuf, MPI_Fint *recvcount,
                       MPI_Fint *recvtype, MPI_Fint *comm, MPI_Fint *ierr) {
    fortran_uniform(MPI_Allgather, "pmpi_allgather_", "mpi_allgather", sendbuf, sendcount, sendtype, recvbuf, recvcount,
                    recvtype, comm, ierr);
}

void fortran_allgatherv(void *sendbuf, MPI_Fint *sendcount, MPI_Fint *sendtype, void *recvbuf, MPI_Fint *recvcounts,
                        MPI_Fint *displs, MPI_Fint *recvtype, MPI_Fint *comm, MPI_Fint *ierr) {
    if (!fortran_layout_known()) {
        if (auto f = library_binding<FAllgatherv>("pmpi_allgatherv_")) {
            return f(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, ierr);
        }
        *ierr = unknown_fortran_layout("mpi_allgatherv");
        return;
    }
    *ierr = MPI_Allgatherv(c_buffer(sendbuf), *sendcount, PMPI_Type_f2c(*sendtype),
                           const_cast<void *>(c_buffer(recvbuf)), recvcounts, displs, PMPI_Type_f2c(*recvtype),
                           PMPI_Comm_f2c(*comm));
}

}  // namespace

// The four spellings Fortran compilers use for an external name.
#define TUCOLL_FORTRAN(lower, upper, impl, params, args)      \
    TUCOLL_EXPORT void lower params { impl args; }            \
    TUCOLL_EXPORT void lower##_ params { impl args; }         \
    TUCOLL_EXPORT void lower##__ params { impl args; }        \
    TUCOLL_EXPORT void upper params { impl args; }

TUCOLL_FORTRAN(mpi_alltoallv, MPI_ALLTOALLV, fortran_alltoallv,
               (void *sb, MPI_Fint *sc, MPI_Fint *sd, MPI_Fint *st, void *rb, MPI_Fint *rc, MPI_Fint *rd, MPI_Fint *rt,
                MPI_Fint *c, MPI_Fint *e),
               (sb, sc, sd, st, rb, rc, rd, rt, c, e))
TUCOLL_FORTRAN(mpi_alltoall, MPI_ALLTOALL, fortran_alltoall,
               (void *sb, MPI_Fint *sc, MPI_Fint *st, void *rb, MPI_Fint *rc, MPI_Fint *rt, MPI_Fint *c, MPI_Fint *e),
               (sb, sc, st, rb, rc, rt, c, e))
TUCOLL_FORTRAN(mpi_allgather, MPI_ALLGATHER, fortran_allgather,
               (void *sb, MPI_Fint *sc, MPI_Fint *st, void *rb, MPI_Fint *rc, MPI_Fint *rt, MPI_Fint *c, MPI_Fint *e),
               (sb, sc, st, rb, rc, rt, c, e))
TUCOLL_FORTRAN(mpi_allgatherv, MPI_ALLGATHERV, fortran_allgatherv,
               (void *sb, MPI_Fint *sc, MPI_Fint *st, void *rb, MPI_Fint *rc, MPI_Fint *rd, MPI_Fint *rt, MPI_Fint *c,
                MPI_Fint *e),
               (sb, sc, st, rb, rc, rd, rt, c, e))