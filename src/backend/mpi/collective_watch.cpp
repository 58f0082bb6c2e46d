// Collectives that cannot complete: argument agreement (agree) and the
// collective watch behind ACCRETE_COLLECTIVE_TIMEOUT.
//
// Every accrete collective counts itself in this process's record, per
// team: a small slice of node-shared memory (a shared_block made at init)
// that node peers read directly and other processes read with one MPI_Rget.
// A process whose collective has waited longer than the timeout reads every
// member's record: a member whose count for the team is below its own has
// not entered the collective, and its record also names the blocking
// collective it waits in, if any. Then the job ends (MPI_Abort), as a hang
// would otherwise: a collective entered by some processes only cannot be
// cancelled in MPI.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <iterator>
#include <string>

#include "accrete/detail/env.hpp"
#include "accrete/error.hpp"
#include "accrete/progress.hpp"
#include "backend/mpi/state.hpp"

namespace accrete::detail {
namespace {

constexpr std::size_t name_bytes = 64;
constexpr int nslots = 16;  // teams remembered per process (slot 0: the world)

struct watch_record {
  char current[name_bytes];  // the blocking collective this process waits in ("" none)
  struct slot {
    std::uint64_t key, count;
  } slots[nslots];
};

struct watch_state {
  double timeout = 0;
  std::unique_ptr<shared_block> block;
  // This process's counts, the source of truth (the record mirrors them).
  watch_record::slot counts[nslots] = {};
};
watch_state ws;

double clock_now() {
#ifdef ACCRETE_SMPI
  return sim_clock();
#else
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
#endif
}

watch_record* my_record() noexcept {
  return ws.block ? reinterpret_cast<watch_record*>(ws.block->local()) : nullptr;
}

void store_u64(std::uint64_t& w, std::uint64_t v) noexcept {
  std::atomic_ref<std::uint64_t>(w).store(v, std::memory_order_relaxed);
}

// The slot of `key`: its own, a free one, or (more teams than slots) the
// one it hashes to, whose old team is then forgotten.
int slot_of(std::uint64_t key) noexcept {
  if (key == world_team_key) return 0;
  for (int i = 1; i < nslots; ++i)
    if (ws.counts[i].key == key) return i;
  for (int i = 1; i < nslots; ++i)
    if (ws.counts[i].key == 0) return i;
  return 1 + int(key % std::uint64_t(nslots - 1));
}

void set_current(const char* what) noexcept {
  watch_record* r = my_record();
  if (!r) return;
  char buf[name_bytes] = {};
  if (what) std::strncpy(buf, what, name_bytes - 1);
  std::memcpy(r->current, buf, name_bytes);
}

std::string list(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

[[noreturn]] void diagnose(const collective_ticket& t) {
  std::vector<int> members = t.members;
  if (members.empty())
    for (int w = 0; w < st.size; ++w) members.push_back(w);
  std::vector<std::string> missing, silent;
  for (int w : members) {
    if (w == st.rank) continue;
    watch_record rec{};
    if (!ws.block || !ws.block->try_read(w, 0, &rec, sizeof rec, 1.0)) {
      silent.push_back(std::to_string(w));
      continue;
    }
    std::uint64_t count = 0;
    for (const auto& s : rec.slots)
      if (s.key == t.team_key) count = s.count;
    rec.current[name_bytes - 1] = '\0';
    // The same position in the team's sequence of collectives, but another
    // call: the processes' calls differ (MPI may have matched them).
    const bool other_call = count == t.count && rec.current[0] && t.what &&
                            std::strncmp(rec.current, t.what, name_bytes - 1) != 0;
    if (count >= t.count && !other_call) continue;
    missing.push_back(std::to_string(w) +
                      (other_call ? std::string(" (in ") + rec.current + " instead: the calls differ)"
                       : rec.current[0] ? std::string(" (in ") + rec.current + ")"
                                        : std::string(" (in no blocking accrete collective)")));
  }
  std::string who = list(missing);
  if (!silent.empty()) who += (who.empty() ? "" : "; ") + std::string("not answering (likely not in it): ") + list(silent);
  const std::string team = t.members.empty() ? "the world" : "a team of " + std::to_string(t.members.size());
  std::fprintf(stderr,
               "accrete: %s (collective call %llu on %s) on rank %d timed out after %.1f s "
               "(ACCRETE_COLLECTIVE_TIMEOUT); processes that have not entered it: %s\n",
               t.what ? t.what : "a collective", static_cast<unsigned long long>(t.count), team.c_str(), st.rank,
               ws.timeout, who.empty() ? "(none: every member entered it; messages are missing)" : who.c_str());
  std::fflush(stderr);
  world_abort(3);
}

}  // namespace

// ---- the watch ---------------------------------------------------------------------

void watch_init() {
  ws.timeout = env_seconds("ACCRETE_COLLECTIVE_TIMEOUT").value_or(0.0);
  std::fill(std::begin(ws.counts), std::end(ws.counts), watch_record::slot{0, 0});
  ws.counts[0].key = world_team_key;
  ws.block = std::make_unique<shared_block>(sizeof(watch_record));
  watch_record* r = my_record();
  std::memset(static_cast<void*>(r), 0, sizeof *r);
  store_u64(r->slots[0].key, world_team_key);
}

void watch_finalize() noexcept { ws.block.reset(); }

double collective_timeout() noexcept { return ws.timeout; }

collective_ticket collective_begin(const char* what, std::uint64_t key, std::span<const int> members,
                                   bool blocking) {
  require_master(what);
  collective_ticket t;
  t.what = what;
  t.team_key = key;
  t.blocking = blocking;
  const int i = slot_of(key);
  if (ws.counts[i].key != key) ws.counts[i] = {key, 0};
  t.count = ++ws.counts[i].count;
  if (watch_record* r = my_record()) {
    store_u64(r->slots[i].key, key);
    store_u64(r->slots[i].count, t.count);
  }
  if (blocking) set_current(what);
  if (ws.timeout > 0) {
    t.start = clock_now();
    t.members.assign(members.begin(), members.end());
  }
  return t;
}

void collective_end(const collective_ticket& t) noexcept {
  if (t.blocking) set_current(nullptr);
}

void collective_check(const collective_ticket& t) {
  if (ws.timeout <= 0 || t.start == 0 || clock_now() - t.start < ws.timeout) return;
  diagnose(t);
}

// Called by internal progress: the oldest watched request past the timeout.
void watch_poll() {
  if (ws.timeout <= 0 || st.watched == 0) return;
  for (const auto& t : st.req_ticket)
    if (t) collective_check(*t);
}

void wait_request(MPI_Request* r, const collective_ticket& t, bool user_level) {
  unsigned spins = 0;
  for (;;) {
    int done = 0;
    {
      backend_guard g;
      ACCRETE_MPI(MPI_Test(r, &done, MPI_STATUS_IGNORE));
    }
    if (done) return;
    if (user_level)
      user_progress();
    else
      poll();
    idle_backoff(spins);
    collective_check(t);
  }
}

// ---- agreement ---------------------------------------------------------------------

std::int64_t arg_hash(const void* data, std::size_t bytes) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  auto p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  return std::int64_t(h);
}

std::string show_hash(std::int64_t v) {
  char hex[24];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(v));
  return std::string("with hash ") + hex;
}

