// Backtraces of a process that crashes (ACCRETE_BACKTRACE=1, or
// `upcxx-run -backtrace`): the rank, the signal and the call stack on
// stderr, then the signal's previous handling (Open MPI's own report, or
// the default action: termination, a core dump).
#pragma once

namespace accrete::detail {

// Catches SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT (abort, a failed
// UPCXX_ASSERT, fatal_error) for this process, naming `rank` in the report.
void crash_backtrace_install(int rank) noexcept;
// Puts the handlers found at install back (finalize).
void crash_backtrace_uninstall() noexcept;

}  // namespace accrete::detail
