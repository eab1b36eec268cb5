! Fortran collectives under `commperf emulate` (Open MPI's Fortran entry points run them as
! messages too, MPI_IN_PLACE included): each result checked, exit status 1 on a wrong one.
! Per rank: 1 MPI_BARRIER, 2 MPI_ALLREDUCE (one in place), n MPI_BCAST, n MPI_REDUCE (one root
! each, in place at the root), 1 MPI_ALLGATHER, 1 MPI_ALLTOALL, n MPI_GATHER, n MPI_SCATTER:
! 5 + 4 n calls, all emulated. Prints "fcalls C errors E" (rank 0).
program collemu
  use mpi
  implicit none
  integer :: ierr, me, n, root, i, errs, calls
  double precision :: x(3), y(3)
  integer :: b(4), ag(64), s(64), r(64), g(2), sc(128), rs(2)
  errs = 0
  calls = 0
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, me, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, n, ierr)
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  calls = calls + 1
  do i = 1, 3
    x(i) = me + i
  end do
  call MPI_ALLREDUCE(x, y, 3, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  calls = calls + 1
  do i = 1, 3
    if (y(i) /= n * (n - 1) / 2 + n * i) errs = errs + 1
  end do
  call MPI_ALLREDUCE(MPI_IN_PLACE, x, 3, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  calls = calls + 1
  do i = 1, 3
    if (x(i) /= n - 1 + i) errs = errs + 1
  end do
  do root = 0, n - 1
    b = -1
    if (me == root) b = (/ root, root + 1, root + 2, root + 3 /)
    call MPI_BCAST(b, 4, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
    calls = calls + 1
    do i = 1, 4
      if (b(i) /= root + i - 1) errs = errs + 1
    end do
    b = (/ me, 1, me * 2, root /)
    if (me == root) then
      call MPI_REDUCE(MPI_IN_PLACE, b, 4, MPI_INTEGER, MPI_SUM, root, MPI_COMM_WORLD, ierr)
      if (b(1) /= n * (n - 1) / 2 .or. b(2) /= n .or. b(3) /= n * (n - 1) .or. b(4) /= n * root) &
        errs = errs + 1
    else
      call MPI_REDUCE(b, r, 4, MPI_INTEGER, MPI_SUM, root, MPI_COMM_WORLD, ierr)
    end if
    calls = calls + 1
  end do
  g = (/ me * 10, me * 10 + 1 /)
  call MPI_ALLGATHER(g, 2, MPI_INTEGER, ag, 2, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  calls = calls + 1
  do i = 0, n - 1
    if (ag(2 * i + 1) /= i * 10 .or. ag(2 * i + 2) /= i * 10 + 1) errs = errs + 1
  end do
  do i = 0, n - 1
    s(i + 1) = me * 100 + i
  end do
  call MPI_ALLTOALL(s, 1, MPI_INTEGER, r, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  calls = calls + 1
  do i = 0, n - 1
    if (r(i + 1) /= i * 100 + me) errs = errs + 1
  end do
  do root = 0, n - 1
    g = (/ me + root, me - root /)
    call MPI_GATHER(g, 2, MPI_INTEGER, ag, 2, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
    calls = calls + 1
    if (me == root) then
      do i = 0, n - 1
        if (ag(2 * i + 1) /= i + root .or. ag(2 * i + 2) /= i - root) errs = errs + 1
      end do
    end if
    do i = 0, n - 1
      sc(2 * i + 1) = root * 1000 + i
      sc(2 * i + 2) = -i
    end do
    rs = 0
    call MPI_SCATTER(sc, 2, MPI_INTEGER, rs, 2, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
    calls = calls + 1
    if (rs(1) /= root * 1000 + me .or. rs(2) /= -me) errs = errs + 1
  end do
  if (me == 0) print '(A,I0,A,I0)', 'fcalls ', calls, ' errors ', errs
  if (errs /= 0) print '(A,I0,A,I0)', 'rank ', me, ' errors ', errs
  call MPI_FINALIZE(ierr)
  if (errs /= 0) stop 1
end program collemu