std::string show_double(std::int64_t bits) {
  double d;
  std::memcpy(&d, &bits, sizeof d);
  char buf[40];
  std::snprintf(buf, sizeof buf, "= %.17g", d);
  return buf;
}

std::string show_float(std::int64_t bits) {
  const auto b = std::int32_t(bits);
  float f;
  std::memcpy(&f, &b, sizeof f);
  char buf[40];
  std::snprintf(buf, sizeof buf, "= %.9g", double(f));
  return buf;
}

std::string show_scalar_type(std::int64_t t) {
  static const char* const names[] = {"(none)",  "int8",    "int16",  "int32",  "int64",          "uint8",
                                      "uint16",  "uint32",  "uint64", "float",  "double",         "long double",
                                      "complex<float>", "complex<double>"};
  return std::string("= ") + (t >= 0 && t < std::int64_t(std::size(names)) ? names[t] : std::to_string(t).c_str());
}

// The values follow merge_op and update_strategy (accrete/assembly.hpp).
std::string show_merge(std::int64_t v) {
  static const char* const names[] = {"sum", "max", "min", "a merge function"};
  return v >= 0 && v < 4 ? std::string("= ") + names[v] : "= " + std::to_string(v);
}
std::string show_strategy(std::int64_t v) {
  return v == 0 ? "= packets" : v == 1 ? "= alltoall" : "= " + std::to_string(v);
}
std::string show_bool(std::int64_t v) { return v ? "= true" : "= false"; }

