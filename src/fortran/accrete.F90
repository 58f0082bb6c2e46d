! The Fortran 2008 module `accrete`: the C API (include/accrete/c/accrete.h)
! through ISO_C_BINDING, in Fortran's conventions.
!
!  - Global indices are 1-based, as in Global Arrays' and ScaLAPACK's Fortran
!    interfaces. Patches are lo(2), hi(2), inclusive (NGA_Put's convention);
!    hi < lo in either dimension is an empty patch. Ranks stay 0-based (MPI).
!  - Every procedure takes an optional `ierr`. When it is present, it gets
!    ACCRETE_SUCCESS or an error code and the procedure returns; when it is
!    absent, an error prints accrete_last_error() and stops the program
!    (error stop), the way MPI's default error handler aborts. Messages come
!    from the C++ layer and so name 0-based indices (the Fortran index - 1).
!  - Buffers are contiguous arrays of the object's element type (an array
!    section is copied in and out by the compiler); a buffer of another type
!    is rejected with ACCRETE_ERR_ARG.
!  - Semantics (completion, atomicity, progress, threads) are those of the
!    C++ classes: docs/semantics.md.
module accrete
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: error_unit
  implicit none
  private

  integer, parameter, public :: ACCRETE_SUCCESS = 0, ACCRETE_ERR_ARG = 1, ACCRETE_ERR_STATE = 2, &
                                ACCRETE_ERR_NOMEM = 3, ACCRETE_ERR_IO = 4, ACCRETE_ERR_RUNTIME = 5, &
                                ACCRETE_ERR_UNSUPPORTED = 6
  integer, parameter, public :: ACCRETE_FLOAT = 0, ACCRETE_DOUBLE = 1, ACCRETE_COMPLEX_FLOAT = 2, &
                                ACCRETE_COMPLEX_DOUBLE = 3, ACCRETE_INT32 = 4, ACCRETE_INT64 = 5
  integer, parameter, public :: ACCRETE_STRATEGY_PACKETS = 0, ACCRETE_STRATEGY_ALLTOALL = 1

  type, public :: accrete_matrix
    type(c_ptr) :: h = c_null_ptr
    integer :: dtype = -1
  end type
  type, public :: accrete_sparse
    type(c_ptr) :: h = c_null_ptr
    integer :: dtype = -1
  end type
  type, public :: accrete_array
    type(c_ptr) :: h = c_null_ptr
    integer :: dtype = -1
  end type
  ! What an empty CSR block's pointers point at (C may give no address then).
  integer(c_int32_t), target, save :: no_col(0)
  integer(c_int64_t), target, save :: no_map(0)
  real(c_float), target, save :: no_value_r4(0)
  real(c_double), target, save :: no_value_r8(0)
  complex(c_float_complex), target, save :: no_value_c4(0)
  complex(c_double_complex), target, save :: no_value_c8(0)
  ! accrete_sparse_options of the C header (the same layout).
  type, bind(C) :: c_sparse_options
    integer(c_int) :: strategy
    integer(c_int64_t) :: buffer_cap, coalesce_bytes, seed
    integer(c_int) :: reproducible, merge, growing_pattern, cache_slots
  end type
  type, public :: accrete_counter
    type(c_ptr) :: h = c_null_ptr
  end type

  public :: accrete_init, accrete_finalize, accrete_initialized, accrete_rank_me, accrete_rank_n, &
            accrete_barrier, accrete_last_error
  public :: accrete_matrix_create, accrete_matrix_free, accrete_matrix_update, accrete_matrix_update_symmetric, &
            accrete_matrix_commit, accrete_matrix_reopen, accrete_matrix_reset, accrete_matrix_fill_lower, &
            accrete_matrix_symmetrize, accrete_matrix_local, accrete_matrix_local_shape, accrete_matrix_get, &
            accrete_matrix_local_indices, accrete_array_local_shape, accrete_array_local_indices, &
            accrete_matrix_descriptor, accrete_matrix_save, accrete_matrix_load
  public :: accrete_sparse_create, accrete_sparse_free, accrete_sparse_update, accrete_sparse_commit, &
            accrete_sparse_reopen, accrete_sparse_reset, accrete_sparse_ranges, accrete_sparse_get, accrete_sparse_block
  public :: accrete_array_create_block, accrete_array_create_irregular, accrete_array_create_block_cyclic, &
            accrete_array_create_element_cyclic, accrete_array_free, accrete_array_shape, accrete_array_locate, &
            accrete_array_put, accrete_array_get, accrete_array_acc, accrete_array_flush, accrete_array_sync, &
            accrete_array_zero, accrete_array_access, accrete_array_release, accrete_array_release_update, &
            accrete_array_norm, accrete_array_save, accrete_array_load
  public :: accrete_counter_create, accrete_counter_free, accrete_counter_fetch_add, accrete_counter_reset

  ! ---- the C API ---------------------------------------------------------------------------
  interface
    function c_last_error() bind(C, name="accrete_last_error")
      import :: c_ptr
      type(c_ptr) :: c_last_error
    end function
    integer(c_int) function c_set_error(code, msg) bind(C, name="accrete_set_error")
      import :: c_int, c_char
      integer(c_int), value :: code
      character(kind=c_char), intent(in) :: msg(*)
    end function
    integer(c_int) function c_init() bind(C, name="accrete_init")
      import :: c_int
    end function
    integer(c_int) function c_finalize() bind(C, name="accrete_finalize")
      import :: c_int
    end function
    integer(c_int) function c_initialized() bind(C, name="accrete_initialized")
      import :: c_int
    end function
    integer(c_int) function c_rank_me(r) bind(C, name="accrete_rank_me")
      import :: c_int
      integer(c_int), intent(out) :: r
    end function
    integer(c_int) function c_rank_n(r) bind(C, name="accrete_rank_n")
      import :: c_int
      integer(c_int), intent(out) :: r
    end function
    integer(c_int) function c_barrier() bind(C, name="accrete_barrier")
      import :: c_int
    end function
    ! Every function taking only a handle (commit, reopen, flush, ...).
    integer(c_int) function c_handle_fn(h) bind(C)
      import :: c_int, c_ptr
      type(c_ptr), value :: h
    end function
    integer(c_int) function c_free_fn(h) bind(C)
      import :: c_int, c_ptr
      type(c_ptr), intent(inout) :: h
    end function
    integer(c_int) function c_path_fn(h, path) bind(C)
      import :: c_int, c_ptr, c_char
      type(c_ptr), value :: h
      character(kind=c_char), intent(in) :: path(*)
    end function
    integer(c_int) function c_matrix_create(out, dtype, m, n, pr, pc, mb, nb, opts) &
        bind(C, name="accrete_matrix_create")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), intent(out) :: out
      integer(c_int), value :: dtype, pr, pc
      integer(c_int64_t), value :: m, n, mb, nb
      type(c_ptr), value :: opts
    end function
    integer(c_int) function c_matrix_update(h, block, ld, rows, nrows, cols, ncols, layout) &
        bind(C, name="accrete_matrix_update")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: h, block
      integer(c_int64_t), value :: ld, nrows, ncols
      integer(c_int64_t), intent(in) :: rows(*), cols(*)
      integer(c_int), value :: layout
    end function
    integer(c_int) function c_sparse_default_options(opts) bind(C, name="accrete_sparse_default_options")
      import :: c_int, c_sparse_options
      type(c_sparse_options), intent(out) :: opts
    end function
    integer(c_int) function c_sparse_create(out, dtype, local_rows, local_cols, opts) &
        bind(C, name="accrete_sparse_create")
      import :: c_int, c_ptr, c_int64_t, c_sparse_options
      type(c_ptr), intent(out) :: out
      integer(c_int), value :: dtype
      integer(c_int64_t), value :: local_rows, local_cols
      type(c_sparse_options), intent(in) :: opts
    end function
    integer(c_int) function c_sparse_update(h, block, ld, rows, nrows, cols, ncols, layout) &
        bind(C, name="accrete_sparse_update")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: h, block
      integer(c_int64_t), value :: ld, nrows, ncols
      integer(c_int64_t), intent(in) :: rows(*), cols(*)
      integer(c_int), value :: layout
    end function
    integer(c_int) function c_sparse_ranges(h, m, n, r0, r1, c0, c1) bind(C, name="accrete_sparse_ranges")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: h
      integer(c_int64_t), intent(out) :: m, n, r0, r1, c0, c1
    end function
    integer(c_int) function c_sparse_get(h, i, j, v) bind(C, name="accrete_sparse_get")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: h, v
      integer(c_int64_t), value :: i, j
    end function
    integer(c_int) function c_sparse_block(h, offdiag, row_ptr, col, value, nnz, col_map, ncols_map) &
        bind(C, name="accrete_sparse_block")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: h
      integer(c_int), value :: offdiag
      type(c_ptr), intent(out) :: row_ptr, col, value, col_map
      integer(c_int64_t), intent(out) :: nnz, ncols_map
    end function
    integer(c_int) function c_matrix_update_symmetric(h, block, ld, ix, n, layout) &
        bind(C, name="accrete_matrix_update_symmetric")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: h, block
      integer(c_int64_t), value :: ld, n
      integer(c_int64_t), intent(in) :: ix(*)
      integer(c_int), value :: layout
    end function
    ! Two interfaces with one signature: declared through one shared interface
    ! (as the procedures below are), gfortran 12 passed h by reference to
    ! these two, which crashed the test; not root-caused.
    integer(c_int) function c_matrix_local_indices(h, rows, cols) bind(C, name="accrete_matrix_local_indices")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: h
      integer(c_int64_t), intent(out) :: rows(*), cols(*)
    end function
    integer(c_int) function c_array_local_indices(h, rows, cols) bind(C, name="accrete_array_local_indices")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: h
      integer(c_int64_t), intent(out) :: rows(*), cols(*)
    end function
    integer(c_int) function c_array_local_shape(h, lrows, lcols) bind(C, name="accrete_array_local_shape")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: h
      integer(c_int64_t), intent(out) :: lrows, lcols
    end function
    integer(c_int) function c_matrix_local(h, p, lld, lrows, lcols) bind(C, name="accrete_matrix_local")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: h
      type(c_ptr), intent(out) :: p
      integer(c_int64_t), intent(out) :: lld, lrows, lcols
    end function
    integer(c_int) function c_array_access(h, p, lld, lrows, lcols) bind(C, name="accrete_array_access")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: h
      type(c_ptr), intent(out) :: p
      integer(c_int64_t), intent(out) :: lld, lrows, lcols
    end function
    integer(c_int) function c_matrix_get(h, i, j, v) bind(C, name="accrete_matrix_get")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: h, v
      integer(c_int64_t), value :: i, j
    end function
    integer(c_int) function c_matrix_descriptor(h, desc) bind(C, name="accrete_matrix_descriptor")
      import :: c_int, c_ptr
      type(c_ptr), value :: h
      integer(c_int), intent(out) :: desc(9)
    end function
    ! create_block and create_element_cyclic share this signature.
    integer(c_int) function c_array_create_grid(out, dtype, rows, cols, pr, pc) bind(C)
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), intent(out) :: out
      integer(c_int), value :: dtype, pr, pc
      integer(c_int64_t), value :: rows, cols
    end function
    integer(c_int) function c_array_create_irregular(out, dtype, rb, nrb, cb, ncb) &
        bind(C, name="accrete_array_create_irregular")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), intent(out) :: out
      integer(c_int), value :: dtype, nrb, ncb
      integer(c_int64_t), intent(in) :: rb(*), cb(*)
    end function
    integer(c_int) function c_array_create_block_cyclic(out, dtype, rows, cols, mb, nb, pr, pc) &
        bind(C, name="accrete_array_create_block_cyclic")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), intent(out) :: out
      integer(c_int), value :: dtype, pr, pc
      integer(c_int64_t), value :: rows, cols, mb, nb
    end function
    integer(c_int) function c_array_shape(h, rows, cols) bind(C, name="accrete_array_shape")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: h
      integer(c_int64_t), intent(out) :: rows, cols
    end function
    integer(c_int) function c_array_locate(h, i, j, rank) bind(C, name="accrete_array_locate")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: h
      integer(c_int64_t), value :: i, j
      integer(c_int), intent(out) :: rank
    end function
    ! put and get share one signature (get's buffer is written).
    integer(c_int) function c_array_xfer(h, r0, r1, c0, c1, buf, ld) bind(C)
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: h, buf
      integer(c_int64_t), value :: r0, r1, c0, c1, ld
    end function
    integer(c_int) function c_array_acc(h, r0, r1, c0, c1, buf, ld, alpha) bind(C, name="accrete_array_acc")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: h, buf, alpha
      integer(c_int64_t), value :: r0, r1, c0, c1, ld
    end function
    integer(c_int) function c_array_norm(h, nrm) bind(C, name="accrete_array_norm")
      import :: c_int, c_ptr, c_double
      type(c_ptr), value :: h
      real(c_double), intent(out) :: nrm
    end function
    integer(c_int) function c_counter_create(out, initial) bind(C, name="accrete_counter_create")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), intent(out) :: out
      integer(c_int64_t), value :: initial
    end function
    integer(c_int) function c_counter_fetch_add(h, n, old) bind(C, name="accrete_counter_fetch_add")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: h
      integer(c_int64_t), value :: n
      integer(c_int64_t), intent(out) :: old
    end function
    integer(c_int) function c_counter_reset(h, v) bind(C, name="accrete_counter_reset")
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: h
      integer(c_int64_t), value :: v
    end function
  end interface

  ! The C functions that share an interface above, by name.
  procedure(c_handle_fn), bind(C, name="accrete_matrix_commit") :: c_matrix_commit
  procedure(c_handle_fn), bind(C, name="accrete_matrix_reopen") :: c_matrix_reopen
  procedure(c_handle_fn), bind(C, name="accrete_matrix_reset") :: c_matrix_reset
  procedure(c_handle_fn), bind(C, name="accrete_matrix_fill_lower") :: c_matrix_fill_lower
  procedure(c_handle_fn), bind(C, name="accrete_matrix_symmetrize") :: c_matrix_symmetrize
  procedure(c_handle_fn), bind(C, name="accrete_sparse_commit") :: c_sparse_commit
  procedure(c_handle_fn), bind(C, name="accrete_sparse_reopen") :: c_sparse_reopen
  procedure(c_handle_fn), bind(C, name="accrete_sparse_reset") :: c_sparse_reset
  procedure(c_handle_fn), bind(C, name="accrete_array_flush") :: c_array_flush
  procedure(c_handle_fn), bind(C, name="accrete_array_sync") :: c_array_sync
  procedure(c_handle_fn), bind(C, name="accrete_array_zero") :: c_array_zero
  procedure(c_handle_fn), bind(C, name="accrete_array_release") :: c_array_release
  procedure(c_handle_fn), bind(C, name="accrete_array_release_update") :: c_array_release_update
  procedure(c_free_fn), bind(C, name="accrete_matrix_free") :: c_matrix_free
  procedure(c_free_fn), bind(C, name="accrete_sparse_free") :: c_sparse_free
  procedure(c_free_fn), bind(C, name="accrete_array_free") :: c_array_free
  procedure(c_free_fn), bind(C, name="accrete_counter_free") :: c_counter_free
  procedure(c_path_fn), bind(C, name="accrete_matrix_save") :: c_matrix_save
  procedure(c_path_fn), bind(C, name="accrete_matrix_load") :: c_matrix_load
  procedure(c_path_fn), bind(C, name="accrete_array_save") :: c_array_save
  procedure(c_path_fn), bind(C, name="accrete_array_load") :: c_array_load
  procedure(c_array_create_grid), bind(C, name="accrete_array_create_block") :: c_array_create_block
  procedure(c_array_create_grid), bind(C, name="accrete_array_create_element_cyclic") :: c_array_create_element_cyclic
  procedure(c_array_xfer), bind(C, name="accrete_array_put") :: c_array_put
  procedure(c_array_xfer), bind(C, name="accrete_array_get") :: c_array_get

  ! ---- typed generics (specifics stamped out by accrete_typed.inc) ------------------------
  interface accrete_matrix_update
    module procedure matrix_update_r4, matrix_update_r8, matrix_update_c4, matrix_update_c8
  end interface
  interface accrete_matrix_update_symmetric
    module procedure matrix_update_symmetric_r4, matrix_update_symmetric_r8, matrix_update_symmetric_c4, matrix_update_symmetric_c8
  end interface
  interface accrete_matrix_local
    module procedure matrix_local_r4, matrix_local_r8, matrix_local_c4, matrix_local_c8
  end interface
  interface accrete_matrix_get
    module procedure matrix_get_r4, matrix_get_r8, matrix_get_c4, matrix_get_c8
  end interface
  interface accrete_sparse_update
    module procedure sparse_update_r4, sparse_update_r8, sparse_update_c4, sparse_update_c8
  end interface
  interface accrete_sparse_get
    module procedure sparse_get_r4, sparse_get_r8, sparse_get_c4, sparse_get_c8
  end interface
  interface accrete_sparse_block
    module procedure sparse_block_r4, sparse_block_r8, sparse_block_c4, sparse_block_c8
  end interface
  interface accrete_array_put
    module procedure array_put_r4, array_put_r8, array_put_c4, array_put_c8, array_put_i4, array_put_i8
  end interface
  interface accrete_array_get
    module procedure array_get_r4, array_get_r8, array_get_c4, array_get_c8, array_get_i4, array_get_i8
  end interface
  interface accrete_array_acc
    module procedure array_acc_r4, array_acc_r8, array_acc_c4, array_acc_c8, array_acc_i4, array_acc_i8
  end interface
  interface accrete_array_access
    module procedure array_access_r4, array_access_r8, array_access_c4, array_access_c8, array_access_i4, &
                     array_access_i8
  end interface

