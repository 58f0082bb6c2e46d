#include "util/crash_backtrace.hpp"

#include <csignal>
#include <cstdio>
#include <cstring>

#include <execinfo.h>
#include <unistd.h>

namespace accrete::detail {
namespace {

struct caught {
  int sig;
  const char* name;
  struct sigaction before;
};
caught signals[] = {{SIGSEGV, "SIGSEGV, segmentation fault", {}},
                    {SIGBUS, "SIGBUS, bus error", {}},
                    {SIGFPE, "SIGFPE, arithmetic exception", {}},
                    {SIGILL, "SIGILL, illegal instruction", {}},
                    {SIGABRT, "SIGABRT, abort", {}}};
bool installed = false;
// Formatted at install: the handler then only writes.
char header_rank[64];

void write_all(const char* s, std::size_t n) noexcept {
  while (n > 0) {
    const ssize_t w = ::write(STDERR_FILENO, s, n);
    if (w <= 0) return;
    s += w;
    n -= std::size_t(w);
  }
}

void on_crash(int sig) noexcept {
  caught* c = nullptr;
  for (caught& s : signals)
    if (s.sig == sig) c = &s;
  write_all(header_rank, std::strlen(header_rank));
  const char* name = c ? c->name : "a signal";
  write_all(name, std::strlen(name));
  static const char tail[] = "; backtrace:\n";
  write_all(tail, sizeof tail - 1);
  void* frames[128];
  const int n = ::backtrace(frames, 128);
  ::backtrace_symbols_fd(frames, n, STDERR_FILENO);
  // What was there before handles it now, at once (SA_NODEFER leaves the
  // signal unblocked in here): Open MPI's report, or the default action.
  if (c) ::sigaction(sig, &c->before, nullptr);
  ::raise(sig);
}

}  // namespace

void crash_backtrace_install(int rank) noexcept {
  if (installed) return;
  std::snprintf(header_rank, sizeof header_rank, "accrete: rank %d (pid %ld) received ", rank, long(::getpid()));
  // The first backtrace() loads libgcc's unwinder, which allocates: not
  // inside a handler that may interrupt malloc.
  void* warm[1];
  (void)::backtrace(warm, 1);
  struct sigaction sa {};
  sa.sa_handler = on_crash;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_NODEFER;
  for (caught& s : signals) ::sigaction(s.sig, &sa, &s.before);
  installed = true;
}

void crash_backtrace_uninstall() noexcept {
  if (!installed) return;
  for (caught& s : signals) ::sigaction(s.sig, &s.before, nullptr);
  installed = false;
}

}  // namespace accrete::detail
