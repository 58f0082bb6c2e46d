! The Fortran module `accrete` under mpiexec -n P: 1-based indices and
! inclusive patches, every element type of dist_array, the counter, a
! convergent_matrix round with update_symmetric + fill_lower, zero-copy
! views, and the error codes (ierr) of bad input, checked exactly.
program fortran_api_test
  use, intrinsic :: iso_c_binding
  use accrete
  use test_report
  implicit none
  integer :: me, np, fails, ierr, p
  fails = 0
  call accrete_init()
  me = accrete_rank_me()
  np = accrete_rank_n()

  call test_array_r8()
  call test_array_other_types()
  call test_counter()
  call test_matrix()
  call test_matrix_complex()
  call test_errors()
  call test_local_indices()

  call accrete_init(ierr)
  call check(ierr == ACCRETE_ERR_STATE, 'init twice')
  call report('fortran_api_test', fails)
  call accrete_finalize()
  if (fails /= 0) error stop 1

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      fails = fails + 1
      write (*, '(a,i0,2a)') '[', me, '] FAILED: ', what
    end if
  end subroutine

  ! The last call failed with `code` and a message containing `text`, in
  ! the Fortran user's words: no C++ name (nothing with '::').
  logical function has_error(code, text)
    integer, intent(in) :: code
    character(len=*), intent(in) :: text
    character(len=:), allocatable :: msg
    msg = accrete_last_error()
    has_error = ierr == code .and. index(msg, text) > 0 .and. index(msg, '::') == 0
    if (.not. has_error) print '(a,i0,4a)', 'got ierr = ', ierr, ', message: ', msg, '; wanted: ', text
  end function


  real(c_double) function val(i, j)
    integer(c_int64_t), intent(in) :: i, j
    val = 0.25d0 * real(mod(i * 7 + j * 3, 13), c_double)
  end function

  ! Block, irregular, block-cyclic and element-cyclic arrays: rank 0 puts the
  ! whole array, every rank accs alpha * (rank + 1) into a patch crossing owners,
  ! then the values are read back with get and, locally, through access().
  subroutine test_array_r8()
    integer(c_int64_t), parameter :: m = 17, n = 11
    type(accrete_array) :: a(4)
    real(c_double) :: full(m, n), ones(m, n), want(m, n)
    real(c_double), allocatable :: part(:, :)
    real(c_double), pointer :: loc(:, :)
    integer(c_int64_t) :: i, j, starts(np), lo(2), hi(2), rows, cols
    integer :: k, owner
    do j = 1, n
      do i = 1, m
        full(i, j) = val(i, j)
      end do
    end do
    do k = 1, np
      starts(k) = min(m, 1 + 2 * (k - 1))
    end do
    call accrete_array_create_block(a(1), ACCRETE_DOUBLE, m, n)
    call accrete_array_create_irregular(a(2), ACCRETE_DOUBLE, m, n, starts, [1_c_int64_t])
    call accrete_array_create_block_cyclic(a(3), ACCRETE_DOUBLE, m, n, 3_c_int64_t, 2_c_int64_t)
    call accrete_array_create_element_cyclic(a(4), ACCRETE_DOUBLE, m, n, 1, np)
    do k = 1, 4
      call accrete_array_shape(a(k), rows, cols)
      call check(rows == m .and. cols == n, 'shape')
      owner = accrete_array_locate(a(k), m, n)
      call check(owner >= 0 .and. owner < np, 'locate')
      if (me == 0) call accrete_array_put(a(k), [1_c_int64_t, 1_c_int64_t], [m, n], full)
      call accrete_array_sync(a(k))
      ! rows 2..m-1, columns 3..n: every element += 0.5 * (rank + 1)
      lo = [2_c_int64_t, 3_c_int64_t]
      hi = [m - 1, n]
      ones = real(me + 1, c_double)
      call accrete_array_acc(a(k), lo, hi, ones(1:hi(1) - lo(1) + 1, 1:hi(2) - lo(2) + 1), 0.5d0)
      call accrete_array_sync(a(k))
      want = full
      want(lo(1):hi(1), lo(2):hi(2)) = want(lo(1):hi(1), lo(2):hi(2)) + 0.25d0 * np * (np + 1)
      allocate (part(m, n))
      part = -1
      call accrete_array_get(a(k), [1_c_int64_t, 1_c_int64_t], [m, n], part)
      call check(all(part == want), 'get after acc')
      ! A single element and an empty patch.
      call accrete_array_get(a(k), [m, n], [m, n], part(1:1, 1:1))
      call check(part(1, 1) == want(m, n), 'single element')
      call accrete_array_get(a(k), [3_c_int64_t, 1_c_int64_t], [2_c_int64_t, n], part(1:0, :))
      deallocate (part)
      call accrete_array_access(a(k), loc)
      call check(associated(loc), 'access')
      call accrete_array_release(a(k))
      call check(abs(accrete_array_norm(a(k)) - sqrt(sum(want**2))) <= 1d-12 * sqrt(sum(want**2)), 'norm')
    end do
    ! A file written by one distribution loads into another.
    call accrete_array_save(a(1), 'fortran_api_test.bin')
    call accrete_array_zero(a(4))
    call accrete_array_load(a(4), 'fortran_api_test.bin')
    allocate (part(m, n))
    call accrete_array_get(a(4), [1_c_int64_t, 1_c_int64_t], [m, n], part)
    call check(all(part == want), 'save/load')
    deallocate (part)
    do k = 1, 4
      call accrete_array_free(a(k))
    end do
  end subroutine

  subroutine test_array_other_types()
    integer(c_int64_t), parameter :: m = 9, n = 7
    type(accrete_array) :: ai, al, az, ac, as
    integer(c_int32_t) :: bi(m, n), gi(m, n)
    integer(c_int64_t) :: bl(m, n), gl(m, n)
    complex(c_double_complex) :: bz(m, n), gz(m, n)
    complex(c_float_complex) :: bc(m, n), gc(m, n)
    real(c_float) :: bs(m, n), gs(m, n)
    integer(c_int64_t), parameter :: lo(2) = [1, 1], hi(2) = [m, n]
    call accrete_array_create_block(ai, ACCRETE_INT32, m, n)
    call accrete_array_create_block(al, ACCRETE_INT64, m, n)
    call accrete_array_create_block_cyclic(az, ACCRETE_COMPLEX_DOUBLE, m, n, 2_c_int64_t, 2_c_int64_t)
    call accrete_array_create_element_cyclic(ac, ACCRETE_COMPLEX_FLOAT, m, n)
    call accrete_array_create_block(as, ACCRETE_FLOAT, m, n)
    call accrete_array_zero(ai)
    call accrete_array_zero(al)
    call accrete_array_zero(az)
    call accrete_array_zero(ac)
    call accrete_array_zero(as)
    bi = me + 1
    bl = 2_c_int64_t**40 + me
    bz = cmplx(0.25d0 * (me + 1), -0.5d0, c_double_complex)
    bc = cmplx(0.5 * (me + 1), 0.25, c_float_complex)
    bs = 0.75
    call accrete_array_acc(ai, lo, hi, bi)
    call accrete_array_acc(al, lo, hi, bl)
    call accrete_array_acc(az, lo, hi, bz)
    call accrete_array_acc(ac, lo, hi, bc, cmplx(2.0, 0.0, c_float_complex))
    call accrete_array_acc(as, lo, hi, bs)
    call accrete_array_sync(ai)
    call accrete_array_sync(al)
    call accrete_array_sync(az)
    call accrete_array_sync(ac)
    call accrete_array_sync(as)
    call accrete_array_get(ai, lo, hi, gi)
    call accrete_array_get(al, lo, hi, gl)
    call accrete_array_get(az, lo, hi, gz)
    call accrete_array_get(ac, lo, hi, gc)
    call accrete_array_get(as, lo, hi, gs)
    call check(all(gi == np * (np + 1) / 2), 'int32 acc')
    call check(all(gl == np * 2_c_int64_t**40 + np * (np - 1) / 2), 'int64 acc')
    call check(all(gz == cmplx(0.125d0 * np * (np + 1), -0.5d0 * np, c_double_complex)), 'complex double acc')
    call check(all(gc == cmplx(0.5 * np * (np + 1), 0.5 * np, c_float_complex)), 'complex float acc')
    call check(all(gs == 0.75 * np), 'float acc')
    call accrete_array_free(ai)
    call accrete_array_free(al)
    call accrete_array_free(az)
    call accrete_array_free(ac)
    call accrete_array_free(as)
  end subroutine

  ! 5000 tasks under contention: each handed out exactly once.
  subroutine test_counter()
    integer(c_int64_t), parameter :: tasks = 5000
    type(accrete_counter) :: c
    type(accrete_array) :: seen
    integer(c_int64_t) :: t, one(1, 1), got(tasks, 1)
    call accrete_counter_create(c, 1_c_int64_t)
    call accrete_array_create_block(seen, ACCRETE_INT64, tasks, 1_c_int64_t)
    call accrete_array_zero(seen)
    one = 1
    do
      t = accrete_counter_fetch_add(c)
      if (t > tasks) exit
      call accrete_array_acc(seen, [t, 1_c_int64_t], [t, 1_c_int64_t], one)
    end do
    call accrete_array_sync(seen)
    call accrete_array_get(seen, [1_c_int64_t, 1_c_int64_t], [tasks, 1_c_int64_t], got)
    call check(all(got == 1), 'counter: every task once')
    call accrete_counter_reset(c, 7_c_int64_t)
    call check(accrete_counter_fetch_add(c, 0_c_int64_t) == 7, 'counter reset')
    call accrete_array_sync(seen)
    call accrete_counter_free(c)
    call accrete_array_free(seen)
  end subroutine

  ! Every rank adds a symmetric 3 x 3 block on indices {p+1, p+3, p+5} (1-based);
  ! fill_lower mirrors the upper triangle.
  subroutine test_matrix()
    integer(c_int64_t), parameter :: n = 13
    type(accrete_matrix) :: h
    real(c_double) :: blk(3, 3), want(n, n), v
    real(c_double), pointer :: loc(:, :)
    integer(c_int64_t) :: ix(3), i, j, lld, lr, lc
    integer :: a, b
    integer(c_int) :: desc(9)
    call accrete_matrix_create(h, ACCRETE_DOUBLE, n, n, mb=2_c_int64_t, nb=3_c_int64_t)
    want = 0
    do p = 0, np - 1
      ix = [p + 1, p + 3, p + 5]
      do b = 1, 3
        do a = 1, 3
          blk(a, b) = 0.25d0 * (a + b + p)
          if (ix(a) <= ix(b)) want(ix(a), ix(b)) = want(ix(a), ix(b)) + blk(a, b)
        end do
      end do
      if (p == me) call accrete_matrix_update_symmetric(h, blk, ix)
    end do
    call accrete_matrix_commit(h)
    call accrete_matrix_fill_lower(h)
    do j = 1, n
      do i = 1, j - 1
        want(j, i) = want(i, j)
      end do
    end do
    do j = 1, n
      do i = 1, n
        if (mod(i + j, int(np, c_int64_t)) /= me) cycle
        call accrete_matrix_get(h, i, j, v)
        call check(v == want(i, j), 'matrix element')
      end do
    end do
    call accrete_matrix_local(h, loc)
    call accrete_matrix_local_shape(h, lld, lr, lc)
    call accrete_matrix_descriptor(h, desc)
    call check(size(loc, 1) == lld .and. size(loc, 2) == lc .and. desc(9) == lld, 'local view and descriptor')
    call accrete_matrix_free(h)
  end subroutine

  ! Complex: every rank adds a Hermitian 2 x 2 block on {p+1, p+2}; fill_lower
  ! mirrors conjugates.
  subroutine test_matrix_complex()
    integer(c_int64_t), parameter :: n = 7
    type(accrete_matrix) :: h
    complex(c_double_complex) :: blk(2, 2), want(n, n), v
    integer(c_int64_t) :: ix(2), i, j
    call accrete_matrix_create(h, ACCRETE_COMPLEX_DOUBLE, n, n, mb=2_c_int64_t, nb=2_c_int64_t)
    want = 0
    do p = 0, np - 1
      ix = [mod(p, 6) + 1, mod(p, 6) + 2]
      blk(1, 1) = cmplx(p + 1, 0, c_double_complex)
      blk(2, 2) = cmplx(0.5d0, 0, c_double_complex)
      blk(1, 2) = cmplx(0.25d0 * p, 1.5d0, c_double_complex)
      blk(2, 1) = conjg(blk(1, 2))
      want(ix(1), ix(1)) = want(ix(1), ix(1)) + blk(1, 1)
      want(ix(2), ix(2)) = want(ix(2), ix(2)) + blk(2, 2)
      want(ix(1), ix(2)) = want(ix(1), ix(2)) + blk(1, 2)
      if (p == me) call accrete_matrix_update_symmetric(h, blk, ix)
    end do
    call accrete_matrix_commit(h)
    call accrete_matrix_fill_lower(h)
    do j = 1, n
      do i = 1, j - 1
        want(j, i) = conjg(want(i, j))
      end do
    end do
    do j = 1, n
      do i = 1, n
        call accrete_matrix_get(h, i, j, v)
        call check(v == want(i, j), 'complex matrix element')
      end do
    end do
    call accrete_matrix_free(h)
  end subroutine

  subroutine test_errors()
    type(accrete_array) :: a
    type(accrete_matrix) :: h
    real(c_double) :: buf(4, 4)
    real(c_float) :: fbuf(2, 2)
    real(c_double), pointer :: loc(:, :)
    call accrete_array_create_block(a, ACCRETE_DOUBLE, 4_c_int64_t, 4_c_int64_t)
    ! A patch past the end is named as such before any buffer check.
    call accrete_array_put(a, [1_c_int64_t, 1_c_int64_t], [5_c_int64_t, 1_c_int64_t], buf, ierr)
    call check(has_error(ACCRETE_ERR_ARG, 'accrete_array_put: the patch (1:5, 1:1) is outside the 4 x 4 array'), &
               'patch past the end')
    call accrete_array_put(a, [1_c_int64_t, 1_c_int64_t], [5_c_int64_t, 1_c_int64_t], buf(1:2, 1:1), ierr)
    call check(has_error(ACCRETE_ERR_ARG, 'is outside'), 'patch past the end, short buffer')
    call accrete_array_put(a, [1_c_int64_t, 1_c_int64_t], [3_c_int64_t, 2_c_int64_t], buf(1:2, 1:2), ierr)
    call check(has_error(ACCRETE_ERR_ARG, 'the buffer is 2 x 2, smaller than the patch, 3 x 2'), 'short buffer')
    call accrete_array_get(a, [0_c_int64_t, 1_c_int64_t], [1_c_int64_t, 1_c_int64_t], buf, ierr)
    call check(has_error(ACCRETE_ERR_ARG, 'the patch (0:1, 1:1) is outside'), 'row 0')
    p = accrete_array_locate(a, 5_c_int64_t, 1_c_int64_t, ierr)
    call check(has_error(ACCRETE_ERR_ARG, 'accrete_array_locate: row index 4'), 'locate past the end')
    call accrete_array_put(a, [1_c_int64_t, 1_c_int64_t], [2_c_int64_t, 2_c_int64_t], fbuf, ierr)
    call check(has_error(ACCRETE_ERR_ARG, 'dtype 0'), 'wrong type')
    call accrete_array_release(a, ierr)
    call check(ierr == ACCRETE_ERR_STATE, 'release without access')
    call accrete_array_access(a, loc)
    call accrete_array_release_update(a)
    call accrete_array_free(a)
    call accrete_array_free(a, ierr)
    call check(has_error(ACCRETE_ERR_ARG, 'null handle'), 'double free')
    call accrete_matrix_create(h, ACCRETE_INT32, 4_c_int64_t, 4_c_int64_t, ierr=ierr)
    call check(ierr == ACCRETE_ERR_ARG, 'integer convergent_matrix')
    call accrete_matrix_create(h, ACCRETE_FLOAT, 4_c_int64_t, 4_c_int64_t)
    call accrete_matrix_update(h, fbuf, [1_c_int64_t, 5_c_int64_t], [1_c_int64_t, 2_c_int64_t], ierr)
    call check(has_error(ACCRETE_ERR_ARG, 'row index 4'), 'index past the end')
    call accrete_matrix_update(h, buf, [1_c_int64_t], [1_c_int64_t], ierr)
    call check(ierr == ACCRETE_ERR_ARG, 'double block into a float matrix')
    call accrete_matrix_load(h, 'no/such/file.bin', ierr)
    call check(has_error(ACCRETE_ERR_IO, 'no/such/file.bin'), 'missing file')
    call accrete_matrix_free(h)
  end subroutine

  ! Every local element is the global one its 1-based indices name:
  ! A(i, j) = 1000 i + j, written through put / update, read in place.
  subroutine test_local_indices()
    type(accrete_array) :: a
    type(accrete_matrix) :: h
    real(c_double) :: all(11, 5)
    real(c_double), pointer :: loc(:, :)
    integer(c_int64_t), allocatable :: rows(:), cols(:)
    integer(c_int64_t) :: i, j, lld, lr, lc, ix(11), jx(5)
    do j = 1, 5
      do i = 1, 11
        all(i, j) = 1000 * i + j
      end do
    end do
    call accrete_array_create_block_cyclic(a, ACCRETE_DOUBLE, 11_c_int64_t, 5_c_int64_t, 2_c_int64_t, 2_c_int64_t)
    if (me == 0) call accrete_array_put(a, [1_c_int64_t, 1_c_int64_t], [11_c_int64_t, 5_c_int64_t], all)
    call accrete_array_sync(a)
    call accrete_array_local_indices(a, rows, cols)
    call accrete_array_local_shape(a, lr, lc)
    call check(size(rows) == lr .and. size(cols) == lc, 'array local shape')
    call accrete_array_access(a, loc)
    call check_part(loc, all, rows, cols, 'array local element')
    call accrete_array_release(a)
    call accrete_array_free(a)
    call accrete_matrix_create(h, ACCRETE_DOUBLE, 11_c_int64_t, 5_c_int64_t, mb=3_c_int64_t, nb=2_c_int64_t)
    ix = [(i, i = 1, 11)]
    jx = [(j, j = 1, 5)]
    if (me == 0) call accrete_matrix_update(h, all, ix, jx)
    call accrete_matrix_commit(h)
    call accrete_matrix_local_indices(h, rows, cols)
    call accrete_matrix_local_shape(h, lld, lr, lc)
    call check(size(rows) == lr .and. size(cols) == lc, 'matrix local shape')
    call accrete_matrix_local(h, loc)
    call check_part(loc, all, rows, cols, 'matrix local element')
    call accrete_matrix_free(h)
  end subroutine

  ! Local element (li, lj) of `loc` is all(rows(li), cols(lj)).
  subroutine check_part(loc, all, rows, cols, what)
    real(c_double), intent(in) :: loc(:, :), all(:, :)
    integer(c_int64_t), intent(in) :: rows(:), cols(:)
    character(len=*), intent(in) :: what
    integer :: li, lj
    do lj = 1, size(cols)
      do li = 1, size(rows)
        call check(loc(li, lj) == all(rows(li), cols(lj)), what)
      end do
    end do
  end subroutine
end program
