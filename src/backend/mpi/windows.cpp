// Windows over node-shared memory: the segments' layout (open_windows) and
// shared_block, which data structures use for their storage.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include <sched.h>
#include <sys/mman.h>

#include "accrete/error.hpp"
#include "backend/mpi/mpi_types.hpp"
#include "backend/mpi/state.hpp"
#include "backend/mpi/type_cache.hpp"
#include "util/huge_pages.hpp"

namespace accrete::detail {

// Builds node windows and the world window over the same memory. Three
// layouts, chosen so that MPI_Win_create (which Open MPI 4.1 cannot do at
// P = 1 without osc/pt2pt) is only used when it is needed:
//   all processes on one node -> one MPI_Win_allocate_shared on world;
//   every process its own node -> MPI_Win_allocate on world;
// (decided on the largest node, so that every process takes the same branch)
//   otherwise -> MPI_Win_allocate_shared on the node + MPI_Win_create on world.
namespace {
// A window across nodes that MPI refuses. Open MPI 4.1 serves it with
// osc/pt2pt where no RDMA network is there (TCP), and osc/pt2pt refuses
// MPI_THREAD_MULTIPLE. That level comes either from accrete's own settings
// (the progress thread, the par mode) or from a program that initialised MPI
// at it, as mpi4py does by default: the user reads which of their settings
// meets which MPI limit, and what to change.
[[noreturn]] void world_window_failed(const char* call, int rc) {
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  if (level != MPI_THREAD_MULTIPLE) mpi_failed(call, rc);
  const std::string why = std::string(" (") + call + " failed: " + mpi_error_string(rc) +
                          "). Open MPI 4.1 serves such windows with osc/pt2pt where the network has no RDMA "
                          "(TCP), and osc/pt2pt does not support MPI_THREAD_MULTIPLE: ";
  if (st.needs_multiple)
    throw error(
        "accrete: MPI cannot open a window across nodes at MPI_THREAD_MULTIPLE, which "
        "ACCRETE_PROGRESS_THREAD=1 and the par thread mode need" +
        why +
        "run without the progress thread and the par mode there, or on a network Open MPI's osc/ucx "
        "serves (docs/cluster.md)");
  throw error(
      "accrete: MPI cannot open a window across nodes: the program initialised MPI at "
      "MPI_THREAD_MULTIPLE (mpi4py does so by default)" +
      why +
      "accrete needs only MPI_THREAD_SERIALIZED here. Initialise MPI at that level (MPI_Init_thread; "
      "in Python set MPI4PY_RC_THREAD_LEVEL=serialized in the environment, or mpi4py.rc.thread_level = "
      "'serialized' before the first `from mpi4py import MPI`), or let accrete initialise MPI "
      "(docs/cluster.md)");
}
}  // namespace

void open_windows(std::size_t bytes, std::byte** local, MPI_Win* node_win, MPI_Win* world_win, bool* world_is_node,
                  std::vector<std::byte*>& bases) {
  const int node_n = st.node_n;
  int max_node_n = 0;
  // The layout must be the same on every process (window creation is
  // collective): pretend nodes of k may leave one smaller node at the end.
  MPI_Allreduce(&node_n, &max_node_n, 1, MPI_INT, MPI_MAX, st.world);
  MPI_Info info;
  MPI_Info_create(&info);
  // Each slice is used on its own; MPI may place them non-contiguously.
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  MPI_Info_set(info, "same_disp_unit", "true");
  void* base = nullptr;
  bases.assign(st.size, nullptr);
  *world_is_node = false;
  if (node_n == st.size) {
    allocate_shared(bytes, info, st.world, &base, node_win);
    *world_win = *node_win;
    *world_is_node = true;
  } else if (max_node_n == 1) {
    const int rc = MPI_Win_allocate(MPI_Aint(bytes), 1, info, st.world, &base, world_win);
    if (rc != MPI_SUCCESS) world_window_failed("MPI_Win_allocate", rc);
    *node_win = MPI_WIN_NULL;
  } else {
    allocate_shared(bytes, info, st.node, &base, node_win);
    const int rc = MPI_Win_create(base, MPI_Aint(bytes), 1, info, st.world, world_win);
    if (rc != MPI_SUCCESS) world_window_failed("MPI_Win_create", rc);
  }
  MPI_Info_free(&info);
  *local = static_cast<std::byte*>(base);
  if (*node_win != MPI_WIN_NULL) {
    // Map node ranks to world ranks and ask MPI where each peer's slice is.
    MPI_Group wg, ng;
    MPI_Comm_group(st.world, &wg);
    MPI_Comm_group(st.node, &ng);
    std::vector<int> nr(node_n), wr(node_n);
    for (int i = 0; i < node_n; ++i) nr[i] = i;
    MPI_Group_translate_ranks(ng, node_n, nr.data(), wg, wr.data());
    MPI_Group_free(&wg);
    MPI_Group_free(&ng);
    const std::vector<void*> slices = shared_bases(*node_win, base);
    for (int i = 0; i < node_n; ++i)  // a zero-byte slice may report a null base
      bases[wr[i]] = slices[i] ? static_cast<std::byte*>(slices[i]) : *local;
    if (!*world_is_node) ACCRETE_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, *node_win));
  } else {
    bases[st.rank] = *local;
  }
  ACCRETE_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, *world_win));
}

