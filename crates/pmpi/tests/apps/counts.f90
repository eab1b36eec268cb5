! Fortran program with known counts (crates/cli/tests/monitor_mpi.rs checks them). Per rank r of n,
! right = r+1, left = r-1 (mod n):
!   r -> right: 6 x 80 B   MPI_SEND / MPI_RECV (MPI_STATUS_IGNORE)
!               4 x 400 B  MPI_ISEND / MPI_IRECV + MPI_WAITALL (MPI_STATUSES_IGNORE)
!               2 x 8 B    MPI_SENDRECV
!               2 x 16 B   MPI_ISEND + MPI_TESTSOME loop / MPI_IRECV + MPI_TESTANY loop
!               3 x 24 B   MPI_SEND_INIT / MPI_RECV_INIT, MPI_STARTALL + MPI_WAITALL, then
!                          MPI_REQUEST_FREE (persistent requests)
!   collectives: 3 MPI_ALLREDUCE (8 B), 1 MPI_BARRIER, 2 MPI_BCAST (40 B)
! Open MPI's Fortran calls PMPI_* itself (a C-only interposer would see nothing); MPICH's calls the
! C MPI_* (wrapping both would count twice): the counts must be exact under both.
program counts
  use mpi
  implicit none
  integer :: ierr, r, n, right, left, i, idx, outc
  integer :: idxs(1)
  logical :: flag
  integer :: reqs(8)
  double precision :: sbuf(50), rbuf(50), x, y
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, r, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, n, ierr)
  right = mod(r + 1, n)
  left = mod(r + n - 1, n)
  sbuf = 1.0d0
  do i = 1, 6
    if (mod(r, 2) == 0) then
      call MPI_SEND(sbuf, 10, MPI_DOUBLE_PRECISION, right, 1, MPI_COMM_WORLD, ierr)
      call MPI_RECV(rbuf, 10, MPI_DOUBLE_PRECISION, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    else
      call MPI_RECV(rbuf, 10, MPI_DOUBLE_PRECISION, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      call MPI_SEND(sbuf, 10, MPI_DOUBLE_PRECISION, right, 1, MPI_COMM_WORLD, ierr)
    end if
    if (rbuf(10) /= 1.0d0) call MPI_ABORT(MPI_COMM_WORLD, 3, ierr)
  end do
  do i = 1, 4
    call MPI_IRECV(rbuf, 50, MPI_DOUBLE_PRECISION, left, 2, MPI_COMM_WORLD, reqs(i), ierr)
    call MPI_ISEND(sbuf, 50, MPI_DOUBLE_PRECISION, right, 2, MPI_COMM_WORLD, reqs(4 + i), ierr)
  end do
  call MPI_WAITALL(8, reqs, MPI_STATUSES_IGNORE, ierr)
  do i = 1, 2
    ! The data must arrive whatever path the interposer takes (under g: Irecv, Isend, Waitall).
    sbuf(1) = 100 * i + r
    rbuf(1) = -1
    call MPI_SENDRECV(sbuf, 1, MPI_DOUBLE_PRECISION, right, 3, rbuf, 1, MPI_DOUBLE_PRECISION, left, 3, &
                      MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    if (rbuf(1) /= 100 * i + left) call MPI_ABORT(MPI_COMM_WORLD, 3, ierr)
  end do
  do i = 1, 2
    call MPI_IRECV(rbuf, 2, MPI_DOUBLE_PRECISION, left, 4, MPI_COMM_WORLD, reqs(1), ierr)
    call MPI_ISEND(sbuf, 2, MPI_DOUBLE_PRECISION, right, 4, MPI_COMM_WORLD, reqs(2), ierr)
    flag = .false.
    do while (.not. flag)
      call MPI_TESTANY(1, reqs(1:1), idx, flag, MPI_STATUS_IGNORE, ierr)
    end do
    outc = 0
    do while (outc == 0)
      call MPI_TESTSOME(1, reqs(2:2), outc, idxs, MPI_STATUSES_IGNORE, ierr)
    end do
  end do
  call MPI_RECV_INIT(rbuf, 3, MPI_DOUBLE_PRECISION, left, 5, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_SEND_INIT(sbuf, 3, MPI_DOUBLE_PRECISION, right, 5, MPI_COMM_WORLD, reqs(2), ierr)
  do i = 1, 3
    call MPI_STARTALL(2, reqs(1:2), ierr)
    call MPI_WAITALL(2, reqs(1:2), MPI_STATUSES_IGNORE, ierr)
  end do
  call MPI_REQUEST_FREE(reqs(1), ierr)
  call MPI_REQUEST_FREE(reqs(2), ierr)
  do i = 1, 3
    x = r
    call MPI_ALLREDUCE(x, y, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  end do
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  do i = 1, 2
    call MPI_BCAST(sbuf, 5, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
  end do
  call MPI_FINALIZE(ierr)
end program counts
