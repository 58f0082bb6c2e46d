! What the Fortran test programs share: the run's verdict.
module test_report
  use, intrinsic :: iso_c_binding
  use accrete
  implicit none
  private
  public :: report
contains
  ! Collective: every rank's failure count summed on rank 0 through a
  ! counter (no MPI here) and printed as "<prog>: <n> failure(s) ...", the
  ! line ctest looks for; a rank whose peers failed gets fails = 1, so that
  ! every rank exits non-zero.
  subroutine report(prog, fails)
    character(len=*), intent(in) :: prog
    integer, intent(inout) :: fails
    type(accrete_counter) :: c
    integer(c_int64_t) :: old, total
    call accrete_counter_create(c)
    old = accrete_counter_fetch_add(c, int(fails, c_int64_t))
    call accrete_barrier()
    total = accrete_counter_fetch_add(c, 0_c_int64_t)
    if (accrete_rank_me() == 0) write (*, '(2a,i0,a,i0,a)') prog, ': ', total, ' failure(s) on ', &
      accrete_rank_n(), ' process(es)'
    if (total /= 0 .and. fails == 0) fails = 1
    call accrete_counter_free(c)
  end subroutine
end module