contains

  ! ---- errors ------------------------------------------------------------------------------
  function accrete_last_error() result(msg)
    character(len=:), allocatable :: msg
    character(kind=c_char), pointer :: s(:)
    type(c_ptr) :: p
    integer :: n
    p = c_last_error()
    call c_f_pointer(p, s, [huge(0)])
    n = 0
    do while (s(n + 1) /= c_null_char)
      n = n + 1
    end do
    allocate (character(len=n) :: msg)
    msg = transfer(s(1:n), msg)
  end function

  ! Reports a status: into ierr when given, else a message and error stop.
  subroutine finish(st, ierr)
    integer(c_int), intent(in) :: st
    integer, intent(out), optional :: ierr
    if (present(ierr)) then
      ierr = int(st)
    else if (st /= ACCRETE_SUCCESS) then
      write (error_unit, '(a,i0,2a)') 'accrete: error ', st, ': ', accrete_last_error()
      error stop 1
    end if
  end subroutine

  integer(c_int) function type_mismatch(what, want, got)
    character(len=*), intent(in) :: what
    integer, intent(in) :: want, got
    character(len=200) :: msg
    write (msg, '(a,a,i0,a,i0)') what, ': the buffer''s type is accrete dtype ', got, &
      ' but the object holds dtype ', want
    type_mismatch = c_set_error(int(ACCRETE_ERR_ARG, c_int), trim(msg)//c_null_char)
  end function

  function cstr(s)
    character(len=*), intent(in) :: s
    character(kind=c_char, len=len(s) + 1) :: cstr
    cstr = s//c_null_char
  end function

  ! ---- runtime -----------------------------------------------------------------------------
  subroutine accrete_init(ierr)
    integer, intent(out), optional :: ierr
    call finish(c_init(), ierr)
  end subroutine
  subroutine accrete_finalize(ierr)
    integer, intent(out), optional :: ierr
    call finish(c_finalize(), ierr)
  end subroutine
  logical function accrete_initialized()
    accrete_initialized = c_initialized() /= 0
  end function
  integer function accrete_rank_me()
    integer(c_int) :: r
    call finish(c_rank_me(r))
    accrete_rank_me = int(r)
  end function
  integer function accrete_rank_n()
    integer(c_int) :: r
    call finish(c_rank_n(r))
    accrete_rank_n = int(r)
  end function
  subroutine accrete_barrier(ierr)
    integer, intent(out), optional :: ierr
    call finish(c_barrier(), ierr)
  end subroutine

  ! ---- the one-line wrappers: one C call and the status ---------------------------------------
  ! (cpp macros: each expands to a complete subroutine on one line)
#define HANDLE_OP(NAME, OBJ, CFN) \
  subroutine NAME(a, ierr); type(OBJ), intent(in) :: a; integer, intent(out), optional :: ierr; \
  call finish(CFN(a%h), ierr); end subroutine
#define FREE_OP(NAME, OBJ, CFN) \
  subroutine NAME(a, ierr); type(OBJ), intent(inout) :: a; integer, intent(out), optional :: ierr; \
  call finish(CFN(a%h), ierr); end subroutine
#define PATH_OP(NAME, OBJ, CFN) \
  subroutine NAME(a, path, ierr); type(OBJ), intent(in) :: a; character(len=*), intent(in) :: path; \
  integer, intent(out), optional :: ierr; call finish(CFN(a%h, cstr(path)), ierr); end subroutine

  ! Collective: frees the object (then a%h is null).
  FREE_OP(accrete_matrix_free, accrete_matrix, c_matrix_free)
  FREE_OP(accrete_array_free, accrete_array, c_array_free)
  FREE_OP(accrete_sparse_free, accrete_sparse, c_sparse_free)
  ! Collective: ends the round (lays the pattern out in round 0); reopen: done
  ! reading; reset (collective): every value zero, the pattern kept.
  HANDLE_OP(accrete_sparse_commit, accrete_sparse, c_sparse_commit)
  HANDLE_OP(accrete_sparse_reopen, accrete_sparse, c_sparse_reopen)
  HANDLE_OP(accrete_sparse_reset, accrete_sparse, c_sparse_reset)
  ! Collective: ends the round; every update issued before it anywhere is applied.
  HANDLE_OP(accrete_matrix_commit, accrete_matrix, c_matrix_commit)
  ! This process is done reading its committed part.
  HANDLE_OP(accrete_matrix_reopen, accrete_matrix, c_matrix_reopen)
  ! Collective, between rounds: every element becomes zero.
  HANDLE_OP(accrete_matrix_reset, accrete_matrix, c_matrix_reset)
  ! Collective, after commit: A(j, i) = A(i, j) for i < j; A = (A + A^T) / 2.
  HANDLE_OP(accrete_matrix_fill_lower, accrete_matrix, c_matrix_fill_lower)
  HANDLE_OP(accrete_matrix_symmetrize, accrete_matrix, c_matrix_symmetrize)
  ! Remote completion of this process's puts and accs; sync: everyone's, then a barrier (collective).
  HANDLE_OP(accrete_array_flush, accrete_array, c_array_flush)
  HANDLE_OP(accrete_array_sync, accrete_array, c_array_sync)
  HANDLE_OP(accrete_array_zero, accrete_array, c_array_zero)
  ! End an access(): read only, or written (later remote reads after a sync see the writes).
  HANDLE_OP(accrete_array_release, accrete_array, c_array_release)
  HANDLE_OP(accrete_array_release_update, accrete_array, c_array_release_update)
  ! Collective MPI-IO: the whole matrix column-major, raw elements (one format for both).
  PATH_OP(accrete_matrix_save, accrete_matrix, c_matrix_save)
  PATH_OP(accrete_matrix_load, accrete_matrix, c_matrix_load)
  PATH_OP(accrete_array_save, accrete_array, c_array_save)
  PATH_OP(accrete_array_load, accrete_array, c_array_load)

  ! ---- convergent_matrix ---------------------------------------------------------------------
  ! A dense m x n matrix of ACCRETE_FLOAT, ACCRETE_DOUBLE or ACCRETE_COMPLEX_FLOAT/DOUBLE
  ! (Hermitian for fill_lower and symmetrize), block-cyclic over
  ! a pr x pc grid (default: the squarest) with mb x nb blocks (default 64).
  subroutine accrete_matrix_create(a, dtype, m, n, pr, pc, mb, nb, ierr)
    type(accrete_matrix), intent(out) :: a
    integer, intent(in) :: dtype
    integer(c_int64_t), intent(in) :: m, n
    integer, intent(in), optional :: pr, pc
    integer(c_int64_t), intent(in), optional :: mb, nb
    integer, intent(out), optional :: ierr
    a%dtype = dtype
    call finish(c_matrix_create(a%h, int(dtype, c_int), m, n, grid_dim(pr), grid_dim(pc), or_default(mb, 64_c_int64_t), &
                                or_default(nb, 64_c_int64_t), c_null_ptr), ierr)
  end subroutine
  ! This process's part: lld x local_cols storage of which local_rows rows are used.
  subroutine accrete_matrix_local_shape(a, lld, local_rows, local_cols, ierr)
    type(accrete_matrix), intent(in) :: a
    integer(c_int64_t), intent(out) :: lld, local_rows, local_cols
    integer, intent(out), optional :: ierr
    type(c_ptr) :: p
    call finish(c_matrix_local(a%h, p, lld, local_rows, local_cols), ierr)
  end subroutine
  ! The global indices (1-based) of this process's part: local element
  ! (li, lj) is A(rows(li), cols(lj)). Non-collective.
  subroutine accrete_matrix_local_indices(a, rows, cols, ierr)
    type(accrete_matrix), intent(in) :: a
    integer(c_int64_t), allocatable, intent(out) :: rows(:), cols(:)
    integer, intent(out), optional :: ierr
    integer(c_int64_t) :: lld, lrows, lcols
    type(c_ptr) :: p
    integer(c_int) :: st
    lrows = 0
    lcols = 0
    st = c_matrix_local(a%h, p, lld, lrows, lcols)
    allocate (rows(max(lrows, 0_c_int64_t)), cols(max(lcols, 0_c_int64_t)))
    if (st == ACCRETE_SUCCESS) st = c_matrix_local_indices(a%h, rows, cols)
    rows = rows + 1
    cols = cols + 1
    call finish(st, ierr)
  end subroutine
  subroutine accrete_matrix_descriptor(a, desc, ierr)
    type(accrete_matrix), intent(in) :: a
    integer(c_int), intent(out) :: desc(9)
    integer, intent(out), optional :: ierr
    call finish(c_matrix_descriptor(a%h, desc), ierr)
  end subroutine

  ! ---- sparse_matrix ---------------------------------------------------------------------------
  ! Collective: a sparse matrix of ACCRETE_FLOAT, ACCRETE_DOUBLE or
  ! ACCRETE_COMPLEX_FLOAT/DOUBLE; this process owns local_rows consecutive rows
  ! and local_cols diagonal columns, in rank order (PETSc's ownership). Round 0
  ! discovers the pattern; the first commit freezes it unless growing_pattern.
  subroutine accrete_sparse_create(a, dtype, local_rows, local_cols, reproducible, growing_pattern, ierr)
    type(accrete_sparse), intent(out) :: a
    integer, intent(in) :: dtype
    integer(c_int64_t), intent(in) :: local_rows, local_cols
    logical, intent(in), optional :: reproducible, growing_pattern
    integer, intent(out), optional :: ierr
    type(c_sparse_options) :: o
    integer(c_int) :: st
    a%dtype = dtype
    st = c_sparse_default_options(o)
    if (present(reproducible)) o%reproducible = merge(1_c_int, 0_c_int, reproducible)
    if (present(growing_pattern)) o%growing_pattern = merge(1_c_int, 0_c_int, growing_pattern)
    if (st == ACCRETE_SUCCESS) st = c_sparse_create(a%h, int(dtype, c_int), local_rows, local_cols, o)
    call finish(st, ierr)
  end subroutine
  ! The global shape (m x n) and this process's rows row_lo..row_hi and
  ! diagonal columns col_lo..col_hi (1-based, inclusive; hi < lo: none).
  subroutine accrete_sparse_ranges(a, m, n, row_lo, row_hi, col_lo, col_hi, ierr)
    type(accrete_sparse), intent(in) :: a
    integer(c_int64_t), intent(out) :: m, n, row_lo, row_hi, col_lo, col_hi
    integer, intent(out), optional :: ierr
    integer(c_int64_t) :: r0, r1, c0, c1
    integer(c_int) :: st
    st = c_sparse_ranges(a%h, m, n, r0, r1, c0, c1)
    row_lo = r0 + 1
    row_hi = r1
    col_lo = c0 + 1
    col_hi = c1
    call finish(st, ierr)
  end subroutine

  ! ---- dist_array ------------------------------------------------------------------------------
#define GRID_CREATE(NAME, CFN) \
  subroutine NAME(a, dtype, rows, cols, prows, pcols, ierr); type(accrete_array), intent(out) :: a; \
  integer, intent(in) :: dtype; integer(c_int64_t), intent(in) :: rows, cols; \
  integer, intent(in), optional :: prows, pcols; integer, intent(out), optional :: ierr; a%dtype = dtype; \
  call finish(CFN(a%h, int(dtype, c_int), rows, cols, grid_dim(prows), grid_dim(pcols)), ierr); end subroutine
  ! Global Arrays' regular distribution over a prows x pcols grid (default: the squarest).
  GRID_CREATE(accrete_array_create_block, c_array_create_block)
  ! Elemental's [MC,MR]: element (i, j) on part (mod(i-1, prows), mod(j-1, pcols)).
  GRID_CREATE(accrete_array_create_element_cyclic, c_array_create_element_cyclic)
  ! Like NGA_Create_irreg: row_starts(k) is the first (1-based) row of row
  ! block k, col_starts likewise; size(row_starts) * size(col_starts) parts.
  subroutine accrete_array_create_irregular(a, dtype, rows, cols, row_starts, col_starts, ierr)
    type(accrete_array), intent(out) :: a
    integer, intent(in) :: dtype
    integer(c_int64_t), intent(in) :: rows, cols, row_starts(:), col_starts(:)
    integer, intent(out), optional :: ierr
    integer(c_int64_t) :: rb(size(row_starts) + 1), cb(size(col_starts) + 1)
    rb(1:size(row_starts)) = row_starts - 1
    rb(size(rb)) = rows
    cb(1:size(col_starts)) = col_starts - 1
    cb(size(cb)) = cols
    a%dtype = dtype
    call finish(c_array_create_irregular(a%h, int(dtype, c_int), rb, int(size(row_starts), c_int), cb, &
                                         int(size(col_starts), c_int)), ierr)
  end subroutine
  subroutine accrete_array_create_block_cyclic(a, dtype, rows, cols, mb, nb, prows, pcols, ierr)
    type(accrete_array), intent(out) :: a
    integer, intent(in) :: dtype
    integer(c_int64_t), intent(in) :: rows, cols, mb, nb
    integer, intent(in), optional :: prows, pcols
    integer, intent(out), optional :: ierr
    a%dtype = dtype
    call finish(c_array_create_block_cyclic(a%h, int(dtype, c_int), rows, cols, mb, nb, grid_dim(prows), &
                                            grid_dim(pcols)), ierr)
  end subroutine
  integer(c_int) function grid_dim(d)
    integer, intent(in), optional :: d
    grid_dim = 0
    if (present(d)) grid_dim = int(d, c_int)
  end function
  ! This process's part: local_rows x local_cols. Non-collective.
  subroutine accrete_array_local_shape(a, local_rows, local_cols, ierr)
    type(accrete_array), intent(in) :: a
    integer(c_int64_t), intent(out) :: local_rows, local_cols
    integer, intent(out), optional :: ierr
    call finish(c_array_local_shape(a%h, local_rows, local_cols), ierr)
  end subroutine
  ! The global indices (1-based) of this process's part (accrete_array_access):
  ! local element (li, lj) is A(rows(li), cols(lj)). Non-collective.
  subroutine accrete_array_local_indices(a, rows, cols, ierr)
    type(accrete_array), intent(in) :: a
    integer(c_int64_t), allocatable, intent(out) :: rows(:), cols(:)
    integer, intent(out), optional :: ierr
    integer(c_int64_t) :: lrows, lcols
    integer(c_int) :: st
    lrows = 0
    lcols = 0
    st = c_array_local_shape(a%h, lrows, lcols)
    allocate (rows(lrows), cols(lcols))
    if (st == ACCRETE_SUCCESS) st = c_array_local_indices(a%h, rows, cols)
    rows = rows + 1
    cols = cols + 1
    call finish(st, ierr)
  end subroutine
  subroutine accrete_array_shape(a, rows, cols, ierr)
    type(accrete_array), intent(in) :: a
    integer(c_int64_t), intent(out) :: rows, cols
    integer, intent(out), optional :: ierr
    call finish(c_array_shape(a%h, rows, cols), ierr)
  end subroutine
  ! The rank (0-based) that owns element (i, j) (1-based).
  integer function accrete_array_locate(a, i, j, ierr)
    type(accrete_array), intent(in) :: a
    integer(c_int64_t), intent(in) :: i, j
    integer, intent(out), optional :: ierr
    integer(c_int) :: r
    r = -1
    call finish(c_array_locate(a%h, i - 1, j - 1, r), ierr)
    accrete_array_locate = int(r)
  end function
  real(c_double) function accrete_array_norm(a, ierr)
    type(accrete_array), intent(in) :: a
    integer, intent(out), optional :: ierr
    accrete_array_norm = -1
    call finish(c_array_norm(a%h, accrete_array_norm), ierr)
  end function

  ! Patch transfer shared by every element type: lo/hi are 1-based inclusive,
  ! bshape the buffer's shape (its first extent is the leading dimension).
  integer(c_int) function checked_patch_op(op, a, lo, hi, buf, bshape, alpha, dtype, what) result(st)
    character, intent(in) :: op
    type(accrete_array), intent(in) :: a
    integer(c_int64_t), intent(in) :: lo(2), hi(2), bshape(2)
    type(c_ptr), intent(in) :: buf, alpha
    integer, intent(in) :: dtype
    character(len=*), intent(in) :: what
    integer(c_int64_t) :: r1, c1, ld, rows, cols
    character(len=200) :: msg
    if (dtype /= a%dtype .and. c_associated(a%h)) then
      st = type_mismatch(what, a%dtype, dtype)
      return
    end if
    r1 = max(hi(1), lo(1) - 1)  ! hi < lo: empty
    c1 = max(hi(2), lo(2) - 1)
    ! The patch against the array first, then the buffer against the patch.
    if (c_associated(a%h)) then  ! (a null handle is reported by the call itself)
      st = c_array_shape(a%h, rows, cols)
      if (st /= ACCRETE_SUCCESS) return
      if (r1 >= lo(1) .and. c1 >= lo(2) .and. (lo(1) < 1 .or. r1 > rows .or. lo(2) < 1 .or. c1 > cols)) then
        write (msg, '(2a,i0,a,i0,a,i0,a,i0,a,i0,a,i0,a)') what, ': the patch (', lo(1), ':', r1, ', ', lo(2), ':', &
          c1, ') is outside the ', rows, ' x ', cols, ' array (indices are 1-based)'
        st = c_set_error(int(ACCRETE_ERR_ARG, c_int), trim(msg)//c_null_char)
        return
      end if
    end if
    if (bshape(1) < r1 - lo(1) + 1 .or. bshape(2) < c1 - lo(2) + 1) then
      write (msg, '(2a,i0,a,i0,a,i0,a,i0)') what, ': the buffer is ', bshape(1), ' x ', bshape(2), &
        ', smaller than the patch, ', r1 - lo(1) + 1, ' x ', c1 - lo(2) + 1
      st = c_set_error(int(ACCRETE_ERR_ARG, c_int), trim(msg)//c_null_char)
      return
    end if
    ld = max(1_c_int64_t, bshape(1))
    select case (op)
    case ('p')
      st = c_array_put(a%h, lo(1) - 1, r1, lo(2) - 1, c1, buf, ld)
    case ('g')
      st = c_array_get(a%h, lo(1) - 1, r1, lo(2) - 1, c1, buf, ld)
    case default
      st = c_array_acc(a%h, lo(1) - 1, r1, lo(2) - 1, c1, buf, ld, alpha)
    end select
  end function

  ! ---- counter -------------------------------------------------------------------------------
  ! An optional integer argument's value, or its default.
  integer(c_int64_t) function or_default(x, default)
    integer(c_int64_t), intent(in), optional :: x
    integer(c_int64_t), intent(in) :: default
    or_default = default
    if (present(x)) or_default = x
  end function
  subroutine accrete_counter_create(c, initial, ierr)
    type(accrete_counter), intent(out) :: c
    integer(c_int64_t), intent(in), optional :: initial
    integer, intent(out), optional :: ierr
    call finish(c_counter_create(c%h, or_default(initial, 0_c_int64_t)), ierr)
  end subroutine
  subroutine accrete_counter_free(c, ierr)
    type(accrete_counter), intent(inout) :: c
    integer, intent(out), optional :: ierr
    call finish(c_counter_free(c%h), ierr)
  end subroutine
  ! Adds n (default 1) and returns the value before (NGA_Read_inc).
  integer(c_int64_t) function accrete_counter_fetch_add(c, n, ierr)
    type(accrete_counter), intent(in) :: c
    integer(c_int64_t), intent(in), optional :: n
    integer, intent(out), optional :: ierr
    accrete_counter_fetch_add = -1
    call finish(c_counter_fetch_add(c%h, or_default(n, 1_c_int64_t), accrete_counter_fetch_add), ierr)
  end function
  subroutine accrete_counter_reset(c, value, ierr)
    type(accrete_counter), intent(in) :: c
    integer(c_int64_t), intent(in), optional :: value
    integer, intent(out), optional :: ierr
    call finish(c_counter_reset(c%h, or_default(value, 0_c_int64_t)), ierr)
  end subroutine

  ! ---- the typed specifics -------------------------------------------------------------------
#define ACCRETE_MATRIX_TYPES
#define FTYPE real(c_float)
#define DTYPE ACCRETE_FLOAT
#define SFX(name) name/**/_r4
#include "accrete_typed.inc"
#undef FTYPE
#undef DTYPE
#undef SFX
#define FTYPE real(c_double)
#define DTYPE ACCRETE_DOUBLE
#define SFX(name) name/**/_r8
#include "accrete_typed.inc"
#undef FTYPE
#undef DTYPE
#undef SFX
#define FTYPE complex(c_float_complex)
#define DTYPE ACCRETE_COMPLEX_FLOAT
#define SFX(name) name/**/_c4
#include "accrete_typed.inc"
#undef FTYPE
#undef DTYPE
#undef SFX
#define FTYPE complex(c_double_complex)
#define DTYPE ACCRETE_COMPLEX_DOUBLE
#define SFX(name) name/**/_c8
#include "accrete_typed.inc"
#undef FTYPE
#undef DTYPE
#undef SFX
#undef ACCRETE_MATRIX_TYPES
#define FTYPE integer(c_int32_t)
#define DTYPE ACCRETE_INT32
#define SFX(name) name/**/_i4
#include "accrete_typed.inc"
#undef FTYPE
#undef DTYPE
#undef SFX
#define FTYPE integer(c_int64_t)
#define DTYPE ACCRETE_INT64
#define SFX(name) name/**/_i8
#include "accrete_typed.inc"
#undef FTYPE
#undef DTYPE
#undef SFX

end module accrete
