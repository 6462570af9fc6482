# Finds MPI (C bindings only; tucoll's C++ code uses them) and works out how to launch jobs.
#
# Sets: MPI::MPI_C, TUCOLL_MPI_DEFINITIONS, TUCOLL_MPI_FLAVOR (openmpi | mpich | unknown),
#       TUCOLL_MPIEXEC (launcher), TUCOLL_MPIEXEC_FLAGS (flags before the program, as a list).
# Keep MPI's deprecated C++ bindings out of C++ translation units.
set(TUCOLL_MPI_DEFINITIONS OMPI_SKIP_MPICXX MPICH_SKIP_MPICXX)

if(TUCOLL_SIMGRID)
  # smpicc/smpicxx bring SMPI's headers and libraries themselves.
  add_library(MPI::MPI_C INTERFACE IMPORTED)
  # The launcher of the SimGrid whose smpicc compiles (the project's own, .deps/simgrid-*).
  get_filename_component(_tucoll_smpi_bin "${CMAKE_C_COMPILER}" DIRECTORY)
  find_program(TUCOLL_MPIEXEC smpirun HINTS "${_tucoll_smpi_bin}" REQUIRED)
  set(TUCOLL_MPI_FLAVOR smpi)
  set(TUCOLL_MPIEXEC_FLAGS "")
  set(MPIEXEC_NUMPROC_FLAG -np)
  list(APPEND TUCOLL_MPI_DEFINITIONS TUCOLL_SIMULATION)
  # The project's SimGrid lets a program declare GPU memory (sim/simgrid-patches/
  # smpi-device-messages.patch); a SimGrid without the patch (Spack's) simulates without it.
  # Asked at every configure: SimGrid is rebuilt in place when its patches change.
  include(CheckCXXSourceCompiles)
  unset(TUCOLL_SMPI_DEVICE_MEMORY CACHE)
  check_cxx_source_compiles("#include <mpi.h>
int main() { smpi_device_memory_add(nullptr, 0); return 0; }" TUCOLL_SMPI_DEVICE_MEMORY)
  if(TUCOLL_SMPI_DEVICE_MEMORY)
    list(APPEND TUCOLL_MPI_DEFINITIONS TUCOLL_SMPI_DEVICE_MEMORY)
  endif()
  message(STATUS "tucoll: SimGrid SMPI build, launcher ${TUCOLL_MPIEXEC}")
  return()
endif()

find_package(MPI REQUIRED COMPONENTS C)

set(TUCOLL_MPIEXEC "${MPIEXEC_EXECUTABLE}")
execute_process(COMMAND ${TUCOLL_MPIEXEC} --version OUTPUT_VARIABLE _tucoll_mpiexec_version
                ERROR_VARIABLE _tucoll_mpiexec_version RESULT_VARIABLE _rc)
if(_tucoll_mpiexec_version MATCHES "Open MPI|OpenRTE")
  set(TUCOLL_MPI_FLAVOR openmpi)
  # More ranks than cores are allowed: tests and demos run many ranks on small machines.
  set(TUCOLL_MPIEXEC_FLAGS --oversubscribe)
elseif(_tucoll_mpiexec_version MATCHES "HYDRA|MPICH")
  set(TUCOLL_MPI_FLAVOR mpich)
  set(TUCOLL_MPIEXEC_FLAGS "")
else()
  set(TUCOLL_MPI_FLAVOR unknown)
  set(TUCOLL_MPIEXEC_FLAGS "")
endif()
message(STATUS "tucoll: MPI flavour ${TUCOLL_MPI_FLAVOR}, launcher ${TUCOLL_MPIEXEC} ${TUCOLL_MPIEXEC_FLAGS}")
