! An ordinary Fortran MPI program (mpif.h, no tucoll): MPI_ALLTOALLV, also with MPI_IN_PLACE, and
! MPI_ALLTOALL, checked by the program itself. The preload test runs it with libtucoll_preload.so.
program ftest
  implicit none
  include 'mpif.h'
  integer :: ierr, p, me, j, k, ok, allok
  integer, allocatable :: sc(:), sd(:), rc(:), rd(:)
  double precision, allocatable :: sbuf(:), rbuf(:)
  call MPI_INIT(ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, p, ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, me, ierr)
  allocate(sc(p), sd(p), rc(p), rd(p), sbuf(2*p), rbuf(2*p))
  do j = 1, p
    sc(j) = 2; sd(j) = 2*(j-1); rc(j) = 2; rd(j) = 2*(j-1)
    sbuf(2*j-1) = 100*me + j; sbuf(2*j) = -(100*me + j)
  end do
  call MPI_ALLTOALLV(sbuf, sc, sd, MPI_DOUBLE_PRECISION, rbuf, rc, rd, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
  ok = 1
  do j = 1, p
    if (rbuf(2*j-1) /= 100*(j-1) + me + 1) ok = 0
  end do
  call MPI_ALLTOALLV(MPI_IN_PLACE, sc, sd, MPI_DOUBLE_PRECISION, rbuf, rc, rd, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
  do j = 1, p
    if (rbuf(2*j-1) /= sbuf(2*j-1)) ok = 0
  end do
  ! MPI_ALLTOALL: 2 doubles per block, block j of rank i is (100*i + j, -(100*i + j))
  rbuf = 0
  call MPI_ALLTOALL(sbuf, 2, MPI_DOUBLE_PRECISION, rbuf, 2, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS) ok = 0
  do j = 1, p
    if (rbuf(2*j-1) /= 100*(j-1) + me + 1 .or. rbuf(2*j) /= -(100*(j-1) + me + 1)) ok = 0
  end do
  call MPI_ALLREDUCE(ok, allok, 1, MPI_INTEGER, MPI_MIN, MPI_COMM_WORLD, ierr)
  if (me == 0) print '(a,i0)', 'fortran MPI_ALLTOALLV ok = ', allok
  call MPI_FINALIZE(ierr)
  if (allok /= 1) stop 1
end program