#ifndef ACCRETE_SMPI
namespace {
// Every process maps the whole node's window, so with 4 KiB pages the
// node's page tables hold L x (window bytes) / 512 (docs/scaling.md).
// Asking for transparent huge pages on the mapping, before anything in this
// process touches it, lets the kernel back and map it in 2 MiB pages where
// the tmpfs holding it allows (both MPIs use /dev/shm: its huge= mount
// option) and the MPI mapped it 2 MiB-aligned with the file (Open MPI does,
// MPICH 4.0 does not); elsewhere nothing changes. madvise fails (EINVAL)
// where the kernel has no transparent huge pages; that only means 4 KiB
// pages, so the result is ignored.
void advise_window_huge_pages(MPI_Win w, MPI_Comm comm) {
  int n = 0;
  ACCRETE_MPI(MPI_Comm_size(comm, &n));
  std::uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (int i = 0; i < n; ++i) {
    MPI_Aint sz = 0;
    int du = 0;
    void* b = nullptr;
    ACCRETE_MPI(MPI_Win_shared_query(w, i, &sz, &du, &b));
    if (!b || sz <= 0) continue;
    lo = std::min(lo, reinterpret_cast<std::uintptr_t>(b));
    hi = std::max(hi, reinterpret_cast<std::uintptr_t>(b) + std::uintptr_t(sz));
  }
  if (lo < hi) advise_huge_pages(reinterpret_cast<void*>(lo), hi - lo, huge_use::target);
}
}  // namespace
#endif

void allocate_shared(std::size_t bytes, MPI_Info info, MPI_Comm comm, void* base, MPI_Win* win) {
#ifdef ACCRETE_SMPI
  // SimGrid SMPI 3.32 allocates (first process's size) x (processes) and
  // puts process r's slice at r x (its own size): with sizes that differ
  // (a matrix's local parts) the slices overlap (sizes 1000, 700, 400 gave
  // offsets 0, 700, 800). Every process asks for the largest size instead.
  std::uint64_t mine = bytes, most = 0;
  ACCRETE_MPI(MPI_Allreduce(&mine, &most, 1, MPI_UINT64_T, MPI_MAX, comm));
  bytes = std::size_t(most);
#endif
  ACCRETE_MPI(MPI_Win_allocate_shared(MPI_Aint(bytes), 1, info, comm, base, win));
#ifndef ACCRETE_SMPI
  advise_window_huge_pages(*win, comm);
#endif
}

std::vector<void*> shared_bases(MPI_Win w, void* mine) {
  std::vector<void*> out(std::size_t(st.node_n), nullptr);
#ifdef ACCRETE_SMPI
  // SimGrid SMPI 3.32's MPI_Win_shared_query returns the first process's
  // base for every rank (checked with a 3-process program: every direct
  // store then landed in node rank 0's slice, and bench_hessian's checksums
  // were wrong at P = 3). Every simulated process lives in one address
  // space, so the processes exchange their bases instead.
  (void)w;
  ACCRETE_MPI(MPI_Allgather(&mine, sizeof mine, MPI_BYTE, out.data(), sizeof mine, MPI_BYTE, st.node));
#else
  (void)mine;
  for (int i = 0; i < st.node_n; ++i) {
    MPI_Aint sz;
    int du;
    ACCRETE_MPI(MPI_Win_shared_query(w, i, &sz, &du, &out[std::size_t(i)]));
  }
#endif
  return out;
}

void close_windows(MPI_Win node_win, MPI_Win world_win, bool world_is_node) {
  MPI_Win_unlock_all(world_win);
  if (world_is_node) {
    MPI_Win_free(&world_win);
    return;
  }
  MPI_Win_free(&world_win);
  if (node_win != MPI_WIN_NULL) {
    MPI_Win_unlock_all(node_win);
    MPI_Win_free(&node_win);
  }
}

// ---- shared blocks --------------------------------------------------------------