// Two steps. The first is one small allreduce (the common case ends
// there): whether any process failed, and the largest and smallest hash of
// (call, arguments). Only when they differ do the processes gather every
// process's arguments, to say which ones differ.
void agree(const char* what, std::exception_ptr local, std::span<const collective_arg> args) {
  require_initialized(what);
  constexpr std::size_t max_args = 24, head = 3, width = head + max_args;
  if (args.size() > max_args) throw std::logic_error(std::string(what) + ": too many arguments to agree on");
  std::string message;
  if (local) {
    try {
      std::rethrow_exception(local);
    } catch (const std::exception& e) {
      message = e.what();
    } catch (...) {
      message = "an exception that is not a std::exception";
    }
    message.resize(std::min<std::size_t>(message.size(), 2000));
  }
  // [0] the call, [1] 0 if accepted, else 1 + the length of its message,
  // [2] the argument count, then the arguments.
  std::int64_t mine[width] = {};
  mine[0] = arg_hash(what, std::strlen(what));
  mine[1] = local ? 1 + std::int64_t(message.size()) : 0;
  mine[2] = std::int64_t(args.size());
  for (std::size_t k = 0; k < args.size(); ++k) mine[head + k] = args[k].value;
  const std::int64_t h = arg_hash(mine + 2, (1 + args.size()) * sizeof(std::int64_t)) ^ mine[0];
  std::int64_t summary[3] = {local ? 1 : 0, h & INT64_MAX, -(h & INT64_MAX)};
  const collective_ticket t = collective_begin(what);
  MPI_Request r;
  {
    backend_guard g;
    ACCRETE_MPI(MPI_Iallreduce(MPI_IN_PLACE, summary, 3, MPI_INT64_T, MPI_MAX, st.world, &r));
  }
  wait_request(&r, t);
  if (summary[0] == 0 && summary[1] == -summary[2]) {
    collective_end(t);
    return;
  }
  std::vector<std::int64_t> all(std::size_t(st.size) * width);
  {
    backend_guard g;
    ACCRETE_MPI(MPI_Iallgather(mine, int(width), MPI_INT64_T, all.data(), int(width), MPI_INT64_T, st.world, &r));
  }
  wait_request(&r, t);
  auto at = [&](int w, std::size_t k) { return all[std::size_t(w) * width + k]; };
  int first_bad = -1;
  for (int w = 0; w < st.size && first_bad < 0; ++w)
    if (at(w, 1) != 0) first_bad = w;
  if (first_bad >= 0) {
    // Everyone learns the first failing process's own message.
    std::string theirs(std::size_t(at(first_bad, 1) - 1), '\0');
    if (first_bad == st.rank) theirs = message;
    MPI_Request b;
    {
      backend_guard g;
      ACCRETE_MPI(MPI_Ibcast(theirs.data(), int(theirs.size()), MPI_CHAR, first_bad, st.world, &b));
    }
    wait_request(&b, t);
    collective_end(t);
    if (local) std::rethrow_exception(local);
    throw collective_misuse(std::string(what) + ": the arguments were rejected on rank " + std::to_string(first_bad) +
                            " (" + theirs + "); every process gives up together");
  }
  collective_end(t);
  auto ranks = [&](auto&& same) {
    std::string s;
    int n = 0, shown = 0;
    for (int w = 0; w < st.size; ++w)
      if (same(w)) {
        if (shown < 8) s += (shown++ ? ", " : "") + std::to_string(w);
        ++n;
      }
    if (n > shown) s += " and " + std::to_string(n - shown) + " more";
    return (n == 1 ? "rank " : "ranks ") + s;
  };
  // Group the ranks by the value they gave, in rank order of first sight.
  auto describe = [&](std::size_t k, auto&& show) {
    std::string s;
    std::vector<std::int64_t> seen;
    for (int w = 0; w < st.size; ++w) {
      const std::int64_t v = at(w, k);
      if (std::find(seen.begin(), seen.end(), v) != seen.end()) continue;
      seen.push_back(v);
      s += (s.empty() ? "" : "; ") + show(v) + " on " + ranks([&](int x) { return at(x, k) == v; });
      if (seen.size() == 4) break;
    }
    return s;
  };
  for (int w = 0; w < st.size; ++w)
    if (at(w, 0) != mine[0] || at(w, 2) != mine[2])
      throw collective_misuse(std::string(what) + ": the processes are in different collective calls (" + what +
                              " on " + ranks([&](int x) { return at(x, 0) == mine[0] && at(x, 2) == mine[2]; }) +
                              ", another call on " +
                              ranks([&](int x) { return at(x, 0) != mine[0] || at(x, 2) != mine[2]; }) +
                              "); every process must make the same collective calls in the same order");
  for (std::size_t k = 0; k < args.size(); ++k) {
    bool same = true;
    for (int w = 0; w < st.size && same; ++w) same = at(w, head + k) == mine[head + k];
    if (same) continue;
    const collective_arg& a = args[k];
    auto show = [&](std::int64_t v) {
      return std::string(a.name) + " " + (a.show ? a.show(v) : "= " + std::to_string(v));
    };
    throw collective_misuse(std::string(what) + ": the processes passed different arguments to this collective call: " +
                            describe(head + k, show) + "; every process must pass the same " + a.name);
  }
}

}  // namespace accrete::detail
