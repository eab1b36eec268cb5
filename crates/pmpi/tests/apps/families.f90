! The call families in Fortran (crates/cli/tests/families.rs checks the counts). Per rank r of
! n = 4, right = r+1, left = r-1 (mod n):
!   matched probes:  r -> right 4 x 80 B (MPI_ISEND / MPI_MPROBE + MPI_MRECV + MPI_WAIT)
!   nonblocking collectives: 3 MPI_IALLTOALL (1 double per pair) + MPI_WAIT each
!   communicators:   MPI_COMM_SPLIT by parity: 2 MPI_ALLREDUCE (1 double) on it
!   one-sided:       MPI_WIN_CREATE; fence; MPI_PUT 5 doubles to right; fence; MPI_WIN_FREE
!   counted only:    6 more MPI_COMM_RANK (7 in all), 2 MPI_COMM_SET_NAME (a CHARACTER argument)
! Under MPICH the Fortran binding calls the C functions: every call is recorded. Under Open MPI
! the Fortran symbols are wrapped themselves: these families are counted and timed there.
program families
  use mpi
  implicit none
  integer :: ierr, r, n, right, left, i, half, win, msg, dummy
  integer :: req
  integer(kind=MPI_ADDRESS_KIND) :: wsize, disp
  double precision :: sbuf(10), rbuf(10), a2a_s(4), a2a_r(4), x, y, wbuf(16)
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, r, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, n, ierr)
  if (n /= 4) call MPI_ABORT(MPI_COMM_WORLD, 2, ierr)
  right = mod(r + 1, n)
  left = mod(r + n - 1, n)
  sbuf = 1.0d0
  do i = 1, 4
    call MPI_ISEND(sbuf, 10, MPI_DOUBLE_PRECISION, right, 5, MPI_COMM_WORLD, req, ierr)
    call MPI_MPROBE(left, 5, MPI_COMM_WORLD, msg, MPI_STATUS_IGNORE, ierr)
    call MPI_MRECV(rbuf, 10, MPI_DOUBLE_PRECISION, msg, MPI_STATUS_IGNORE, ierr)
    call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
  end do
  a2a_s = dble(r)
  do i = 1, 3
    call MPI_IALLTOALL(a2a_s, 1, MPI_DOUBLE_PRECISION, a2a_r, 1, MPI_DOUBLE_PRECISION, &
                       MPI_COMM_WORLD, req, ierr)
    call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
  end do
  call MPI_COMM_SPLIT(MPI_COMM_WORLD, mod(r, 2), r, half, ierr)
  x = dble(r)
  do i = 1, 2
    call MPI_ALLREDUCE(x, y, 1, MPI_DOUBLE_PRECISION, MPI_SUM, half, ierr)
  end do
  call MPI_COMM_FREE(half, ierr)
  wsize = 16 * 8
  call MPI_WIN_CREATE(wbuf, wsize, 8, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
  call MPI_WIN_FENCE(0, win, ierr)
  disp = 0
  call MPI_PUT(sbuf, 5, MPI_DOUBLE_PRECISION, right, disp, 5, MPI_DOUBLE_PRECISION, win, ierr)
  call MPI_WIN_FENCE(0, win, ierr)
  call MPI_WIN_FREE(win, ierr)
  do i = 1, 6
    call MPI_COMM_RANK(MPI_COMM_WORLD, dummy, ierr)
  end do
  call MPI_COMM_SET_NAME(MPI_COMM_WORLD, 'world', ierr)
  call MPI_COMM_SET_NAME(MPI_COMM_WORLD, 'the whole world', ierr)
  call MPI_FINALIZE(ierr)
end program families