struct shared_block::windows {
  MPI_Win node = MPI_WIN_NULL;
  MPI_Win world = MPI_WIN_NULL;
  bool world_is_node = false;
  // Per target: an operation was issued since its last flush. A flush of a
  // clean target is skipped: with direct node-local stores most targets are
  // clean, and an empty MPI_Win_flush still costs a trip through the MPI
  // progress engine (array_rma: acc 64x64 node-local 1.45x plain MPI).
  // Set after the issue, cleared before the flush, so that a flush racing
  // with an issue on another thread leaves the target dirty, never clean.
  std::unique_ptr<std::atomic<std::uint8_t>[]> dirty;
  void issued(int rank) { dirty[std::size_t(rank)].store(1, std::memory_order_release); }
  bool take(int rank) { return dirty[std::size_t(rank)].exchange(0, std::memory_order_acq_rel) != 0; }
  bool open = false;
  void close() {
    if (open) close_windows(node, world, world_is_node);
    open = false;
  }
};

namespace {
// Every block whose windows are open, oldest first. Blocks are created and
// destroyed by the thread that drives the runtime.
// Never destroyed: a static shared_block elsewhere (the collective watch's)
// may be released by a static destructor after this one would have run, as
// when a program (or a child it forked) exits without finalize.
std::vector<shared_block::windows*>& live_blocks() {
  static auto* v = new std::vector<shared_block::windows*>;
  return *v;
}
}  // namespace

std::size_t live_shared_blocks() noexcept { return live_blocks().size(); }

void close_live_blocks() {
  for (auto* w : live_blocks()) w->close();
  live_blocks().clear();
}

shared_block::shared_block(std::size_t bytes) {
  require_initialized("shared_block");
  bytes_ = bytes;
  std::vector<std::byte*> bases;
  auto w = std::make_unique<windows>();
  // Each slice starts on the first cache line of its window: MPI places a
  // window where it likes (Open MPI 4.1's shared windows 8 bytes past a
  // page), and a matrix column whose runs of 16 floats each straddled two
  // lines cost the assembly kernels up to twice the misses. Node peers see
  // the same offset within a page (shared memory is mapped page-aligned);
  // other processes learn each pad from an allgather.
  constexpr std::size_t line = 64;
  open_windows(std::max<std::size_t>(bytes, 1) + line, &local_, &w->node, &w->world, &w->world_is_node, bases);
  auto pad = std::uint8_t((line - reinterpret_cast<std::uintptr_t>(local_) % line) % line);
  auto pads = std::make_unique<std::uint8_t[]>(std::size_t(st.size));
  ACCRETE_MPI(MPI_Allgather(&pad, 1, MPI_UINT8_T, pads.get(), 1, MPI_UINT8_T, st.world));
  local_ += pad;
  w->dirty = std::make_unique<std::atomic<std::uint8_t>[]>(std::size_t(st.size));  // all clean (value-initialized)
  w->open = true;
  live_blocks().push_back(w.get());
  wins_ = w.release();
  peers_ = new std::byte*[bases.size()];
  for (std::size_t r = 0; r < bases.size(); ++r) peers_[r] = bases[r] ? bases[r] + pads[r] : nullptr;
  pads_ = pads.release();
}

shared_block::shared_block(shared_block&& o) noexcept { *this = std::move(o); }

shared_block& shared_block::operator=(shared_block&& o) noexcept {
  if (this != &o) {
    release();
    local_ = std::exchange(o.local_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    wins_ = std::exchange(o.wins_, nullptr);
    peers_ = std::exchange(o.peers_, nullptr);
    pads_ = std::exchange(o.pads_, nullptr);
  }
  return *this;
}

shared_block::~shared_block() { release(); }

void shared_block::release() noexcept {
  if (wins_ && wins_->open) {
    if (st.up) wins_->close();
    auto& live = live_blocks();
    live.erase(std::remove(live.begin(), live.end(), wins_), live.end());
  }
  delete wins_;
  wins_ = nullptr;
  delete[] peers_;
  peers_ = nullptr;
  delete[] pads_;
  pads_ = nullptr;
  local_ = nullptr;
}

void shared_block::read(int rank, std::size_t offset, void* dst, std::size_t bytes) const {
  if (offset > bytes_ && rank == st.rank) throw error("accrete::shared_block::read: offset past the slice");
  if (std::byte* p = peer(rank)) {
    memory_sync();
    std::memcpy(dst, p + offset, bytes);
    return;
  }
  auto d = static_cast<std::byte*>(dst);
  for (std::size_t off = 0; off < bytes; off += max_chunk) {
    int n = int(std::min(max_chunk, bytes - off));
    ACCRETE_MPI(MPI_Get(d + off, n, MPI_BYTE, rank, MPI_Aint(disp(rank, offset + off)), n, MPI_BYTE, wins_->world));
  }
  ACCRETE_MPI(MPI_Win_flush(rank, wins_->world));
}

bool shared_block::try_read(int rank, std::size_t offset, void* dst, std::size_t bytes, double seconds) const {
  if (peer(rank)) {
    read(rank, offset, dst, bytes);
    return true;
  }
  if (bytes > max_chunk)
    throw error("accrete::shared_block::try_read: " + std::to_string(bytes) + " bytes is too large");
  MPI_Request r;
  ACCRETE_MPI(
      MPI_Rget(dst, int(bytes), MPI_BYTE, rank, MPI_Aint(disp(rank, offset)), int(bytes), MPI_BYTE, wins_->world, &r));
  const double until = MPI_Wtime() + seconds;
  for (;;) {
    int done = 0;
    ACCRETE_MPI(MPI_Test(&r, &done, MPI_STATUS_IGNORE));
    if (done) return true;
    if (MPI_Wtime() > until) return false;
    os_yield();
  }
}

void shared_block::sync() const noexcept {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!st.up || !wins_) return;
  MPI_Win_sync(wins_->node != MPI_WIN_NULL ? wins_->node : wins_->world);
}

