#include "accrete/runtime.hpp"

#include <sched.h>
#include <stdexcept>
#include <time.h>

#include "accrete/detail/backend.hpp"
#include "accrete/detail/rpc_runtime.hpp"
#include "accrete/progress.hpp"

namespace accrete {
namespace detail {
void backend_init(const init_options& opts);
void backend_finalize();
void finalize_drain();
void team_init();
void team_finalize();
void segment_init();
void segment_finalize();
void register_exit_check();
}  // namespace detail

void init(const init_options& opts) {
  detail::backend_init(opts);
  detail::segment_init();
  detail::team_init();
  // Last: the exit check must run before the destructors of the statics
  // that init made (exit_check.cpp).
  detail::register_exit_check();
}

void finalize() {
  detail::require_initialized("finalize()");
  detail::finalize_drain();
  detail::team_finalize();
  detail::segment_finalize();
  detail::backend_finalize();
  detail::dist_registry_clear();
}

bool initialized() noexcept { return detail::runtime_up(); }

int rank_me() {
  detail::require_initialized("rank_me()");
  return detail::world_rank();
}

int rank_n() {
  detail::require_initialized("rank_n()");
  return detail::world_size();
}

void progress() { detail::user_progress(); }

void run_at_progress(std::function<void()> f) {
  detail::require_initialized("run_at_progress()");
  if (!f) throw std::invalid_argument("accrete::run_at_progress: empty function");
  detail::defer(std::move(f));
}

bool progress_required() {
  detail::require_initialized("progress_required()");
  return detail::outgoing_pending();
}

void discharge() {
  detail::require_initialized("discharge()");
  unsigned spins = 0;
  while (detail::outgoing_pending()) {
    detail::poll();
    if (detail::outgoing_pending()) detail::idle_backoff(spins);
  }
}

bool in_progress() noexcept { return detail::in_user_progress(); }

void progress(progress_level level) {
  if (level == progress_level::user) return detail::user_progress();
  detail::require_initialized("progress(progress_level::internal)");
  detail::poll();
}

namespace detail {
void idle_backoff(unsigned& spins) noexcept {
  // Spin first, for a few passes: most waits end within a few progress
  // passes, and a yield is a system call that costs more than the wait.
  // Then yield: the process we wait for may be waiting for a core. After
  // ~1 ms of yielding, sleep briefly so that many idle processes on few
  // cores leave the busy ones alone (a nanosleep lasts ~50 us at least, so
  // it is not used for short waits). Measured with a loop of barrier() on
  // 2 cores (Open MPI; medians of three runs of 7 x 20,000): yielding from
  // the first idle pass, P = 2 with every process its own node 0.54-1.23
  // us, P = 4 on one node (oversubscribed) 4.7-5.4 us; spinning 4 to 32
  // passes first, 0.42-0.64 and 2.4-3.7 us.
  constexpr unsigned spin_first = 16;
  if (last_progress_active()) {  // progress is doing work: keep going
    spins = 0;
    return;
  }
  ++spins;
  if (spins <= spin_first) return;
  if (spins < 4096) {
    os_yield();
    return;
  }
  unsigned us = spins < 16384 ? 20 : 100;
  timespec ts{0, long(us) * 1000};
  nanosleep(&ts, nullptr);
}
}  // namespace detail
}  // namespace accrete
