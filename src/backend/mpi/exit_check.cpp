// A process that ends while the runtime is up: main returned, or exit() was
// called, before finalize().
//
// Left alone, such a job hangs (a process that exits with an error while the
// others wait for it in a barrier: neither MPI here ends the job) or fails
// (Open MPI counts every process that ends without MPI_Finalize as an
// abnormal end, so a program that only forgot finalize() exits with 1).
// GASNet, under UPC++, ends the job from its exit handler in both cases.
//
// So a handler, registered at the end of the first init(), runs at exit:
// - a non-zero exit status ends the job at once with that status
//   (MPI_Abort), as no process can wait for this one any more;
// - status 0 waits, within a time limit, for every process to end too (a
//   barrier on a communicator of its own, which no collective still running
//   elsewhere can match); then it closes the windows and finalizes MPI, so
//   the job ends with status 0. A process that does not come (it waits for
//   this one, or runs on) ends the job after the limit, named.
// It runs after main's thread-local objects are gone (persona stacks, future
// state pools), so it runs no user code and none of finalize()'s drain: it
// makes MPI calls on the runtime's global state only.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include <unistd.h>

#include "accrete/detail/backend.hpp"
#include "accrete/detail/env.hpp"
#include "backend/mpi/state.hpp"

namespace accrete::detail {
namespace {

// Without ACCRETE_COLLECTIVE_TIMEOUT: long enough for processes that end a
// little apart (output written by one of them), short of a hang.
constexpr double default_exit_wait = 60.0;

// A child the program forked and that calls exit() has a copy of the state
// but is no MPI process: it must leave the job alone (a static destructor
// freeing a window in it would wait for the others forever).
pid_t registered_by = 0;

// Active messages that reach a process after it ended are received and
// dropped (nothing runs them: this process runs no more user code), so that
// their senders' MPI sends complete. Returns how many.
std::size_t drop_arrivals() {
  std::size_t n = 0;
  for (;;) {
    int flag = 0;
    MPI_Status s;
    MPI_Message m;
    if (MPI_Improbe(MPI_ANY_SOURCE, am_tag, st.am, &flag, &m, &s) != MPI_SUCCESS || !flag) return n;
    int count = 0;
    MPI_Get_count(&s, MPI_BYTE, &count);
    std::vector<std::byte> buf(static_cast<std::size_t>(count));
    MPI_Mrecv(buf.data(), count, MPI_BYTE, &m, MPI_STATUS_IGNORE);
    ++n;
  }
}

// Three steps, each within the time limit: every process has ended (a
// barrier); the messages this one sent have left it and the collectives it
// started and never waited for have completed; every process is that far
// (a second barrier, after which nothing arrives any more). Messages that
// arrive meanwhile are dropped, and counted in `dropped`.
bool wait_for_everyone(double limit, std::size_t& dropped) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit);
  MPI_Request barrier;
  if (MPI_Ibarrier(st.exit_comm, &barrier) != MPI_SUCCESS) return false;
  int step = 0;
  for (;;) {
    dropped += drop_arrivals();
    test_sends();
    int done = 0;
    if (step != 1) MPI_Test(&barrier, &done, MPI_STATUS_IGNORE);
    if (step == 0 && done) step = 1;
    if (step == 1) {
      int reqs_done = 1;  // MPI_Testall leaves them all alone unless all are done
      if (!st.reqs.empty()) MPI_Testall(int(st.reqs.size()), st.reqs.data(), &reqs_done, MPI_STATUSES_IGNORE);
      if (reqs_done && st.sends.empty()) {
        if (MPI_Ibarrier(st.exit_comm, &barrier) != MPI_SUCCESS) return false;
        step = 2;
      }
    } else if (step == 2 && done) {
      return true;
    }
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

void close_at_exit() {
  close_runtime();
  if (st.owns_mpi) MPI_Finalize();
}

void at_exit(int status, void*) {
  // exchange: MPI_Abort below may itself call exit() (MPICH does).
  if (!st.up) return;
  if (getpid() != registered_by) {
    st.up = false;  // and so the destructors that follow make no MPI call
    return;
  }
  if (st.aborting.exchange(true)) return;
  std::fflush(nullptr);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) {
    // The program finalized MPI itself: nothing of the runtime can be
    // closed, and the destructors that would try must not.
    std::fprintf(stderr,
                 "accrete: rank %d: MPI was finalized before accrete::finalize() (upcxx::finalize()); "
                 "call it before MPI_Finalize\n",
                 st.rank);
    st.up = false;
    return;
  }
  try {
    stop_progress_thread();
  } catch (...) {
  }
  if (status != 0) {
    std::fprintf(stderr,
                 "accrete: rank %d exits with status %d without accrete::finalize() (upcxx::finalize()); "
                 "ending the job\n",
                 st.rank, status);
    world_abort(status);
  }
  const double limit = collective_timeout() > 0 ? collective_timeout() : default_exit_wait;
  if (st.rank == 0)
    std::fprintf(stderr,
                 "accrete: the program ends without accrete::finalize() (upcxx::finalize()); finalizing at exit "
                 "once every process has ended (within %.0f s)\n",
                 limit);
  std::fflush(stderr);
  bool closed = false;
  std::size_t dropped = 0;
  try {
    if (wait_for_everyone(limit, dropped)) {
      close_at_exit();
      closed = true;
    }
  } catch (...) {
  }
  if (dropped > 0)
    std::fprintf(stderr, "accrete: rank %d: %zu active message%s (RPCs and others) arrived after it ended; none ran\n",
                 st.rank, dropped, dropped == 1 ? "" : "s");
  if (closed) return;
  std::fprintf(stderr,
               "accrete: rank %d ended without accrete::finalize() (upcxx::finalize()), and within %.0f s "
               "not every process ended too (one may wait for this one); ending the job\n",
               st.rank, limit);
  world_abort(1);
}

}  // namespace

void register_exit_check() {
#if !defined(ACCRETE_SMPI) && defined(__GLIBC__)
  // on_exit (glibc) passes the exit status, which atexit does not.
  static const bool once = [] {
    registered_by = getpid();
    on_exit(at_exit, nullptr);
    return true;
  }();
  (void)once;
#endif
}

}  // namespace accrete::detail
