// convergent_matrix: binning, packets, direct node-local application under
// stripe locks, coalesced messages to remote owners, and the commit protocol.
//
// Message format (packets strategy), after the active-message header:
//   u32 matrix id | u32 round | packet*
//   packet = i32 nr | i32 nc | i32 lrow[nr] | i32 lcol[nc] | pad to 8 | T vals[nr*nc] (column-major)
// Commit counts messages: each process learns how many messages were sent
// to it this round (MPI_Ireduce_scatter_block) and progresses until that
// many have been applied. Rounds alternate parity so a fast process's
// next-round messages are never counted in the current round.
#include "accrete/matrix/convergent_matrix.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <numeric>
#include <thread>
#include <unordered_map>

#include <sched.h>

#include "accrete/collectives.hpp"
#include "accrete/error.hpp"
#include "accrete/matrix/mpiio.hpp"
#include "accrete/matrix/scalapack.hpp"
#include "accrete/progress.hpp"

namespace accrete {
namespace detail {
namespace {

constexpr std::int64_t nlocks = 64;
constexpr std::uint64_t alive_magic = 0xacc7e7eULL;

std::unordered_map<std::uint32_t, cm_core*>& registry() {
  static std::unordered_map<std::uint32_t, cm_core*> r;
  return r;
}
std::uint32_t next_id = 0;

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct timer {
  double& acc;
  double t0 = now();
  ~timer() { acc += now() - t0; }
};

std::size_t packet_bytes(std::size_t nr, std::size_t nc, std::size_t esize) {
  std::size_t idx = 8 + 4 * (nr + nc);
  return (idx + 7) / 8 * 8 + nr * nc * esize;
}

std::uint64_t splitmix(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void spin_pause(unsigned& spins) {
  if (++spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  } else {
    sched_yield();
  }
}

}  // namespace

// One lock for all matrices of the process: it guards each matrix's
// outboxes, counters and stats, and serialises every backend call, so that
// threads updating different matrices never enter the (single-threaded)
// backend together.
std::mutex& backend_mutex() {
  static std::mutex m;
  return m;
}

struct cm_core::sync {
  std::mutex& comm = backend_mutex();
};

cm_core::cm_core(std::int64_t m, std::int64_t n, const process_grid& grid, std::int64_t mb, std::int64_t nb,
                 std::size_t elem_size, const convergent_matrix_options& opt)
    : layout_((require_initialized("convergent_matrix"), m), n, mb, nb, grid.rows(), grid.cols()),
      grid_(grid),
      opt_(opt),
      esize_(elem_size),
      lrows_(layout_.local_rows(grid.my_row())),
      lcols_(layout_.local_cols(grid.my_col())),
      lld_(opt.lld ? opt.lld : std::max<std::int64_t>(1, lrows_)),
      nlocks_(nlocks),
      header_(64 * nlocks + 64),
      sync_(std::make_unique<sync>()) {
  int gsize;
  MPI_Comm_size(grid.comm(), &gsize);
  if (gsize != world_size())
    throw collective_misuse("accrete::convergent_matrix: the process grid has " + std::to_string(gsize) +
                            " processes but the world team has " + std::to_string(world_size()) +
                            "; the grid must span every process");
  if (opt.lld < 0 || (opt.lld != 0 && opt.lld < std::max<std::int64_t>(1, lrows_)))
    throw std::invalid_argument("accrete::convergent_matrix: lld = " + std::to_string(opt.lld) +
                                " is below the local row count " + std::to_string(lrows_));
  if (lld_ > INT32_MAX || lcols_ > INT32_MAX)
    throw std::invalid_argument("accrete::convergent_matrix: local dimensions " + std::to_string(lld_) + " x " +
                                std::to_string(lcols_) + " exceed 2^31-1");
  if (opt.buffer_cap == 0) throw std::invalid_argument("accrete::convergent_matrix: buffer_cap = 0");
  // Grid rank -> world rank, for messages and shared-memory peers.
  MPI_Group g, w;
  MPI_Comm_group(grid.comm(), &g);
  MPI_Comm_group(world_comm(), &w);
  std::vector<int> mine(gsize);
  std::iota(mine.begin(), mine.end(), 0);
  world_of_.resize(gsize);
  MPI_Group_translate_ranks(g, gsize, mine.data(), w, world_of_.data());
  MPI_Group_free(&g);
  MPI_Group_free(&w);
  // Origins write into peers' storage, so each needs every peer's lld.
  lld_of_.resize(gsize);
  MPI_Allgather(&lld_, 1, MPI_INT64_T, lld_of_.data(), 1, MPI_INT64_T, grid.comm());

  block_ = shared_block(header_ + std::size_t(lld_) * std::size_t(lcols_) * esize_);
  std::memset(block_.local(), 0, block_.local_bytes());
  barrier(world());
  // Map node peers' storage into this process now (one read per page), so
  // the first updates do not pay the page-table faults.
  volatile std::byte sink{};
  for (int g = 0; g < gsize; ++g)
    if (std::byte* p = block_.peer(world_of_[g]); p && world_of_[g] != world_rank()) {
      const std::size_t bytes =
          header_ + std::size_t(lld_of_[g]) * std::size_t(layout_.local_cols(grid.coords_of(g).col)) * esize_;
      for (std::size_t off = 0; off < bytes; off += 4096) sink = p[off];
    }
  (void)sink;
  outbox_.resize(gsize);
  sent_msgs_.assign(gsize, 0);
  std::uint64_t seed = opt.seed ^ (std::uint64_t(world_rank()) * 0x9e3779b97f4a7c15ULL);
  rng_ = splitmix(seed);
  static bool registered = [] {
    am_register(&cm_core::on_message, true);
    return true;
  }();
  (void)registered;
  // Ids follow collective construction order, identical on every process.
  id_ = next_id++;
  registry()[id_] = this;
  alive_ = alive_magic;
  barrier(world());  // nobody sends before every instance exists and is zeroed
}

cm_core::~cm_core() {
  alive_ = 0;
  active_ = false;
  if (runtime_up()) {
    // Drain our own traffic; peers may still be reading nothing from us
    // after their commit, so a barrier makes release of the windows safe.
    try {
      barrier(world());
    } catch (...) {
    }
  }
  registry().erase(id_);
}

std::byte* cm_core::peer_data(int grid_rank) const noexcept {
  std::byte* p = block_.peer(world_of_[grid_rank]);
  return p ? p + header_ : nullptr;
}

void cm_core::lock_stripe(int grid_rank, std::int64_t stripe) const noexcept {
  auto* word = reinterpret_cast<std::uint32_t*>(block_.peer(world_of_[grid_rank]) + 64 * stripe);
  std::atomic_ref<std::uint32_t> lk(*word);
  unsigned spins = 0;
  for (;;) {
    if (lk.load(std::memory_order_relaxed) == 0 && lk.exchange(1, std::memory_order_acquire) == 0) return;
    spin_pause(spins);
  }
}

bool cm_core::try_lock_stripe(int grid_rank, std::int64_t stripe) const noexcept {
  auto* word = reinterpret_cast<std::uint32_t*>(block_.peer(world_of_[grid_rank]) + 64 * stripe);
  std::atomic_ref<std::uint32_t> lk(*word);
  return lk.load(std::memory_order_relaxed) == 0 && lk.exchange(1, std::memory_order_acquire) == 0;
}

template <class F>
void cm_core::with_stripes(int grid_rank, const std::int32_t* lcol, std::int32_t nc, F&& cols) {
  struct segment {
    std::int64_t stripe;
    std::int32_t begin, end;
  };
  thread_local std::vector<segment> pending;
  pending.clear();
  for (std::int32_t c = 0; c < nc;) {
    const std::int64_t s = stripe_of(lcol[c]);
    std::int32_t e = c + 1;
    while (e < nc && stripe_of(lcol[e]) == s) ++e;
    pending.push_back({s, c, e});
    c = e;
  }
  while (!pending.empty()) {
    std::size_t keep = 0;
    for (auto& seg : pending) {
      if (try_lock_stripe(grid_rank, seg.stripe)) {
        cols(seg.begin, seg.end);
        unlock_stripe(grid_rank, seg.stripe);
      } else {
        pending[keep++] = seg;
      }
    }
    if (keep == pending.size()) {  // everything busy: wait for the first
      lock_stripe(grid_rank, pending[0].stripe);
      cols(pending[0].begin, pending[0].end);
      unlock_stripe(grid_rank, pending[0].stripe);
      pending.erase(pending.begin());
    } else {
      pending.resize(keep);
    }
  }
}

void cm_core::unlock_stripe(int grid_rank, std::int64_t stripe) const noexcept {
  auto* word = reinterpret_cast<std::uint32_t*>(block_.peer(world_of_[grid_rank]) + 64 * stripe);
  std::atomic_ref<std::uint32_t>(*word).store(0, std::memory_order_release);
}

void cm_core::validate(std::span<const std::int64_t> rows, std::span<const std::int64_t> cols, std::int64_t ld,
                       matrix_layout lay, const void* block) const {
  require_initialized("convergent_matrix::update");
  if (alive_ != alive_magic) throw error("accrete::convergent_matrix::update: the matrix has been destroyed");
  for (std::size_t k = 0; k < rows.size(); ++k)
    if (rows[k] < 0 || rows[k] >= layout_.rows())
      throw std::out_of_range("accrete::convergent_matrix::update: row index " + std::to_string(rows[k]) +
                              " at position " + std::to_string(k) + " is outside [0, " +
                              std::to_string(layout_.rows()) + ")");
  for (std::size_t k = 0; k < cols.size(); ++k)
    if (cols[k] < 0 || cols[k] >= layout_.cols())
      throw std::out_of_range("accrete::convergent_matrix::update: column index " + std::to_string(cols[k]) +
                              " at position " + std::to_string(k) + " is outside [0, " +
                              std::to_string(layout_.cols()) + ")");
  const std::int64_t need = std::int64_t(lay == matrix_layout::col_major ? rows.size() : cols.size());
  if (ld < 0 || ld < need)
    throw std::invalid_argument("accrete::convergent_matrix::update: leading dimension " + std::to_string(ld) +
                                " is smaller than the block's " + (lay == matrix_layout::col_major ? "row" : "column") +
                                " count " + std::to_string(need));
  if (!block && !rows.empty() && !cols.empty())
    throw std::invalid_argument("accrete::convergent_matrix::update: null block");
  if (rows.size() > INT32_MAX || cols.size() > INT32_MAX)
    throw std::invalid_argument("accrete::convergent_matrix::update: more than 2^31-1 indices");
}

void cm_core::bin(std::span<const std::int64_t> rows, std::span<const std::int64_t> cols, binned& b) {
  const int pr = grid_.rows(), pc = grid_.cols();
  const std::int64_t mb = layout_.row_block(), nb = layout_.col_block();
  auto group = [](std::span<const std::int64_t> ix, int np, std::int64_t bs, int src, std::vector<std::int32_t>& start,
                  std::vector<std::int32_t>& pos, std::vector<std::int32_t>& loc) {
    start.assign(np + 1, 0);
    pos.resize(ix.size());
    loc.resize(ix.size());
    for (auto i : ix) ++start[((i / bs) + src) % np + 1];
    for (int p = 0; p < np; ++p) start[p + 1] += start[p];
    std::vector<std::int32_t> fill(start.begin(), start.end() - 1);
    for (std::size_t k = 0; k < ix.size(); ++k) {
      std::int64_t i = ix[k];
      int owner = int(((i / bs) + src) % np);
      std::int32_t at = fill[owner]++;
      pos[at] = std::int32_t(k);
      loc[at] = std::int32_t((i / (bs * np)) * bs + i % bs);
    }
  };
  group(rows, pr, mb, layout_.src_row(), b.row_start, b.row_pos, b.row_loc);
  group(cols, pc, nb, layout_.src_col(), b.col_start, b.col_pos, b.col_loc);
  b.targets.clear();
  for (int r = 0; r < pr; ++r) {
    if (b.row_start[r] == b.row_start[r + 1]) continue;
    for (int c = 0; c < pc; ++c)
      if (b.col_start[c] != b.col_start[c + 1]) b.targets.push_back(grid_.rank_of(r, c));
  }
  // Random visiting order spreads concurrent origins over different targets.
  std::uint64_t s;
  {
    std::lock_guard<std::mutex> g(sync_->comm);
    s = splitmix(rng_);
  }
  for (std::size_t k = b.targets.size(); k > 1; --k) std::swap(b.targets[k - 1], b.targets[splitmix(s) % k]);
}

std::byte* cm_core::packet_slot(int grid_rank, std::size_t bytes) {
  auto& box = outbox_[grid_rank];
  if (box.empty()) {
    // Room for the active-message header and the matrix id / round words.
    box.resize(am_header_bytes + 8);
    buffered_ += box.size();
  }
  std::size_t at = box.size();
  box.resize(at + bytes);
  buffered_ += bytes;
  stats_.peak_buffered = std::max(stats_.peak_buffered, buffered_ + am_inflight_bytes());
  return box.data() + at;
}

void cm_core::flush_target(int grid_rank) {
  auto& box = outbox_[grid_rank];
  if (box.empty()) return;
  std::uint32_t hdr[2] = {id_, round_};
  std::memcpy(box.data() + am_header_bytes, hdr, sizeof hdr);
  buffered_ -= box.size();
  stats_.bytes_sent += box.size();
  ++stats_.messages_sent;
  ++sent_msgs_[grid_rank];
  {
    timer t(stats_.t_move);
    am_send_owned(world_of_[grid_rank], &cm_core::on_message, std::move(box));
  }
  box = std::vector<std::byte>();
}

void cm_core::wait_for_room() {
  if (buffered_ + am_inflight_bytes() <= opt_.buffer_cap) return;
  // Send what is buffered, then let the sends drain (and keep applying what
  // arrives, so two processes waiting on each other both make headway).
  for (int g = 0; g < int(outbox_.size()); ++g) flush_target(g);
  timer t(stats_.t_wait);
  unsigned spins = 0;
  while (buffered_ + am_inflight_bytes() > opt_.buffer_cap) {
    poll();
    if (buffered_ + am_inflight_bytes() > opt_.buffer_cap) idle_backoff(spins);
  }
}

void cm_core::on_message(int source, std::span<const std::byte> payload) {
  std::uint32_t hdr[2];
  if (payload.size() < sizeof hdr)
    throw error("accrete::convergent_matrix: truncated message from rank " + std::to_string(source));
  std::memcpy(hdr, payload.data(), sizeof hdr);
  auto it = registry().find(hdr[0]);
  if (it == registry().end())
    throw error("accrete::convergent_matrix: message from rank " + std::to_string(source) + " for unknown matrix id " +
                std::to_string(hdr[0]));
  cm_core& m = *it->second;
  if (!m.active_) {
    if (m.alive_ != alive_magic)
      throw error("accrete::convergent_matrix: update from rank " + std::to_string(source) +
                  " arrived after the matrix was destroyed (updates after the last commit?)");
    m.early_.emplace_back(source, std::vector<std::byte>(payload.begin(), payload.end()));
    return;
  }
  {
    timer t(m.stats_.t_apply);
    m.apply_packets(payload.subspan(sizeof hdr));
  }
  ++m.received_[hdr[1] & 1];
}

void cm_core::activate() {
  active_ = true;
  auto early = std::move(early_);
  for (auto& [source, msg] : early) on_message(source, msg);
}

void cm_core::apply_packets(std::span<const std::byte> p) {
  std::size_t at = 0;
  while (at < p.size()) {
    std::int32_t dims[2];
    if (p.size() - at < sizeof dims) throw error("accrete::convergent_matrix: truncated packet");
    std::memcpy(dims, p.data() + at, sizeof dims);
    const std::size_t nr = std::size_t(dims[0]), nc = std::size_t(dims[1]);
    const std::size_t bytes = packet_bytes(nr, nc, esize_);
    if (dims[0] < 0 || dims[1] < 0 || bytes > p.size() - at)
      throw error("accrete::convergent_matrix: malformed packet");
    auto lrow = reinterpret_cast<const std::int32_t*>(p.data() + at + 8);
    auto lcol = lrow + nr;
    for (std::size_t k = 0; k < nr; ++k)
      if (lrow[k] < 0 || lrow[k] >= lrows_) throw error("accrete::convergent_matrix: packet row out of range");
    for (std::size_t k = 0; k < nc; ++k)
      if (lcol[k] < 0 || lcol[k] >= lcols_) throw error("accrete::convergent_matrix: packet column out of range");
    apply_packet(lrow, std::int32_t(nr), lcol, std::int32_t(nc), p.data() + at + (bytes - nr * nc * esize_));
    ++stats_.packets_received;
    at += bytes;
  }
}

void cm_core::accumulate_packet(int grid_rank, const std::int32_t* lrow, std::int32_t nr, const std::int32_t* lcol,
                                std::int32_t nc, const void* values) {
  // One indexed datatype over the target's storage: a block per run of
  // consecutive local rows in each column.
  thread_local std::vector<int> lens;
  thread_local std::vector<MPI_Aint> disps;
  lens.clear();
  disps.clear();
  for (std::int32_t c = 0; c < nc; ++c) {
    for (std::int32_t r = 0; r < nr;) {
      std::int32_t e = r + 1;
      while (e < nr && lrow[e] == lrow[e - 1] + 1) ++e;
      lens.push_back(e - r);
      disps.push_back(MPI_Aint((std::int64_t(lcol[c]) * lld_of_[grid_rank] + lrow[r]) * std::int64_t(esize_)));
      r = e;
    }
  }
  MPI_Datatype t;
  MPI_Type_create_hindexed(int(lens.size()), lens.data(), disps.data(), mpi_type(), &t);
  MPI_Type_commit(&t);
  const int rank = world_of_[grid_rank];
  MPI_Accumulate(values, nr * nc, mpi_type(), rank, MPI_Aint(header_), 1, t, MPI_SUM, block_.world_window());
  // The packed values live in a reused buffer: complete locally before reuse.
  MPI_Win_flush_local(rank, block_.world_window());
  MPI_Type_free(&t);
  stats_.bytes_sent += std::size_t(nr) * nc * esize_;
  ++stats_.messages_sent;
}

void cm_core::check_timeout(double start, const char* what) {
  static const double limit = [] {
    const char* e = std::getenv("ACCRETE_COMMIT_TIMEOUT");
    return e ? std::atof(e) : 0.0;
  }();
  if (limit <= 0 || now() - start < limit) return;
  // Name the processes that have not entered this commit.
  std::string missing;
  const std::uint64_t mine = epoch();
  for (int g = 0; g < int(world_of_.size()); ++g) {
    std::uint64_t e = 0;
    block_.read(world_of_[g], header_ - 64, &e, sizeof e);
    if (e < mine) missing += (missing.empty() ? "" : ", ") + std::to_string(world_of_[g]);
  }
  std::fprintf(stderr,
               "accrete: convergent_matrix %s on rank %d timed out after %.1f s (ACCRETE_COMMIT_TIMEOUT); "
               "processes not in this commit: %s\n",
               what, world_rank(), limit, missing.empty() ? "(none; waiting for messages)" : missing.c_str());
  std::fflush(stderr);
  MPI_Abort(world_comm(), 3);
}

void cm_core::wait_request(MPI_Request& r, const char* what) {
  const double start = now();
  unsigned spins = 0;
  for (;;) {
    int done = 0;
    MPI_Test(&r, &done, MPI_STATUS_IGNORE);
    if (done) return;
    user_progress();
    idle_backoff(spins);
    check_timeout(start, what);
  }
}

void cm_core::commit() {
  require_initialized("convergent_matrix::commit");
  if (alive_ != alive_magic) throw error("accrete::convergent_matrix::commit: the matrix has been destroyed");
  std::lock_guard<std::mutex> g(sync_->comm);
  ++epoch();
  memory_sync();
  timer t(stats_.t_wait);
  const int np = int(world_of_.size());
  if (opt_.strategy == update_strategy::packets) {
    for (int k = 0; k < np; ++k) flush_target(k);
    std::uint64_t expected = 0;
    MPI_Request r;
    MPI_Ireduce_scatter_block(sent_msgs_.data(), &expected, 1, MPI_UINT64_T, MPI_SUM, grid_.comm(), &r);
    wait_request(r, "commit");
    const double start = now();
    unsigned spins = 0;
    while (received_[round_ & 1] < expected) {
      poll();
      if (received_[round_ & 1] < expected) idle_backoff(spins);
      check_timeout(start, "commit");
    }
    received_[round_ & 1] -= expected;
    std::fill(sent_msgs_.begin(), sent_msgs_.end(), 0);
    ++round_;
  } else if (opt_.strategy == update_strategy::accumulate) {
    // Per target: MPI_Win_flush_all is unreliable in MPICH 4.0.2 (see
    // src/backend/mpi/backend.cpp, flush_rma).
    for (int r : world_of_) MPI_Win_flush(r, block_.world_window());
  } else {
    std::vector<int> scount(np), rcount(np), sdisp(np + 1, 0), rdisp(np + 1, 0);
    for (int k = 0; k < np; ++k) {
      std::size_t b = outbox_[k].empty() ? 0 : outbox_[k].size() - am_header_bytes - 8;
      if (b > std::size_t(INT32_MAX))
        throw error("accrete::convergent_matrix: alltoall strategy: " + std::to_string(b) +
                    " bytes for one target exceed MPI's int count");
      scount[k] = int(b);
    }
    MPI_Alltoall(scount.data(), 1, MPI_INT, rcount.data(), 1, MPI_INT, grid_.comm());
    std::vector<std::byte> sbuf, rbuf;
    for (int k = 0; k < np; ++k) {
      sdisp[k + 1] = sdisp[k] + scount[k];
      rdisp[k + 1] = rdisp[k] + rcount[k];
      if (std::int64_t(sdisp[k]) + scount[k] > INT32_MAX || std::int64_t(rdisp[k]) + rcount[k] > INT32_MAX)
        throw error("accrete::convergent_matrix: alltoall strategy: exchange exceeds 2^31-1 bytes");
    }
    sbuf.resize(std::size_t(sdisp[np]));
    for (int k = 0; k < np; ++k) {
      if (scount[k]) std::memcpy(sbuf.data() + sdisp[k], outbox_[k].data() + am_header_bytes + 8, scount[k]);
      outbox_[k] = std::vector<std::byte>();
    }
    buffered_ = 0;
    rbuf.resize(std::size_t(rdisp[np]));
    MPI_Request r;
    MPI_Ialltoallv(sbuf.data(), scount.data(), sdisp.data(), MPI_BYTE, rbuf.data(), rcount.data(), rdisp.data(),
                   MPI_BYTE, grid_.comm(), &r);
    wait_request(r, "commit");
    stats_.bytes_sent += std::size_t(sdisp[np]);
    timer ta(stats_.t_apply);
    apply_packets(std::span<const std::byte>(rbuf.data(), rbuf.size()));
  }
  MPI_Request b;
  memory_sync();
  MPI_Ibarrier(world_comm(), &b);
  wait_request(b, "commit");
  memory_sync();
}

void cm_core::reset_storage() {
  require_initialized("convergent_matrix::reset");
  barrier(world());  // nobody still reads or writes the old contents
  for (std::int64_t c = 0; c < lcols_; ++c)
    std::memset(local_bytes() + std::size_t(c * lld_) * esize_, 0, lrows_ * esize_);
  barrier(world());  // and nobody updates before everybody has zeroed
}

convergent_matrix_stats cm_core::stats() const {
  std::lock_guard<std::mutex> g(sync_->comm);
  return stats_;
}

void cm_core::reset_stats() {
  std::lock_guard<std::mutex> g(sync_->comm);
  stats_ = convergent_matrix_stats{};
}

}  // namespace detail

// ---- the typed part --------------------------------------------------------------

namespace {

// Runs of consecutive local rows whose source positions are consecutive too:
// the inner loops over a run are unit-stride on both sides and vectorise.
struct run {
  std::int32_t first, len;
};

void make_runs(const std::int32_t* loc, const std::int32_t* pos, std::int32_t n, std::vector<run>& out) {
  out.clear();
  for (std::int32_t r = 0; r < n;) {
    std::int32_t e = r + 1;
    while (e < n && loc[e] == loc[e - 1] + 1 && (!pos || pos[e] == pos[e - 1] + 1)) ++e;
    out.push_back({r, e - r});
    r = e;
  }
}

template <class T>
inline void add_run(T* __restrict dst, const T* __restrict src, std::int32_t len) {
  for (std::int32_t k = 0; k < len; ++k) dst[k] += src[k];
}

}  // namespace

template <class T>
MPI_Datatype convergent_matrix<T>::mpi_type() const noexcept {
  return std::is_same_v<T, float> ? MPI_FLOAT : MPI_DOUBLE;
}

template <class T>
void convergent_matrix<T>::apply_packet(const std::int32_t* lrow, std::int32_t nr, const std::int32_t* lcol,
                                        std::int32_t nc, const std::byte* values) {
  thread_local std::vector<run> runs;
  make_runs(lrow, nullptr, nr, runs);
  T* data = local();
  const int me = grid().rank_of(grid().my_row(), grid().my_col());
  const T* vals = reinterpret_cast<const T*>(values);
  with_stripes(me, lcol, nc, [&](std::int32_t c0, std::int32_t c1) {
    for (std::int32_t c = c0; c < c1; ++c) {
      T* dst = data + std::int64_t(lcol[c]) * lld();
      const T* src = vals + std::int64_t(c) * nr;
      for (auto& ru : runs) add_run(dst + lrow[ru.first], src + ru.first, ru.len);
    }
  });
}

template <class T>
void convergent_matrix<T>::update(const T* block, std::int64_t ld, std::span<const std::int64_t> rows,
                                  std::span<const std::int64_t> cols, matrix_layout lay) {
  validate(rows, cols, ld, lay, block);
  if (rows.empty() || cols.empty()) return;
  thread_local binned b;
  thread_local std::vector<run> runs;
  thread_local std::vector<T> packed;
  {
    double t0 = detail::now();
    bin(rows, cols, b);
    std::lock_guard<std::mutex> g(sync_->comm);
    stats_.t_bin += detail::now() - t0;
    ++stats_.updates;
    stats_.elements += rows.size() * cols.size();
  }
  const bool colmaj = lay == matrix_layout::col_major;
  // Element (i, j) of the block is block[i * rs + j * cs].
  const std::int64_t rs = colmaj ? 1 : ld, cs = colmaj ? ld : 1;
  for (int target : b.targets) {
    auto [tr, tc] = grid().coords_of(target);
    const std::int32_t r0 = b.row_start[tr], nr = b.row_start[tr + 1] - r0;
    const std::int32_t c0 = b.col_start[tc], nc = b.col_start[tc + 1] - c0;
    const std::int32_t *rpos = &b.row_pos[r0], *rloc = &b.row_loc[r0];
    const std::int32_t *cpos = &b.col_pos[c0], *cloc = &b.col_loc[c0];
    std::byte* peer = opt_.strategy == update_strategy::packets ? peer_data(target) : nullptr;
    if (peer) {
      // Node-local owner: add straight from the caller's block into the
      // owner's storage, one column-block stripe lock at a time.
      double t0 = detail::now();
      T* data = reinterpret_cast<T*>(peer);
      const std::int64_t tld = lld_of_[target];
      make_runs(rloc, colmaj ? rpos : nullptr, nr, runs);
      with_stripes(target, cloc, nc, [&](std::int32_t c0, std::int32_t c1) {
        for (std::int32_t c = c0; c < c1; ++c) {
          T* dst = data + std::int64_t(cloc[c]) * tld;
          const T* src = block + std::int64_t(cpos[c]) * cs;
          if (colmaj) {
            for (auto& ru : runs) add_run(dst + rloc[ru.first], src + rpos[ru.first], ru.len);
          } else {
            for (std::int32_t r = 0; r < nr; ++r) dst[rloc[r]] += src[std::int64_t(rpos[r]) * rs];
          }
        }
      });
      std::lock_guard<std::mutex> g(sync_->comm);
      ++stats_.direct_packets;
      stats_.t_apply += detail::now() - t0;
      continue;
    }
    // Remote owner (or a strategy that always goes through MPI): pack the
    // sub-block column-major behind its local row and column lists.
    const std::size_t bytes = detail::packet_bytes(nr, nc, sizeof(T));
    auto pack_into = [&](T* v) {
      for (std::int32_t c = 0; c < nc; ++c) {
        const T* src = block + std::int64_t(cpos[c]) * cs;
        for (std::int32_t r = 0; r < nr; ++r) v[std::int64_t(c) * nr + r] = src[std::int64_t(rpos[r]) * rs];
      }
    };
    if (opt_.strategy == update_strategy::accumulate) {
      packed.resize(std::size_t(nr) * nc);
      pack_into(packed.data());
      std::lock_guard<std::mutex> g(sync_->comm);
      detail::timer t(stats_.t_move);
      accumulate_packet(target, rloc, nr, cloc, nc, packed.data());
      continue;
    }
    std::lock_guard<std::mutex> g(sync_->comm);
    double t0 = detail::now();
    std::byte* slot = packet_slot(target, bytes);
    const std::int32_t dims[2] = {nr, nc};
    std::memcpy(slot, dims, sizeof dims);
    std::memcpy(slot + 8, rloc, 4 * std::size_t(nr));
    std::memcpy(slot + 8 + 4 * std::size_t(nr), cloc, 4 * std::size_t(nc));
    pack_into(reinterpret_cast<T*>(slot + bytes - std::size_t(nr) * nc * sizeof(T)));
    stats_.t_bin += detail::now() - t0;
    if (opt_.strategy == update_strategy::packets && outbox_[target].size() >= opt_.coalesce_bytes)
      flush_target(target);
  }
  if (opt_.strategy == update_strategy::packets) {
    // Apply what has arrived for us, and respect the memory cap.
    std::unique_lock<std::mutex> g(sync_->comm, std::try_to_lock);
    if (g.owns_lock()) {
      detail::poll();
      wait_for_room();
    } else if (buffered_ + detail::am_inflight_bytes() > opt_.buffer_cap) {
      g.lock();
      wait_for_room();
    }
  }
}

template <class T>
void convergent_matrix<T>::update_symmetric(const T* block, std::int64_t ld, std::span<const std::int64_t> ix,
                                            matrix_layout lay) {
  validate(ix, ix, ld, lay, block);
  // Split into one update per column so each carries only rows ix[i] <= ix[j].
  thread_local std::vector<std::int64_t> rsel;
  thread_local std::vector<T> vals;
  const bool colmaj = lay == matrix_layout::col_major;
  for (std::size_t j = 0; j < ix.size(); ++j) {
    rsel.clear();
    vals.clear();
    for (std::size_t i = 0; i < ix.size(); ++i)
      if (ix[i] <= ix[j]) {
        rsel.push_back(ix[i]);
        vals.push_back(colmaj ? block[i + j * std::size_t(ld)] : block[i * std::size_t(ld) + j]);
      }
    if (!rsel.empty()) update(vals.data(), std::int64_t(rsel.size()), rsel, ix.subspan(j, 1));
  }
}

template <class T>
T convergent_matrix<T>::get(std::int64_t i, std::int64_t j) const {
  detail::require_initialized("convergent_matrix::get");
  const int owner = grid().rank_of(layout().owner_row(i), layout().owner_col(j));
  const std::size_t off =
      header_ + std::size_t(layout().local_col(j) * lld_of_[owner] + layout().local_row(i)) * sizeof(T);
  T v;
  block_.read(world_of_[owner], off, &v, sizeof v);
  return v;
}

template <class T>
std::array<int, 9> convergent_matrix<T>::descriptor() const {
  return accrete::descriptor(layout(), grid(), lld());
}

template <class T>
void convergent_matrix<T>::save(const std::string& path) const {
  write_matrix(path, grid().comm(), layout(), grid(), local(), lld());
}

template <class T>
void convergent_matrix<T>::load(const std::string& path) {
  read_matrix(path, grid().comm(), layout(), grid(), local(), lld());
  barrier(world());
}

template <class T>
void convergent_matrix<T>::transpose_into(bool upper_only, bool average) {
  // Element (i, j) here goes to the owner of (j, i). Each side enumerates
  // the same elements in the same order (sender's local column-major order,
  // restricted to what the receiver owns), so only values travel.
  const auto& L = layout();
  const int np = grid().size();
  auto sends = [&](int sr, int sc, int tr, int tc, auto&& fn) {
    const std::int64_t nlc = L.local_cols(sc), nlr = L.local_rows(sr);
    for (std::int64_t lj = 0; lj < nlc; ++lj) {
      const std::int64_t j = L.global_col(sc, lj);
      if (L.owner_row(j) != tr) continue;
      for (std::int64_t li = 0; li < nlr; ++li) {
        const std::int64_t i = L.global_row(sr, li);
        if (L.owner_col(i) != tc || i == j || (upper_only && i > j)) continue;
        fn(i, j, li, lj);
      }
    }
  };
  std::vector<int> sc(np, 0), rc(np, 0), sd(np + 1, 0), rd(np + 1, 0);
  std::vector<T> sbuf;
  const int mr = grid().my_row(), mc = grid().my_col();
  for (int t = 0; t < np; ++t) {
    auto [tr, tc] = grid().coords_of(t);
    sends(mr, mc, tr, tc,
          [&](auto, auto, std::int64_t li, std::int64_t lj) { sbuf.push_back(local()[lj * lld() + li]); });
    sd[t + 1] = int(sbuf.size());
    sc[t] = sd[t + 1] - sd[t];
  }
  for (int s = 0; s < np; ++s) {
    auto [sr, scol] = grid().coords_of(s);
    int n = 0;
    sends(sr, scol, mr, mc, [&](auto, auto, auto, auto) { ++n; });
    rc[s] = n;
    rd[s + 1] = rd[s] + n;
  }
  std::vector<T> rbuf(std::size_t(rd[np]));
  MPI_Alltoallv(sbuf.data(), sc.data(), sd.data(), mpi_type(), rbuf.data(), rc.data(), rd.data(), mpi_type(),
                grid().comm());
  for (int s = 0; s < np; ++s) {
    auto [sr, scol] = grid().coords_of(s);
    std::size_t k = std::size_t(rd[s]);
    sends(sr, scol, mr, mc, [&](std::int64_t i, std::int64_t j, auto, auto) {
      // The value of (i, j) lands on our element (j, i).
      T& dst = local()[L.local_col(i) * lld() + L.local_row(j)];
      dst = average ? (dst + rbuf[k]) / T(2) : rbuf[k];
      ++k;
    });
  }
  barrier(world());
}

template <class T>
void convergent_matrix<T>::fill_lower() {
  detail::require_initialized("convergent_matrix::fill_lower");
  transpose_into(true, false);
}

template <class T>
void convergent_matrix<T>::symmetrize() {
  detail::require_initialized("convergent_matrix::symmetrize");
  transpose_into(false, true);
}

template class convergent_matrix<float>;
template class convergent_matrix<double>;

}  // namespace accrete
