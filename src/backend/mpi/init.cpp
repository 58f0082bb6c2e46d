// Backend lifecycle: MPI and communicators, the segment windows, rings and
// the node barrier's memory at init; their release at finalize. Also the
// accessors of what init decided.
#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>

#include <sys/statvfs.h>
#include <unistd.h>

#include "accrete/detail/env.hpp"
#include "accrete/detail/strided_backend.hpp"
#include "accrete/error.hpp"
#include "accrete/progress.hpp"
#include "accrete/runtime.hpp"
#include "assembly/simd.hpp"
#include "backend/mpi/state.hpp"
#include "backend/mpi/type_cache.hpp"
#include "util/crash_backtrace.hpp"
#include "util/huge_pages.hpp"

namespace accrete::detail {

state_t st;

namespace {
// Segments are carved in 64-byte multiples so every base stays cache-aligned.
std::size_t round_up(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }
}  // namespace

namespace {
// The shared memory of the real node (MPI_COMM_TYPE_SHARED, whatever
// ACCRETE_NODE_SIZE pretends), which its processes' segments share: its
// RAM, or /dev/shm where that is smaller (both MPIs map the segments there).
struct node_memory {
  unsigned __int128 bytes;
  std::string where;
};
node_memory shared_memory_of_node() {
  node_memory m{(unsigned __int128)sysconf(_SC_PHYS_PAGES) * std::uint64_t(sysconf(_SC_PAGE_SIZE)), "memory"};
  struct statvfs fs {};
  if (statvfs("/dev/shm", &fs) == 0 && fs.f_blocks > 0) {
    const unsigned __int128 shm = (unsigned __int128)fs.f_blocks * fs.f_frsize;
    if (shm < m.bytes) m = {shm, "/dev/shm"};
  }
  return m;
}
std::string gib(unsigned __int128 b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", double(b) / double(std::uint64_t(1) << 30));
  return buf;
}

// ACCRETE_SEGMENT_SIZE=P% (upcxx-run -shared-heap P%): P percent of the
// node's shared memory, divided evenly among the processes on the node.
// Sets `source` to say so; nullopt unless the value ends in '%'.
std::optional<std::size_t> segment_share_from_env(int on_node, std::string& source) {
  const auto e = env_word("ACCRETE_SEGMENT_SIZE");
  if (!e || !e->ends_with('%')) return std::nullopt;
  const std::string digits = e->substr(0, e->size() - 1);
  const bool digits_only =
      !digits.empty() && digits.size() <= 3 && digits.find_first_not_of("0123456789") == std::string::npos;
  const int pct = digits_only ? std::stoi(digits) : 0;
  if (pct < 1 || pct > 100)
    throw error("accrete::init: ACCRETE_SEGMENT_SIZE='" + *e +
                "': a share of the node's memory is a whole percentage from 1% to 100%");
  const node_memory m = shared_memory_of_node();
  const unsigned __int128 share = m.bytes * unsigned(pct) / 100 / unsigned(on_node);
  source = "ACCRETE_SEGMENT_SIZE=" + *e + " (of " + gib(m.bytes) + " of " + m.where + ", shared by " +
           std::to_string(on_node) + " processes on this node)";
  if (share < 64) throw error("accrete::init: " + source + " leaves each process less than 64 bytes");
  return std::size_t(std::min<unsigned __int128>(share, std::size_t{1} << 46));
}

// Every segment of the real node lives in its shared memory. A segment
// that cannot fit fails here, naming where its size came from, instead of
// inside the MPI's shared-memory setup (an abort there, or a hang).
// Collective: every process learns whether any node failed.
void check_segment_fits(int on_node, const std::string& source, bool from_option) {
  const unsigned __int128 need = (unsigned __int128)st.seg_bytes * unsigned(on_node);
  const node_memory have = shared_memory_of_node();
  int bad_here = need > have.bytes ? 1 : 0, bad_anywhere = 0;
  ACCRETE_MPI(MPI_Allreduce(&bad_here, &bad_anywhere, 1, MPI_INT, MPI_MAX, st.world));
  if (!bad_anywhere) return;
  const std::string msg =
      bad_here ? "accrete::init: " + source + ": " + std::to_string(on_node) + " processes on this node need " +
                     gib(need) + " of shared memory for their segments, but the node has " + gib(have.bytes) + " (" +
                     have.where + "); ask for less" + (from_option ? "" : " (the variable sets each process's segment)")
               : "accrete::init: " + source + " does not fit the shared memory of another node (see its message)";
  throw error(msg);
}

// Open MPI 4's one-sided component osc/rdma crashes the process on a
// 64-bit MPI_Compare_and_swap between processes of one host (btl/vader's
// emulated atomics; open-mpi/ompi#7967, #9146, #11349; a plain MPI program
// of 2 processes, MPI_Win_allocate and one MPI_INT64_T swap, shows it). It
// serves accrete's world window whenever the world spans several nodes
// (or ACCRETE_NODE_SIZE pretends it does), and every compare_exchange of
// a 64-bit value and every double add, sub, mul, min and max is such a
// swap. So when accrete starts MPI itself it leaves osc/rdma out, unless
// the environment chooses the one-sided components (OMPI_MCA_osc, which
// `mpiexec --mca osc ...` sets too).
bool open_mpi_4() { return mpi_library_version().starts_with("Open MPI v4."); }
void avoid_osc_rdma() {
  if (open_mpi_4() && !std::getenv("OMPI_MCA_osc")) setenv("OMPI_MCA_osc", "^rdma", 0);
}
// Whether the world window is osc/rdma's (MPI_Init came before accrete,
// with osc/rdma in): of Open MPI 4.1's components only osc/rdma reports
// the info key no_locks on a window made with MPI_INFO_NULL.
bool world_window_crashes_cas64() {
  if (st.world_is_node || !open_mpi_4()) return false;
  MPI_Info info;
  if (MPI_Win_get_info(st.world_win, &info) != MPI_SUCCESS) return false;
  char value[16];
  int found = 0;
  MPI_Info_get(info, "no_locks", int(sizeof value) - 1, value, &found);
  MPI_Info_free(&info);
  return found != 0;
}
}  // namespace

std::uint64_t generation_counter = 0;

void backend_init(const init_options& opts) {
  if (st.up) throw collective_misuse("accrete::init: called twice without finalize");
  int inited = 0, finalized = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&finalized);
  if (finalized) throw not_initialized("accrete::init: MPI has already been finalized");
  const bool want_thread = opts.progress_thread.value_or(env_int("ACCRETE_PROGRESS_THREAD", 0, 1).value_or(0) != 0);
  bool par = opts.threads == thread_mode::par;
  if (!opts.threads) {
    if (auto e = env_word("ACCRETE_THREAD_MODE")) {
      if (*e != "seq" && *e != "par") throw error("accrete::init: ACCRETE_THREAD_MODE='" + *e + "' is not seq or par");
      par = *e == "par";
    }
  }
  const bool multiple = want_thread || par;
  st.needs_multiple = multiple;
  int provided = 0;
  if (!inited) {
    avoid_osc_rdma();
    MPI_Init_thread(nullptr, nullptr, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SERIALIZED, &provided);
    st.owns_mpi = true;
  } else {
    MPI_Query_thread(&provided);
    st.owns_mpi = false;
  }
  if (multiple) {
#ifdef ACCRETE_SMPI
    // SMPI runs every simulated process as a thread of one host process;
    // a second thread per simulated process is outside its model.
    if (st.owns_mpi) MPI_Finalize();
    throw error(std::string("accrete::init: ") + (par ? "the par thread mode" : "the progress thread") +
                " is not available in an SMPI (ACCRETE_SMPI) build");
#else
    if (provided < MPI_THREAD_MULTIPLE) {
      if (st.owns_mpi) MPI_Finalize();
      const char* lvl = provided == MPI_THREAD_SERIALIZED ? "MPI_THREAD_SERIALIZED"
                        : provided == MPI_THREAD_FUNNELED ? "MPI_THREAD_FUNNELED"
                                                          : "MPI_THREAD_SINGLE";
      throw error(std::string("accrete::init: ") +
                  (par ? "the par thread mode (ACCRETE_THREAD_MODE / init_options::threads)"
                       : "the progress thread (ACCRETE_PROGRESS_THREAD / init_options::progress_thread)") +
                  " needs MPI_THREAD_MULTIPLE, but this MPI provides " + lvl +
                  (st.owns_mpi ? ""
                               : " (MPI was initialised by the program: use MPI_Init_thread with "
                                 "MPI_THREAD_MULTIPLE)"));
    }
#endif
  }
  // A bad setting found from here on leaves nothing behind: the
  // communicators are freed, and MPI finalized if accrete started it.
  int node_size = 0;
  try {
    MPI_Comm_dup(MPI_COMM_WORLD, &st.world);
    MPI_Comm_dup(MPI_COMM_WORLD, &st.am);
    MPI_Comm_dup(MPI_COMM_WORLD, &st.exit_comm);
    MPI_Comm_set_errhandler(st.world, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(st.am, MPI_ERRORS_RETURN);
    MPI_Comm_rank(st.world, &st.rank);
    MPI_Comm_size(st.world, &st.size);

    if (opts.node_size)
      node_size = *opts.node_size;
    else if (auto e = env_int("ACCRETE_NODE_SIZE", 0, INT32_MAX))
      node_size = int(*e);
    if (node_size < 0) throw error("accrete::init: negative node_size " + std::to_string(node_size));
    MPI_Comm real_node;
    MPI_Comm_split_type(st.world, MPI_COMM_TYPE_SHARED, st.rank, MPI_INFO_NULL, &real_node);
    int on_real_node = 1;
    MPI_Comm_size(real_node, &on_real_node);
    if (node_size > 0) {
      int lr;
      MPI_Comm_rank(real_node, &lr);
      MPI_Comm_split(real_node, lr / node_size, lr, &st.node);
      MPI_Comm_free(&real_node);
    } else {
      st.node = real_node;
    }
    MPI_Comm_size(st.node, &st.node_n);

    std::size_t seg = std::size_t{256} << 20;
    std::string seg_source = "the default segment size";
    if (opts.segment_size) {
      seg = *opts.segment_size;
      seg_source = "init_options::segment_size = " + std::to_string(seg);
      if (seg < 64 || seg > (std::size_t{1} << 46))
        throw std::invalid_argument("accrete::init: segment_size " + std::to_string(seg) +
                                    " is outside [64, 2^46] bytes");
    } else if (auto share = segment_share_from_env(on_real_node, seg_source)) {
      seg = *share;
    } else if (auto e = env_bytes("ACCRETE_SEGMENT_SIZE", 64, std::size_t{1} << 46)) {
      seg = *e;
      seg_source = std::string("ACCRETE_SEGMENT_SIZE=") + std::getenv("ACCRETE_SEGMENT_SIZE");
    }
    st.seg_bytes = round_up(std::max<std::size_t>(seg, 64), 64);
    st.verbose = opts.verbose.value_or(env_int("ACCRETE_VERBOSE", 0, INT32_MAX).value_or(0) != 0);
    if (env_int("ACCRETE_BACKTRACE", 0, 1).value_or(0) != 0) crash_backtrace_install(st.rank);
    // The variables read later are checked here too, so that a bad value
    // fails at init, naming it, whenever it would first be used.
    (void)env_bytes("ACCRETE_AM_RING_BYTES", 0, std::size_t{1} << 30);
    (void)env_bytes("ACCRETE_AM_BULK_RING_BYTES", 0, std::size_t{1} << 30);
    (void)env_seconds("ACCRETE_COMMIT_TIMEOUT");
    (void)env_seconds("ACCRETE_COLLECTIVE_TIMEOUT");
    (void)noncontig_method_from_env();
    (void)simd_isa_from_env();
    (void)huge_pages_from_env();
    check_segment_fits(on_real_node, seg_source, opts.segment_size.has_value());
  } catch (...) {
    crash_backtrace_uninstall();
    for (MPI_Comm* c : {&st.node, &st.am, &st.world, &st.exit_comm})
      if (*c != MPI_COMM_NULL) MPI_Comm_free(c);
    if (st.owns_mpi) MPI_Finalize();
    st.owns_mpi = false;
    throw;
  }
  std::byte* local = nullptr;
  open_windows(st.seg_bytes, &local, &st.node_win, &st.world_win, &st.world_is_node, st.bases);
  st.cas64_crashes = world_window_crashes_cas64();
  open_rings();
  open_node_sync();

  st.inflight.assign(st.size, 0);
  st.inflight_total = 0;
  st.flush_marked.assign(st.size, 0);
  st.flush_targets.clear();
  st.flush_all = false;
  st.sent.assign(st.size, 0);
  st.handled.store(0, std::memory_order_relaxed);
  st.up = true;
  st.generation = ++generation_counter;
  watch_init();
  threads_init(par);
  if (want_thread) start_progress_thread();
  if (st.verbose && st.rank == 0) {
    std::string v = mpi_library_version().substr(0, 60);
    std::replace(v.begin(), v.end(), '\n', ' ');
    const int nn = st.node_n;
    std::fprintf(stderr,
                 "accrete: %d processes, node size %d (%s), segment %zu bytes, windows: %s, progress: "
                 "%s, huge pages: %s, MPI: %s\n",
                 st.size, nn, node_size > 0 ? "pretend" : "real", st.seg_bytes,
                 st.world_is_node ? "one shared" : (nn == 1 ? "allocate" : "shared + create"),
                 want_thread ? "user-driven + progress thread" : "user-driven", huge_pages_name(huge_pages_level()),
                 v.c_str());
  }
  if (st.verbose) {
    // One line per node, from its first process: where each node is, so a
    // user can check that the node is the host (docs/cluster.md).
    int node_rank;
    MPI_Comm_rank(st.node, &node_rank);
    if (node_rank == 0) {
      char host[MPI_MAX_PROCESSOR_NAME];
      int len;
      MPI_Get_processor_name(host, &len);
      std::fprintf(stderr, "accrete: node of world rank %d: %d processes on host %.*s\n", st.rank, st.node_n, len,
                   host);
    }
  }
}

// Before finalize releases anything: every active message sent anywhere
// has run. UPC++'s finalize begins with a barrier that makes user-level
// progress, so a process that has reached finalize still serves the RPCs
// of one that has not (and answers them). Rounds of an allreduce of
// (messages sent, messages run) summed over all processes, with user-level
// progress while waiting, until the sums are equal and unchanged since the
// previous round: then no message is in flight and none will be sent.
// (Every process runs user-level progress at least once between two of its
// counts, so work that was ready then, and could send, has run and would
// have changed a count.)
void finalize_drain() {
  if (!st.up) throw not_initialized("accrete::finalize: the runtime is not initialized");
  const collective_ticket t = collective_begin("accrete::finalize");
  std::uint64_t before[2] = {~std::uint64_t(0), ~std::uint64_t(0)};
  for (;;) {
    unsigned spins = 0;
    for (;;) {
      user_progress();
      if (quiescent()) break;
      idle_backoff(spins);
    }
    std::uint64_t mine[2] = {0, st.handled.load(std::memory_order_relaxed)}, all[2] = {0, 0};
    MPI_Request r;
    {
      backend_guard g;
      for (std::uint64_t n : st.sent) mine[0] += n;
      ACCRETE_MPI(MPI_Iallreduce(mine, all, 2, MPI_UINT64_T, MPI_SUM, st.world, &r));
    }
    wait_request(&r, t, true);
    if (all[0] == all[1] && all[0] == before[0] && all[1] == before[1]) break;
    before[0] = all[0];
    before[1] = all[1];
  }
  collective_end(t);
}

void close_runtime() {
  watch_finalize();
  close_live_blocks();
  close_windows(st.node_win, st.world_win, st.world_is_node);
  st.node_win = st.world_win = MPI_WIN_NULL;
  close_rings();
  close_node_sync();
  datatype_cache().clear();
  for (MPI_Comm* c : {&st.node, &st.am, &st.world, &st.exit_comm})
    if (*c != MPI_COMM_NULL) MPI_Comm_free(c);
  for (MPI_Comm& c : st.channels)
    if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
  st.channels.clear();
  st.up = false;
  st.generation = 0;
}

void backend_finalize() {
  if (!st.up) throw not_initialized("accrete::finalize: the runtime is not initialized");
  stop_progress_thread();
  // Drain everything we started, then agree that everyone is done.
  unsigned spins = 0;
  while (!quiescent()) {
    user_progress();
    idle_backoff(spins);
  }
  memory_sync();
  {
    // Timed: a process that never calls finalize is named.
    const collective_ticket t = collective_begin("accrete::finalize");
    MPI_Request r;
    ibarrier(st.world, &r);
    wait_request(&r, t);
    collective_end(t);
  }
  close_runtime();
  st.ready.clear();
  st.inbox.clear();
  st.to_self.clear();
  message_pool_clear();
  threads_finalize();
  crash_backtrace_uninstall();
  if (st.owns_mpi) MPI_Finalize();
}

bool runtime_up() noexcept { return st.up; }
std::uint64_t runtime_generation() noexcept { return st.generation; }
bool runtime_ended() noexcept { return !st.up && generation_counter > 0; }

void require_initialized(const char* what) {
  if (!st.up) throw not_initialized(std::string("accrete: ") + what + " called while the runtime is not initialized");
}

int world_rank() noexcept { return st.rank; }
int world_size() noexcept { return st.size; }
MPI_Comm world_comm() noexcept { return st.world; }
MPI_Comm node_comm() noexcept { return st.node; }
std::size_t segment_bytes() noexcept { return st.seg_bytes; }
bool is_node_local(int rank) noexcept { return rank >= 0 && rank < st.size && st.bases[rank] != nullptr; }
std::byte* segment_base(int rank) noexcept { return is_node_local(rank) ? st.bases[rank] : nullptr; }

void check_range(const char* what, int rank, std::uint64_t offset, std::size_t bytes) {
  require_initialized(what);
  if (rank < 0 || rank >= st.size)
    throw bad_global_ptr(std::string("accrete: ") + what + ": rank " + std::to_string(rank) + " out of range [0, " +
                         std::to_string(st.size) + ")");
  if (offset > st.seg_bytes || bytes > st.seg_bytes - offset)
    throw bad_global_ptr(std::string("accrete: ") + what + ": " + std::to_string(bytes) + " bytes at offset " +
                         std::to_string(offset) + " of rank " + std::to_string(rank) + " run past its segment of " +
                         std::to_string(st.seg_bytes) + " bytes");
}

std::string mpi_library_version() {
  char v[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(v, &len);  // callable before MPI_Init
  return std::string(v, std::size_t(len));
}

void memory_sync() noexcept {
  sim_charge();
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (st.up) MPI_Win_sync(st.node_win != MPI_WIN_NULL ? st.node_win : st.world_win);
}

}  // namespace accrete::detail
