! The rest of the call families from Fortran (crates/cli/tests/families.rs checks the counts):
! what Open MPI's Fortran binding would otherwise pass to PMPI_* unseen. Per rank r of n = 4,
! right = r+1, left = r-1 (mod n), 8-byte doubles:
!   v-forms:        MPI_GATHERV to 0 (r+1 doubles), MPI_SCATTERV from 0 (r+1 doubles),
!                   MPI_ALLGATHERV (r+1), MPI_ALLTOALLV (1 to each), MPI_ALLTOALLW (1 to each)
!   reductions:     MPI_SCAN, MPI_EXSCAN (1 double), MPI_REDUCE_SCATTER_BLOCK (1 per rank),
!                   MPI_REDUCE_SCATTER (1 per rank)
!   nonblocking:    MPI_IALLGATHERV (r+1), MPI_ISCAN (1), MPI_IALLTOALLW (1 to each) + MPI_WAIT
!                   each
!   neighbourhood:  on a periodic ring (MPI_CART_CREATE): MPI_NEIGHBOR_ALLGATHER (1 double),
!                   MPI_NEIGHBOR_ALLTOALLV (1 to each), MPI_NEIGHBOR_ALLTOALLW (1 to each),
!                   MPI_INEIGHBOR_ALLTOALL (1 to each) + MPI_WAIT, MPI_INEIGHBOR_ALLTOALLW (1 to
!                   each) + MPI_WAIT
!   one-sided:      passive: MPI_WIN_LOCK right; MPI_RPUT 3 doubles + MPI_WAIT; MPI_FETCH_AND_OP;
!                   MPI_WIN_FLUSH_LOCAL; MPI_WIN_UNLOCK; MPI_WIN_LOCK_ALL; MPI_RGET 2 doubles
!                   + MPI_WAIT; MPI_GET_ACCUMULATE 1 double; MPI_WIN_FLUSH_LOCAL_ALL;
!                   MPI_WIN_SYNC; MPI_WIN_UNLOCK_ALL. active (post/start/complete/wait): post to
!                   {left}, start {right}; MPI_PUT 4 doubles to right; complete; MPI_WIN_TEST
!                   until done.
! The collectives' results are checked (no MPI call added, so the counts stay): a wrong one stops
! the rank with status 1, so that a run under `commperf emulate` (which runs them as messages)
! fails on a wrong value.
program families_more
  use mpi
  implicit none
  integer :: ierr, r, n, right, left, i, j, k, req, ring, win, wgroup, pgroup, sgroup
  integer :: counts(4), displs(4), ones(4), seq(4), types(4), ncounts(2), ndispls(2), ntypes(2)
  integer(kind=MPI_ADDRESS_KIND) :: wsize, disp, ndisp8(2)
  logical :: flag
  double precision :: s(10), g(10), one(4), got(4), x, y, wbuf(16), nb(2), res(4)
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, r, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, n, ierr)
  if (n /= 4) call MPI_ABORT(MPI_COMM_WORLD, 2, ierr)
  right = mod(r + 1, n)
  left = mod(r + n - 1, n)
  do i = 1, 10
    s(i) = dble(r * 100 + i)
  end do
  one = dble(r)
  do i = 1, 4
    counts(i) = i
    displs(i) = (i - 1) * i / 2
    ones(i) = 1
    seq(i) = i - 1
    types(i) = MPI_DOUBLE_PRECISION
  end do
  g = -1.0d0
  call MPI_GATHERV(s, r + 1, MPI_DOUBLE_PRECISION, g, counts, displs, MPI_DOUBLE_PRECISION, 0, &
                   MPI_COMM_WORLD, ierr)
  if (r == 0) call check_blocks(g, 'gatherv')
  g = -1.0d0
  call MPI_SCATTERV(s, counts, displs, MPI_DOUBLE_PRECISION, g, r + 1, MPI_DOUBLE_PRECISION, 0, &
                    MPI_COMM_WORLD, ierr)
  do k = 1, r + 1
    call check(g(k), dble(displs(r + 1) + k), 'scatterv')
  end do
  g = -1.0d0
  call MPI_ALLGATHERV(s, r + 1, MPI_DOUBLE_PRECISION, g, counts, displs, MPI_DOUBLE_PRECISION, &
                      MPI_COMM_WORLD, ierr)
  call check_blocks(g, 'allgatherv')
  call MPI_ALLTOALLV(one, ones, seq, MPI_DOUBLE_PRECISION, got, ones, seq, MPI_DOUBLE_PRECISION, &
                     MPI_COMM_WORLD, ierr)
  do j = 1, 4
    call check(got(j), dble(j - 1), 'alltoallv')
  end do
  seq = seq * 8
  got = -1.0d0
  call MPI_ALLTOALLW(one, ones, seq, types, got, ones, seq, types, MPI_COMM_WORLD, ierr)
  do j = 1, 4
    call check(got(j), dble(j - 1), 'alltoallw')
  end do
  x = dble(r)
  call MPI_SCAN(x, y, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(y, dble(r * (r + 1) / 2), 'scan')
  y = -1.0d0
  call MPI_EXSCAN(x, y, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (r > 0) call check(y, dble(r * (r - 1) / 2), 'exscan')
  call MPI_REDUCE_SCATTER_BLOCK(one, y, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(y, 6.0d0, 'reduce_scatter_block')
  y = -1.0d0
  call MPI_REDUCE_SCATTER(one, y, ones, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(y, 6.0d0, 'reduce_scatter')
  g = -1.0d0
  call MPI_IALLGATHERV(s, r + 1, MPI_DOUBLE_PRECISION, g, counts, displs, MPI_DOUBLE_PRECISION, &
                       MPI_COMM_WORLD, req, ierr)
  call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
  call check_blocks(g, 'iallgatherv')
  call MPI_ISCAN(x, y, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, req, ierr)
  call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
  call check(y, dble(r * (r + 1) / 2), 'iscan')
  ! The datatype array is converted for the library: it must live until the MPI_WAIT.
  got = -1.0d0
  call MPI_IALLTOALLW(one, ones, seq, types, got, ones, seq, types, MPI_COMM_WORLD, req, ierr)
  call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
  if (any(got /= (/ 0.0d0, 1.0d0, 2.0d0, 3.0d0 /))) call MPI_ABORT(MPI_COMM_WORLD, 3, ierr)
  ! A periodic ring: each rank's two neighbours are left and right.
  call MPI_CART_CREATE(MPI_COMM_WORLD, 1, (/ 4 /), (/ .true. /), .false., ring, ierr)
  call MPI_NEIGHBOR_ALLGATHER(x, 1, MPI_DOUBLE_PRECISION, nb, 1, MPI_DOUBLE_PRECISION, ring, ierr)
  ncounts = 1
  ndispls = (/ 0, 1 /)
  call MPI_NEIGHBOR_ALLTOALLV(one, ncounts, ndispls, MPI_DOUBLE_PRECISION, nb, ncounts, ndispls, &
                              MPI_DOUBLE_PRECISION, ring, ierr)
  ntypes = MPI_DOUBLE_PRECISION
  ndisp8 = (/ 0_MPI_ADDRESS_KIND, 8_MPI_ADDRESS_KIND /)
  call MPI_NEIGHBOR_ALLTOALLW(one, ncounts, ndisp8, ntypes, nb, ncounts, ndisp8, ntypes, ring, ierr)
  call MPI_INEIGHBOR_ALLTOALL(one, 1, MPI_DOUBLE_PRECISION, nb, 1, MPI_DOUBLE_PRECISION, ring, req, &
                              ierr)
  call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
  nb = -1.0d0
  call MPI_INEIGHBOR_ALLTOALLW(one, ncounts, ndisp8, ntypes, nb, ncounts, ndisp8, ntypes, ring, req, &
                               ierr)
  call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
  if (nb(1) /= dble(left) .or. nb(2) /= dble(right)) call MPI_ABORT(MPI_COMM_WORLD, 4, ierr)
  call MPI_COMM_FREE(ring, ierr)
  ! One-sided, passive target then active target.
  wbuf = 0.0d0
  wsize = 16 * 8
  call MPI_WIN_CREATE(wbuf, wsize, 8, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
  disp = 0
  call MPI_WIN_LOCK(MPI_LOCK_SHARED, right, 0, win, ierr)
  call MPI_RPUT(s, 3, MPI_DOUBLE_PRECISION, right, disp, 3, MPI_DOUBLE_PRECISION, win, req, ierr)
  call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
  disp = 8
  call MPI_FETCH_AND_OP(x, y, MPI_DOUBLE_PRECISION, right, disp, MPI_SUM, win, ierr)
  call MPI_WIN_FLUSH_LOCAL(right, win, ierr)
  call MPI_WIN_UNLOCK(right, win, ierr)
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  call MPI_WIN_LOCK_ALL(0, win, ierr)
  call MPI_RGET(res, 2, MPI_DOUBLE_PRECISION, left, disp, 2, MPI_DOUBLE_PRECISION, win, req, ierr)
  call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
  disp = 12
  call MPI_GET_ACCUMULATE(x, 1, MPI_DOUBLE_PRECISION, y, 1, MPI_DOUBLE_PRECISION, left, disp, 1, &
                          MPI_DOUBLE_PRECISION, MPI_SUM, win, ierr)
  call MPI_WIN_FLUSH_LOCAL_ALL(win, ierr)
  call MPI_WIN_SYNC(win, ierr)
  call MPI_WIN_UNLOCK_ALL(win, ierr)
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  call MPI_COMM_GROUP(MPI_COMM_WORLD, wgroup, ierr)
  call MPI_GROUP_INCL(wgroup, 1, (/ left /), pgroup, ierr)
  call MPI_GROUP_INCL(wgroup, 1, (/ right /), sgroup, ierr)
  call MPI_WIN_POST(pgroup, 0, win, ierr)
  call MPI_WIN_START(sgroup, 0, win, ierr)
  disp = 4
  call MPI_PUT(s, 4, MPI_DOUBLE_PRECISION, right, disp, 4, MPI_DOUBLE_PRECISION, win, ierr)
  call MPI_WIN_COMPLETE(win, ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_WIN_TEST(win, flag, ierr)
  end do
  call MPI_GROUP_FREE(pgroup, ierr)
  call MPI_GROUP_FREE(sgroup, ierr)
  call MPI_GROUP_FREE(wgroup, ierr)
  call MPI_WIN_FREE(win, ierr)
  call MPI_FINALIZE(ierr)
contains
  subroutine check(v, want, what)
    double precision, intent(in) :: v, want
    character(len=*), intent(in) :: what
    if (v /= want) then
      print *, 'rank', r, what, v, 'want', want
      stop 1
    end if
  end subroutine check
  ! Rank j's j + 1 values j * 100 + 1 .. at displs(j + 1).
  subroutine check_blocks(b, what)
    double precision, intent(in) :: b(10)
    character(len=*), intent(in) :: what
    integer :: jj, kk
    do jj = 0, 3
      do kk = 1, jj + 1
        call check(b(displs(jj + 1) + kk), dble(jj * 100 + kk), what)
      end do
    end do
  end subroutine check_blocks
end program families_more
