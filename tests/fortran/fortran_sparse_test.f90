! The Fortran module's sparse matrix (accrete_sparse_*) under mpiexec -n P:
! the 1D Laplacian from two-node elements, 1-based, rows split unevenly
! (rank 1 owns none when P >= 3), two rounds on the frozen pattern, every
! stored entry read back exactly through the zero-copy CSR blocks and
! accrete_sparse_get, a growing pattern, and the error codes.
program fortran_sparse_test
  use, intrinsic :: iso_c_binding
  use accrete
  use test_report
  implicit none
  integer :: me, np, failures, ierr, round, p
  integer(c_int64_t) :: n, mine, e, i, k, j, m, nn, row_lo, row_hi, col_lo, col_hi
  integer(c_int64_t) :: nodes(2), bad_rows(1)
  real(c_double) :: ke(2, 2), kk, want, v
  real(c_float) :: vf
  type(accrete_sparse) :: a, g
  integer(c_int64_t), pointer :: row_ptr(:), col_map(:)
  integer(c_int32_t), pointer :: col(:)
  real(c_double), pointer :: val(:)
  logical :: stored(0:200)

  failures = 0
  call accrete_init()
  me = accrete_rank_me()
  np = accrete_rank_n()
  n = 0
  do p = 0, np - 1
    n = n + rows_of(p)
  end do
  mine = rows_of(me)
  call accrete_sparse_create(a, ACCRETE_DOUBLE, mine, mine)
  call accrete_sparse_ranges(a, m, nn, row_lo, row_hi, col_lo, col_hi)
  call check(m == n .and. nn == n .and. row_hi - row_lo + 1 == mine .and. col_hi - col_lo + 1 == mine, 'ranges')

  do round = 0, 1
    if (round > 0) call accrete_sparse_reset(a)
    kk = 1.0d0 + round
    ke = reshape([kk, -kk, -kk, kk], [2, 2])
    ! Elements (e, e + 1) for e = me + 1, me + 1 + np, ...: every process
    ! adds into rows of others.
    do e = me + 1, n - 1, np
      nodes = [e, e + 1]
      call accrete_sparse_update(a, ke, nodes, nodes)
    end do
    call accrete_sparse_commit(a)
    ! Row i: 2k on the diagonal (k at the ends), -k beside it; nothing else.
    do i = row_lo, row_hi
      stored = .false.
      call accrete_sparse_block(a, .false., row_ptr, col, val)
      do k = row_ptr(i - row_lo + 1), row_ptr(i - row_lo + 2) - 1
        j = col_lo + col(k + 1)
        call check_entry(i, j, val(k + 1), kk)
        stored(j) = .true.
      end do
      call accrete_sparse_block(a, .true., row_ptr, col, val, col_map)
      do k = row_ptr(i - row_lo + 1), row_ptr(i - row_lo + 2) - 1
        j = col_map(col(k + 1) + 1) + 1
        call check(j < col_lo .or. j > col_hi, 'off-diagonal column outside the diagonal range')
        call check_entry(i, j, val(k + 1), kk)
        stored(j) = .true.
      end do
      do j = 1, n
        call check(stored(j) .eqv. abs(j - i) <= 1, 'the pattern holds exactly the neighbours')
        call accrete_sparse_get(a, i, j, v)
        want = 0
        if (abs(j - i) <= 1) want = expected(i, j, kk)
        call check(v == want, 'get')
      end do
    end do
  end do

  ! A new entry in an own row of the frozen pattern: ACCRETE_ERR_STATE, nothing applied.
  call accrete_sparse_reset(a)
  if (mine > 0 .and. n >= 3) then
    bad_rows = [row_lo]
    nodes = [merge(n, 1_c_int64_t, row_lo < n - 1), row_lo]
    call accrete_sparse_update(a, reshape([1.0d0, 1.0d0], [1, 2]), bad_rows, nodes, ierr)
    call check(ierr == ACCRETE_ERR_STATE, 'a new entry in a frozen pattern')
    call check(index(accrete_last_error(), 'not in the frozen pattern') > 0, 'its message')
  end if
  call accrete_sparse_commit(a)
  if (mine > 0) then
    call accrete_sparse_get(a, row_lo, row_lo, v)
    call check(v == 0, 'nothing applied')
  end if
  ! Errors: the buffer's type, an index out of range, a row of another process.
  call accrete_sparse_get(a, row_lo, row_lo, vf, ierr)
  call check(ierr == ACCRETE_ERR_ARG, 'type mismatch')
  nodes = [1_c_int64_t, n + 1]
  call accrete_sparse_update(a, ke, nodes, nodes, ierr)
  call check(ierr == ACCRETE_ERR_ARG, 'an index out of range')
  call accrete_sparse_free(a)

  ! A growing pattern: round 1 adds the corner entry (1, n).
  call accrete_sparse_create(g, ACCRETE_DOUBLE, mine, mine, growing_pattern=.true.)
  call accrete_sparse_ranges(g, m, nn, row_lo, row_hi, col_lo, col_hi)
  if (me == 0) call accrete_sparse_update(g, reshape([2.5d0], [1, 1]), [1_c_int64_t], [1_c_int64_t])
  call accrete_sparse_commit(g)
  call accrete_sparse_reopen(g)
  if (me == np - 1) call accrete_sparse_update(g, reshape([0.5d0], [1, 1]), [1_c_int64_t], [n])
  call accrete_sparse_commit(g)
  if (row_lo == 1 .and. row_hi >= 1) then
    call accrete_sparse_get(g, 1_c_int64_t, n, v)
    call check(v == 0.5d0, 'the grown entry')
  end if
  call accrete_sparse_free(g)

  call report('fortran_sparse_test', failures)
  call accrete_finalize()
  if (failures /= 0) error stop 1

contains


  integer(c_int64_t) function rows_of(q)
    integer, intent(in) :: q
    rows_of = 3 + mod(q, 3)
    if (np >= 3 .and. q == 1) rows_of = 0
  end function

  real(c_double) function expected(r, c, k)
    integer(c_int64_t), intent(in) :: r, c
    real(c_double), intent(in) :: k
    if (r /= c) then
      expected = -k
    else if (r == 1 .or. r == n) then
      expected = k
    else
      expected = 2 * k
    end if
  end function

  subroutine check_entry(r, c, x, k)
    integer(c_int64_t), intent(in) :: r, c
    real(c_double), intent(in) :: x, k
    call check(abs(c - r) <= 1, 'a stored entry next to the diagonal')
    if (abs(c - r) <= 1) call check(x == expected(r, c, k), 'a stored value')
  end subroutine

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      failures = failures + 1
      print '(a,i0,2a)', '[', me, '] failed: ', what
    end if
  end subroutine
end program
