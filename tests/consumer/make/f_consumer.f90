! A Fortran program built against the installed accrete with pkg-config
! (accrete-fortran.pc): every process accumulates into a dist_array.
program f_consumer
  use, intrinsic :: iso_c_binding
  use accrete
  implicit none
  type(accrete_array) :: a
  real(c_double) :: ones(6, 4), got(6, 4)
  integer :: np
  call accrete_init()
  np = accrete_rank_n()
  call accrete_array_create_block(a, ACCRETE_DOUBLE, 6_c_int64_t, 4_c_int64_t)
  call accrete_array_zero(a)
  ones = 1
  call accrete_array_acc(a, [1_c_int64_t, 1_c_int64_t], [6_c_int64_t, 4_c_int64_t], ones)
  call accrete_array_sync(a)
  call accrete_array_get(a, [1_c_int64_t, 1_c_int64_t], [6_c_int64_t, 4_c_int64_t], got)
  if (all(abs(got - np) < 0.5d0)) then
    write (*, '(a,i0,a)') 'f_consumer rank ', accrete_rank_me(), ': ok'
  else
    write (*, '(a,i0,a)') 'f_consumer rank ', accrete_rank_me(), ': WRONG'
    error stop 1
  end if
  call accrete_array_free(a)
  call accrete_finalize()
end program
