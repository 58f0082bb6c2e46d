#pragma once
/// \file
// The progress engine. Nothing happens in the background: communication
// advances when the calling thread enters accrete.
//  - Internal progress (inside any accrete call) only moves data.
//  - User-level progress, progress() and every wait(), also runs completion
//    callbacks (future::then) and incoming remote procedures.

#include <functional>

namespace accrete {

/// User-level progress: polls outstanding MPI operations and incoming
/// messages, then runs ready callbacks and the work of the personas the
/// calling thread holds; RPC bodies run only in the thread holding the
/// master persona. In the seq thread mode call it from the thread that
/// drives the runtime; in par, from any thread (docs/semantics.md,
/// "Threads").
void progress();

/// How much progress a progress(level) call makes: internal progress only
/// moves data (completes transfers, receives messages); user progress also
/// runs callbacks and incoming remote procedures.
enum class progress_level {
  internal,  ///< move data only
  user       ///< also run callbacks and RPC bodies
};

/// progress() for progress_level::user; for internal, polls the network
/// without running any user code (no RPC bodies, no callbacks).
void progress(progress_level level);

/// True while the calling thread runs code that user-level progress called:
/// a callback, an lpc or an RPC body (UPC++'s in_progress(), the restricted
/// context). False in the program's own code, also while it waits; a
/// callback that runs at once inside a call (then() on a ready future,
/// fulfilling a promise outside progress) is not inside progress.
bool in_progress() noexcept;

/// Queues f to run in this process's next user-level progress (progress()
/// or any wait()), on the thread that drives the runtime, after the
/// completions already queued: UPC++'s lpc on the master persona. f may
/// communicate; an exception from f propagates out of that progress call.
void run_at_progress(std::function<void()> f);

/// Whether this process has issued communication that still needs its
/// own internal progress to complete (remote puts and gets not yet
/// flushed, messages not yet handed to MPI). Incoming work and
/// collectives waiting for other processes do not count.
bool progress_required();

/// Makes internal progress until progress_required() is false, so that the
/// process may stop calling accrete (e.g. to compute for a long time)
/// without holding up what it has sent. Runs no user code. Completions
/// that wait for user-level progress (callbacks, promise fulfilment, the
/// RPC of a remote completion to a process on another node) still need a
/// later progress() or wait().
void discharge();

namespace detail {
/// Called by wait loops when a poll found nothing to do: returns at once
/// for the first few idle passes (most waits end within them), then yields
/// the CPU (sched_yield, then short sleeps as `spins` grows) so
/// oversubscribed processes do not starve the ones they wait for.
void idle_backoff(unsigned& spins) noexcept;
}  // namespace detail

}  // namespace accrete