std::byte* shared_block::peer(int rank) const noexcept {
  return (rank >= 0 && rank < st.size && peers_) ? peers_[rank] : nullptr;
}

}  // namespace accrete::detail

// ---- rectangles: the dist_array data path ------------------------------------------

namespace accrete::detail {

// Never destroyed, as live_blocks(): first used after init, it would be
// destroyed before the exit check (exit_check.cpp) that closes the runtime
// of a program ending without finalize, and that clears it.
type_cache& datatype_cache() {
  static auto* c = new type_cache;
  return *c;
}

namespace {
// rows x cols elements at leading dimension ld, as one committed type. The
// stride goes to MPI in bytes as an MPI_Aint (hvector): an int stride would
// cut an ld above INT_MAX (2^32 + 1 became 1, and 2^31 + 1 a negative
// stride that wrote before the buffer). Callers keep rows x cols <= INT_MAX.
MPI_Datatype rect_type(scalar_type t, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  if (cols == 1 || ld == rows) {
    rows *= cols;
    cols = 1;
    ld = rows;
  }
  const std::int64_t key[] = {1, std::int64_t(t), rows, cols, ld};
  return datatype_cache().get(key, [&] {
    MPI_Datatype d;
    if (cols == 1)
      ACCRETE_MPI(MPI_Type_contiguous(int(rows), mpi_type(t), &d));
    else
      ACCRETE_MPI(
          MPI_Type_create_hvector(int(cols), int(rows), MPI_Aint(ld) * MPI_Aint(scalar_bytes(t)), mpi_type(t), &d));
    ACCRETE_MPI(MPI_Type_commit(&d));
    return d;
  });
}

// Accumulates of complex elements travel as sums of their real and
// imaginary parts: Open MPI 4.1.4's osc/rdma adds MPI_C_FLOAT_COMPLEX wrongly
// on a window from MPI_Win_create (the mixed layout: every element of a
// dist_array<complex<float>> acc came out wrong), and a sum of complex
// numbers is exactly the sum of the float pairs. Returns the type to use and
// how many of it make one element.
std::pair<scalar_type, std::int64_t> acc_parts(scalar_type t) {
  if (t == scalar_type::c32) return {scalar_type::f32, 2};
  if (t == scalar_type::c64) return {scalar_type::f64, 2};
  return {t, 1};
}

void issue(shared_block::rma_op op, void* o, int count, MPI_Datatype ot, int rank, MPI_Aint disp, MPI_Datatype tt,
           MPI_Win w) {
  switch (op) {
    case shared_block::rma_op::put:
      ACCRETE_MPI(MPI_Put(o, count, ot, rank, disp, 1, tt, w));
      break;
    case shared_block::rma_op::get:
      ACCRETE_MPI(MPI_Get(o, count, ot, rank, disp, 1, tt, w));
      break;
    case shared_block::rma_op::acc:
      ACCRETE_MPI(MPI_Accumulate(o, count, ot, rank, disp, 1, tt, MPI_SUM, w));
      break;
  }
}

// Waits for local completion before returning. Why not MPI_Rget and
// friends: with MPICH 4.0 (ch4:ucx, MPI_Win_allocate) an MPI_Rget request
// completed before its data had arrived in our tests. Why not defer the
// completion to the next progress: the trip through progress doubled a
// small get's latency (array_rma, 1x1 over MPI: 0.55 against plain MPI's
// 0.27 us) and, oversubscribed, let the wait yield the core (9.3 against
// 4.9 us at P = 4).
void complete_locally(int rank, MPI_Win w) { ACCRETE_MPI(MPI_Win_flush_local(rank, w)); }
}  // namespace

void shared_block::rect(rma_op op, int rank, std::size_t offset, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                        scalar_type t, void* origin, std::int64_t origin_ld) const {
  if (rows <= 0 || cols <= 0) return;
  if (op == rma_op::acc) {
    const auto [pt, k] = acc_parts(t);
    t = pt;
    rows *= k;
    ld *= k;
    origin_ld *= k;
  }
  const std::size_t es = scalar_bytes(t);
  // MPI counts are int: a column taller than INT_MAX elements goes in row
  // pieces, and each operation moves at most INT_MAX elements (whole
  // columns of the piece).
  const std::int64_t max_rows = std::int64_t(INT_MAX);
  for (std::int64_t r0 = 0; r0 < rows; r0 += max_rows) {
    const std::int64_t nr = std::min(max_rows, rows - r0);
    const std::int64_t chunk = std::max<std::int64_t>(1, max_rows / nr);
    for (std::int64_t c0 = 0; c0 < cols; c0 += chunk) {
      const std::int64_t nc = std::min(chunk, cols - c0);
      MPI_Datatype ot = rect_type(t, nr, nc, origin_ld), tt = rect_type(t, nr, nc, ld);
      auto* o = static_cast<std::byte*>(origin) + std::size_t(c0 * origin_ld + r0) * es;
      issue(op, o, 1, ot, rank, MPI_Aint(disp(rank, offset + std::size_t(c0 * ld + r0) * es)), tt, wins_->world);
    }
  }
  wins_->issued(rank);
  complete_locally(rank, wins_->world);
}

void shared_block::elements(rma_op op, int rank, std::size_t offset, std::span<const std::int64_t> disps, scalar_type t,
                            void* origin) const {
  const std::size_t n = disps.size();
  if (n == 0) return;
  const std::size_t es = scalar_bytes(t);
  const auto [pt, k] = op == rma_op::acc ? acc_parts(t) : std::pair{t, std::int64_t{1}};
  const MPI_Datatype ot = mpi_type(pt);
  // Irregular lists: one type per piece of at most INT_MAX / 2 elements (not
  // cached), freed once issued.
  const std::size_t piece = std::size_t(INT_MAX) / 2;
  std::vector<MPI_Aint> bytes(std::min(n, piece));
  for (std::size_t first = 0; first < n; first += piece) {
    const std::size_t m = std::min(piece, n - first);
    for (std::size_t q = 0; q < m; ++q) bytes[q] = MPI_Aint(std::size_t(disps[first + q]) * es);
    MPI_Datatype tt;
    ACCRETE_MPI(MPI_Type_create_hindexed_block(int(m), int(k), bytes.data(), ot, &tt));
    ACCRETE_MPI(MPI_Type_commit(&tt));
    issue(op, static_cast<std::byte*>(origin) + first * es, int(std::size_t(k) * m), ot, rank,
          MPI_Aint(disp(rank, offset)), tt, wins_->world);
    MPI_Type_free(&tt);
  }
  wins_->issued(rank);
  complete_locally(rank, wins_->world);
}

std::int64_t shared_block::fetch_op(int rank, std::size_t offset, std::int64_t v, bool replace) const {
  std::int64_t old = 0;
  ACCRETE_MPI(MPI_Fetch_and_op(&v, &old, MPI_INT64_T, rank, MPI_Aint(disp(rank, offset)),
                               replace ? MPI_REPLACE : MPI_SUM, wins_->world));
  ACCRETE_MPI(MPI_Win_flush(rank, wins_->world));
  return old;
}

void shared_block::flush(int rank) const {
  if (wins_ && st.up && wins_->take(rank)) ACCRETE_MPI(MPI_Win_flush(rank, wins_->world));
  sync();
}

// Per target, not MPI_Win_flush_all: MPICH 4.0.2's flush_all returned
// before small puts had completed (README, known limitations).
void shared_block::flush_all() const {
  if (wins_ && st.up)
    for (int r = 0; r < st.size; ++r)
      if (wins_->take(r)) ACCRETE_MPI(MPI_Win_flush(r, wins_->world));
  sync();
}

// rect() and elements() wait for local completion before they return
// (complete_locally), so every operation issued on the block is already
// locally complete: nothing is left to wait for.
void shared_block::flush_local_all() const {}

}  // namespace accrete::detail
