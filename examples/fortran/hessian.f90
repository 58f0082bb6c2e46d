! The Hessian demo in Fortran: every process adds its updates H(ix, ix) += B_u
! (the shared "hessian" workload, bench/common/hessian_workload_c.h) into a
! convergent_matrix through the `accrete` module, commits, and checks the
! checksum of the assembled matrix (exact: every entry is a multiple of 0.25).
! Then it factors H + lambda I in place with ScaLAPACK (pspotrf) through the
! matrix's descriptor, the way a seismic inversion would.
!
!   mpiexec -n 2 ./hessian_f [tiny|small|paper|large]
program hessian_f
  use, intrinsic :: iso_c_binding
  use accrete
  use mpi
  implicit none

  type, bind(C) :: hw_params
    integer(c_int64_t) :: N, Lr, Ll, U
    integer(c_int32_t) :: k
    integer(c_int64_t) :: seed
  end type
  interface
    integer(c_int) function hw_preset(name, p) bind(C)
      import :: c_int, c_char, hw_params
      character(kind=c_char), intent(in) :: name(*)
      type(hw_params), intent(out) :: p
    end function
    subroutine hw_make_update(p, rank, u, ix, B) bind(C)
      import :: c_int, c_int64_t, c_float, hw_params
      type(hw_params), intent(in) :: p
      integer(c_int), value :: rank
      integer(c_int64_t), value :: u
      integer(c_int64_t), intent(out) :: ix(*)
      real(c_float), intent(out) :: B(*)
    end subroutine
    real(c_double) function hw_expected_checksum(p, np) bind(C)
      import :: c_int, c_double, hw_params
      type(hw_params), intent(in) :: p
      integer(c_int), value :: np
    end function
    subroutine hw_grid_shape(np, pr, pc) bind(C)
      import :: c_int
      integer(c_int), value :: np
      integer(c_int), intent(out) :: pr, pc
    end subroutine
    subroutine pspotrf(uplo, n, a, ia, ja, desca, info)
      import :: c_float, c_int
      character, intent(in) :: uplo
      integer(c_int), intent(in) :: n, ia, ja, desca(9)
      real(c_float), intent(inout) :: a(*)
      integer(c_int), intent(out) :: info
    end subroutine
  end interface

  type(hw_params) :: prm
  type(accrete_matrix) :: H
  character(len=16) :: preset
  integer :: me, np, ierr
  integer(c_int) :: pr, pc, desc(9), info
  integer(c_int64_t) :: n, u, i, j, lld, lrows, lcols, mb, nb, g
  integer(c_int64_t), allocatable :: ix(:)
  real(c_float), allocatable :: B(:, :)
  real(c_float), pointer :: L(:, :)
  real(c_double) :: local_sum, checksum, expected, t0, t
  logical :: sum_ok

  preset = 'small'
  if (command_argument_count() >= 1) call get_command_argument(1, preset)
  call accrete_init()
  me = accrete_rank_me()
  np = accrete_rank_n()
  if (hw_preset(trim(preset)//c_null_char, prm) /= 0) then
    if (me == 0) write (*, '(3a)') 'hessian_f: unknown preset ''', trim(preset), ''' (tiny, small, paper, large)'
    call accrete_finalize()
    stop 2
  end if
  call hw_grid_shape(int(np, c_int), pr, pc)
  mb = 64
  nb = 64
  call accrete_matrix_create(H, ACCRETE_FLOAT, prm%N, prm%N, pr=int(pr), pc=int(pc), mb=mb, nb=nb)

  n = prm%Lr * prm%Ll
  allocate (ix(n), B(n, n))
  call accrete_barrier()
  t0 = MPI_Wtime()
  do u = 0, prm%U - 1
    call hw_make_update(prm, int(me, c_int), u, ix, B)
    call accrete_matrix_update(H, B, ix + 1, ix + 1)   ! the module's indices are 1-based
  end do
  call accrete_matrix_commit(H)
  t0 = MPI_Wtime() - t0   ! this process's time; the maximum goes to t

  ! The checksum: the sum of the assembled matrix equals the sum of every update.
  call accrete_matrix_local(H, L)
  call accrete_matrix_local_shape(H, lld, lrows, lcols)
  local_sum = 0
  do j = 1, lcols
    do i = 1, lrows
      local_sum = local_sum + real(L(i, j), c_double)
    end do
  end do
  call MPI_Allreduce(local_sum, checksum, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_Allreduce(t0, t, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  expected = hw_expected_checksum(prm, int(np, c_int))
  ! Exact (bitwise): every entry and partial sum is a multiple of 0.25.
  sum_ok = transfer(checksum, 0_c_int64_t) == transfer(expected, 0_c_int64_t)

  ! Factor H + 2N I in place (the local part is ScaLAPACK's storage): in every
  ! preset 2N exceeds each row's absolute sum, so the upper triangle that
  ! pspotrf reads defines a diagonally dominant, positive definite matrix.
  call accrete_matrix_descriptor(H, desc)
  do j = 1, lcols
    g = ((j - 1) / nb * pc + mod(me, int(pc))) * nb + mod(j - 1, nb)   ! global column, 0-based
    do i = 1, lrows
      if (((i - 1) / mb * pr + me / int(pc)) * mb + mod(i - 1, mb) == g) L(i, j) = L(i, j) + real(2 * prm%N, c_float)
    end do
  end do
  call pspotrf('U', int(prm%N, c_int), L, 1, 1, desc, info)

  if (me == 0) then
    write (*, '(a)') 'accrete Hessian assembly from Fortran (module accrete, convergent_matrix float)'
    write (*, '(a,a,a,i0,a,i0,a,i0,a,i0)') '  preset ', trim(preset), ': N = ', prm%N, ', n = ', n, &
      ', U = ', prm%U, ' per process, P = ', np
    write (*, '(a,f8.3,a)') '  assembly time T =', t, ' s (max over processes)'
    write (*, '(a,f0.6,a,f0.6,a,a)') '  checksum ', checksum, ', expected ', expected, ': ', &
      merge('OK      ', 'MISMATCH', sum_ok)
    write (*, '(a,i0,a)') '  pspotrf on H + 2N I: info = ', info, merge(' (OK)    ', ' (FAILED)', info == 0)
  end if
  call accrete_matrix_free(H)
  call accrete_finalize()
  if (.not. sum_ok .or. info /= 0) error stop 1
end program
