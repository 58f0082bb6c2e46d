#pragma once
// The typed loops of assembly: the direct store into a node-local part,
// packing for a remote one, and the receive-side apply. Included by the
// typed layers (src/matrix/convergent_matrix.cpp), which instantiate them
// for their element types.
#include <algorithm>
#include <bit>
#include <cmath>
#include <complex>
#include <limits>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

#include "accrete/detail/assembly_engine.hpp"
#include "accrete/detail/packet_format.hpp"
#include "assembly/common.hpp"
#include "assembly/exchange.hpp"
#include "assembly/repro.hpp"
#include "assembly/simd.hpp"
#include "util/prefetch.hpp"

namespace accrete::detail {

// Runs of consecutive local rows whose source positions are consecutive too:
// the inner loops over a run are unit-stride on both sides and vectorise.
// `loc` and `pos` (the run's first local row and source position) are kept
// so that the loops over runs, run once per column, load one record per run
// (runs are 4-8 rows in the Hessian workload).
struct index_run {
  std::int32_t first, len, loc, pos;
};

inline void make_runs(const std::int32_t* loc, const std::int32_t* pos, std::int32_t n,
                      std::vector<index_run>& out) {
  out.clear();
  for (std::int32_t r = 0; r < n;) {
    std::int32_t e = r + 1;
    while (e < n && loc[e] == loc[e - 1] + 1 && (!pos || pos[e] == pos[e - 1] + 1)) ++e;
    out.push_back({r, e - r, loc[r], pos ? pos[r] : r});
    r = e;
  }
}

// Software prefetch (for writing) of every cache line the runs of one
// target column cover. The runs of an update land scattered over a
// column's pages, where the hardware prefetchers do not follow them: each
// run was a cache (and often TLB) miss the core waited on. Issued
// `prefetch_columns` columns ahead, the misses of several columns overlap.
inline constexpr std::int32_t prefetch_columns = 4;
template <class T>
inline void prefetch_runs(const T* col, const std::vector<index_run>& runs) {
  for (const auto& ru : runs) prefetch_lines(col + ru.loc, std::size_t(ru.len) * sizeof(T), true);
}

template <class T>
inline void add_run(T* __restrict dst, const T* __restrict src, std::int32_t len) {
  for (std::int32_t k = 0; k < len; ++k) dst[k] += src[k];
}

// dst[ru.loc + k] += src[ru.pos + k] over one target column's runs, one
// call for the column (src/assembly/simd.hpp); complex elements as their
// components.
template <class T>
inline void add_column(simd_isa isa, T* dst, const T* src, const std::vector<index_run>& runs) {
  add_runs(isa, reinterpret_cast<real_t<T>*>(dst), reinterpret_cast<const real_t<T>*>(src), runs.data(), runs.size(),
           width<T>);
}

// merge_op::max and min: associative and commutative on every value, so
// the result never depends on arrival order (std::max is not: it returns
// its first argument for -0 and +0, and NaN handling depends on the side).
template <class T>
inline T merge_max(T a, T b) noexcept {
  if (a != a || b != b) return std::numeric_limits<T>::quiet_NaN();
  if (a == b) return std::signbit(a) ? b : a;
  return a < b ? b : a;
}
template <class T>
inline T merge_min(T a, T b) noexcept {
  if (a != a || b != b) return std::numeric_limits<T>::quiet_NaN();
  if (a == b) return std::signbit(a) ? a : b;
  return b < a ? b : a;
}

// dst[k] = merge(dst[k], src[k]). max and min exist for the real types
// only (the constructor rejects them for complex, which has no order).
template <class T>
inline void merge_run(const assembly_shape& s, T* __restrict dst, const T* __restrict src, std::int32_t len) {
  switch (s.merge) {
    case merge_op::sum:
      break;
    case merge_op::max:
    case merge_op::min:
      if constexpr (std::is_floating_point_v<T>) {
        if (s.merge == merge_op::max)
          for (std::int32_t k = 0; k < len; ++k) dst[k] = merge_max(dst[k], src[k]);
        else
          for (std::int32_t k = 0; k < len; ++k) dst[k] = merge_min(dst[k], src[k]);
        return;
      }
      break;
    case merge_op::user: {
      const auto f = reinterpret_cast<T (*)(T, T)>(s.user_merge);
      for (std::int32_t k = 0; k < len; ++k) dst[k] = f(dst[k], src[k]);
      return;
    }
  }
  add_run(dst, src, len);
}
// Runs attempt(x, false) on each pending item, keeping those that report
// busy, and repeats, so a preempted lock holder (oversubscribed nodes) does
// not stall a caller that has other work. When a whole pass finds
// everything busy it pauses and passes again: it never waits for one item
// while another may free up first (waiting on the first busy stripe let a
// caller sit behind a lock held for seconds while the rest of its update
// could have gone in). Items that take several locks (atomic pieces) could
// in principle keep defeating each other's try-locks, so with
// `block_when_stuck` a caller stuck for 64 passes waits for the first with
// attempt(x, true), which takes its locks in ascending order: that always
// ends. Single-lock items need no such fallback: a free lock is taken.
template <class X, class F>
void retry_busy(std::vector<X>& pending, F&& attempt, bool block_when_stuck) {
  unsigned spins = 0, stuck = 0;
  while (!pending.empty()) {
    std::size_t keep = 0;
    for (auto& x : pending)
      if (!attempt(x, false)) pending[keep++] = x;
    if (keep < pending.size()) {
      pending.resize(keep);
      spins = stuck = 0;
    } else if (block_when_stuck && ++stuck >= 64) {
      attempt(pending[0], true);
      pending.erase(pending.begin());
      stuck = 0;
    } else {
      spin_pause(spins);
    }
  }
}

// Busy stripes are skipped and retried later (retry_busy).
template <class F>
bool assembly_engine::with_stripes(int part, const std::int32_t* lcol, std::int32_t nc, F&& cols, bool wait) {
  if (shape_.atomic_updates) {
    // Whole-update atomicity: every stripe the piece touches, locked in
    // ascending order (two atomic appliers then never wait on each other in
    // a cycle), then the whole piece at once (two-phase locking: pieces
    // that share an element are applied one after the other). Without
    // `wait`, a busy stripe releases those taken and reports false, so the
    // caller can do another piece first.
    ACCRETE_THREAD_LOCAL std::vector<std::int64_t> stripes;
    stripes.clear();
    for (std::int32_t c = 0; c < nc; ++c) stripes.push_back(stripe_of(lcol[c]));
    std::sort(stripes.begin(), stripes.end());
    stripes.erase(std::unique(stripes.begin(), stripes.end()), stripes.end());
    for (std::size_t k = 0; k < stripes.size(); ++k) {
      if (wait) {
        lock_stripe(part, stripes[k]);
      } else if (!try_lock_stripe(part, stripes[k])) {
        while (k > 0) unlock_stripe(part, stripes[--k]);
        return false;
      }
    }
    cols(0, nc);
    for (std::int64_t st : stripes) unlock_stripe(part, st);
    return true;
  }
  struct segment {
    std::int64_t stripe;
    std::int32_t begin, end;
  };
  ACCRETE_THREAD_LOCAL std::vector<segment> pending;
  pending.clear();
  for (std::int32_t c = 0; c < nc;) {
    const std::int64_t s = stripe_of(lcol[c]);
    std::int32_t e = c + 1;
    while (e < nc && stripe_of(lcol[e]) == s) ++e;
    pending.push_back({s, c, e});
    c = e;
  }
  retry_busy(
      pending,
      [&](const segment& seg, bool) {
        if (!try_lock_stripe(part, seg.stripe)) return false;
        cols(seg.begin, seg.end);
        unlock_stripe(part, seg.stripe);
        return true;
      },
      false);
  return true;
}

/// The receive-side kernel: adds one validated packet to this process's part.
template <class T>
void apply_packet(assembly_engine& e, const packet_view& v) {
  ACCRETE_THREAD_LOCAL std::vector<index_run> runs;
  make_runs(v.lrow, nullptr, v.nr, runs);
  T* data = reinterpret_cast<T*>(e.storage());
  const std::int64_t lld = e.shape().lld;
  const T* vals = reinterpret_cast<const T*>(v.values);
  const simd_isa isa = simd_level();
  if constexpr (exact_capable<T>) {
    if (e.shape().reproducible) {
      // Add where exact, log the rest (src/assembly/repro.hpp), component
      // by component: log indices count components.
      using R = real_t<T>;
      constexpr int w = width<T>;
      R* rdata = reinterpret_cast<R*>(data);
      const R* rvals = reinterpret_cast<const R*>(vals);
      ACCRETE_THREAD_LOCAL std::vector<assembly_engine::spill> spilled;
      spilled.clear();
      e.with_stripes(e.shape().my_part, v.lcol, v.nc, [&](std::int32_t c0, std::int32_t c1) {
        for (std::int32_t c = c0; c < c1; ++c) {
          const std::int64_t col = std::int64_t(v.lcol[c]) * lld * w;
          if (c + prefetch_columns < v.nc) prefetch_runs(data + std::int64_t(v.lcol[c + prefetch_columns]) * lld, runs);
          add_runs_exact(isa, rdata + col, rvals + std::int64_t(c) * v.nr * w, runs.data(), runs.size(), w,
                         [&](std::int64_t at, R x) { spilled.push_back({col + at, double(x)}); });
        }
      });
      if (!spilled.empty()) e.log_spills(spilled);
      return;
    }
  }
  e.with_stripes(e.shape().my_part, v.lcol, v.nc, [&](std::int32_t c0, std::int32_t c1) {
    for (std::int32_t c = c0; c < c1; ++c) {
      T* dst = data + std::int64_t(v.lcol[c]) * lld;
      const T* src = vals + std::int64_t(c) * v.nr;
      if (c + prefetch_columns < v.nc) prefetch_runs(data + std::int64_t(v.lcol[c + prefetch_columns]) * lld, runs);
      if (e.shape().merge == merge_op::sum)  // decided per column: the add loop stays tight
        add_column(isa, dst, src, runs);
      else
        for (auto& ru : runs) merge_run(e.shape(), dst + ru.loc, src + ru.pos, ru.len);
    }
  });
}

/// The spill log in index order (the order within an index does not
/// matter: an exact sum has none). A long log goes by least-significant-digit
/// radix sort, 11 bits a pass: std::sort was a fifth of a sparse matrix's
/// reproducible later round with general values (millions of spills per
/// process, bench/fe_assembly/README.md).
inline void sort_spills(std::vector<assembly_engine::spill>& log) {
  using spill = assembly_engine::spill;
  if (log.size() < 4096) {
    std::sort(log.begin(), log.end(), [](const spill& x, const spill& y) { return x.index < y.index; });
    return;
  }
  std::uint64_t any = 0;  // indices are >= 0
  for (const spill& x : log) any |= std::uint64_t(x.index);
  constexpr int digit = 11;
  constexpr std::size_t buckets = std::size_t{1} << digit;
  std::vector<spill> other(log.size());
  const int width = int(std::bit_width(any));
  for (int shift = 0; shift < width; shift += digit) {
    std::size_t start[buckets + 1] = {};
    for (const spill& x : log) ++start[((std::uint64_t(x.index) >> shift) & (buckets - 1)) + 1];
    for (std::size_t b = 0; b < buckets; ++b) start[b + 1] += start[b];
    for (const spill& x : log) other[start[(std::uint64_t(x.index) >> shift) & (buckets - 1)]++] = x;
    log.swap(other);
  }
}

/// Reproducible assembly at commit: each logged element's value and its
/// logged contributions are summed exactly and rounded once; then the log
/// is cleared for the next round.
template <class T>
void settle_spills_into(assembly_engine& e, T* elements) {
  using R = real_t<T>;  // log indices count components
  auto& log = e.spills();
  if (log.empty()) return;
  sort_spills(log);
  R* data = reinterpret_cast<R*>(elements);
  for (std::size_t i = 0; i < log.size();) {
    R& x = data[log[i].index];
    std::size_t j = i;
    while (j < log.size() && log[j].index == log[i].index) ++j;
    x = settle_sum(x, j - i, [&](std::size_t k) { return log[i + k].value; });
    i = j;
  }
  log.clear();
  log.shrink_to_fit();
}
template <class T>
void settle_spills(assembly_engine& e) {
  settle_spills_into(e, reinterpret_cast<T*>(e.storage()));
}

template <class T>
void assembly_engine::update(const T* block, std::int64_t ld, std::span<const std::int64_t> rows,
                             std::span<const std::int64_t> cols, matrix_layout lay) {
  validate(rows, cols, ld, lay, block);
  if (rows.empty() || cols.empty()) return;
  ACCRETE_THREAD_LOCAL binned b;
  ACCRETE_THREAD_LOCAL std::vector<index_run> runs;
  ACCRETE_THREAD_LOCAL std::vector<int> remote;
  const double t_start = now();
  bin(rows, cols, b);
  const double t_binned = now();
  const std::uint64_t my_round = round_.load(std::memory_order_relaxed);
  const bool colmaj = lay == matrix_layout::col_major;
  // Element (i, j) of the block is block[i * rs + j * cs].
  const std::int64_t rs = colmaj ? 1 : ld, cs = colmaj ? ld : 1;
  const int pc = shape_.col_map.parts;
  auto piece = [&](int target) {
    const int tr = target / pc, tc = target % pc;
    const std::int32_t r0 = b.row_start[tr], nr = b.row_start[tr + 1] - r0;
    const std::int32_t c0 = b.col_start[tc], nc = b.col_start[tc + 1] - c0;
    struct {
      const std::int32_t *rpos, *rloc, *cpos, *cloc;
      std::int32_t nr, nc;
    } p{&b.row_pos[r0], &b.row_loc[r0], &b.col_pos[c0], &b.col_loc[c0], nr, nc};
    return p;
  };
  if (shape_.atomic_updates)  // before anything is applied
    for (int target : b.targets) {
      const auto p = piece(target);
      require_whole_piece(target, p.nr, p.nc, sizeof(T));
    }
  // Node-local owners whose part is open for this round: add straight from
  // the caller's block into their storage, one column-block stripe lock at
  // a time, without the engine lock. The others are packed below.
  std::uint64_t direct = 0;
  remote.clear();
  const bool may_store = exchange_->direct() && shape_.element_storage;
  // Reproducible assembly: a direct store adds only where the sum is exact;
  // the other contributions go to the owner's log (src/assembly/repro.hpp):
  // this process's own directly, a peer's as 1 x 1 packets (rare: most
  // sums are exact).
  // Complex elements are checked and logged per component.
  using R = real_t<T>;
  constexpr int w = width<T>;
  struct spilled_one {
    int target;
    std::int32_t lrow, lcol, component;
    R value;
  };
  ACCRETE_THREAD_LOCAL std::vector<spilled_one> spilled;
  spilled.clear();
  const bool exact = exact_capable<T> && shape_.reproducible;
  const simd_isa isa = simd_level();
  // Adds the piece for `target` into its storage `peer`; false if an
  // atomic piece found a stripe busy and `wait` is false.
  auto store = [&](int target, std::byte* peer, bool wait) {
    const auto p = piece(target);
    T* data = reinterpret_cast<T*>(peer);
    const std::int64_t tld = lld_of_[target];
    make_runs(p.rloc, colmaj ? p.rpos : nullptr, p.nr, runs);
    return with_stripes(
        target, p.cloc, p.nc,
        [&](std::int32_t c0, std::int32_t c1) {
          for (std::int32_t c = c0; c < c1; ++c) {
            T* dst = data + std::int64_t(p.cloc[c]) * tld;
            const T* src = block + std::int64_t(p.cpos[c]) * cs;
            if (colmaj && c + prefetch_columns < p.nc)
              prefetch_runs(data + std::int64_t(p.cloc[c + prefetch_columns]) * tld, runs);
            if constexpr (exact_capable<T>) {
              if (exact) {
                // i: the component's offset in the column.
                auto spill = [&](std::int64_t i, R x) {
                  spilled.push_back({target, std::int32_t(i / w), p.cloc[c], std::int32_t(i % w), x});
                };
                R* rdst = reinterpret_cast<R*>(dst);
                if (colmaj) {
                  add_runs_exact(isa, rdst, reinterpret_cast<const R*>(src), runs.data(), runs.size(), w, spill);
                } else {
                  for (std::int32_t r = 0; r < p.nr; ++r) {
                    const R* from = reinterpret_cast<const R*>(&src[std::int64_t(p.rpos[r]) * rs]);
                    for (std::int32_t k = 0; k < w; ++k)
                      if (!add_if_exact(rdst[std::int64_t(p.rloc[r]) * w + k], from[k]))
                        spill(std::int64_t(p.rloc[r]) * w + k, from[k]);
                  }
                }
                continue;
              }
            }
            if (colmaj && shape_.merge == merge_op::sum) {  // decided per column: the add loop stays tight
              add_column(isa, dst, src, runs);
            } else if (colmaj) {
              for (auto& ru : runs) merge_run(shape_, dst + ru.loc, src + ru.pos, ru.len);
            } else {
              for (std::int32_t r = 0; r < p.nr; ++r)
                merge_run(shape_, dst + p.rloc[r], src + std::int64_t(p.rpos[r]) * rs, 1);
            }
          }
        },
        wait);
  };
  // Atomic pieces whose part was busy are retried after the others
  // (retry_busy), so that a process does not wait while it has other work.
  ACCRETE_THREAD_LOCAL std::vector<std::pair<int, std::byte*>> busy;
  busy.clear();
  // A structure that keeps its own elements (no element storage) has this
  // process's piece applied in place by its apply kernel, under the engine
  // lock like a received packet, when its part is open for this round: no
  // packet, no copy into a message.
  bool own_in_place = false;
  for (int target : b.targets) {
    if (!shape_.element_storage && target == shape_.my_part && direct_target(target, my_round)) {
      own_in_place = true;
      continue;
    }
    std::byte* peer = may_store ? direct_target(target, my_round) : nullptr;
    if (!peer) {
      remote.push_back(target);
      continue;
    }
    if (!store(target, peer, false)) busy.push_back({target, peer});
    ++direct;
  }
  retry_busy(
      busy, [&](const std::pair<int, std::byte*>& t, bool wait_) { return store(t.first, t.second, wait_); }, true);
  {
    std::lock_guard g(lock());
    ++stats_.updates;
    ++updates_since_commit_;
    stats_.elements += rows.size() * cols.size();
    stats_.t_bin += t_binned - t_start;
    if (own_in_place) {
      const auto p = piece(shape_.my_part);
      const T* vals = nullptr;
      // The block is the piece itself when it is column-major with every
      // row and column in order; otherwise the piece is gathered.
      bool in_order = colmaj && (ld == p.nr || p.nc == 1);
      for (std::int32_t i = 0; in_order && i < p.nr; ++i) in_order = p.rpos[i] == i;
      for (std::int32_t j = 0; in_order && j < p.nc; ++j) in_order = p.cpos[j] == j;
      ACCRETE_THREAD_LOCAL std::vector<T> gathered;
      if (in_order) {
        vals = block;
      } else {
        gathered.resize(std::size_t(p.nr) * std::size_t(p.nc));
        for (std::int32_t j = 0; j < p.nc; ++j)
          for (std::int32_t i = 0; i < p.nr; ++i)
            gathered[std::size_t(j) * std::size_t(p.nr) + std::size_t(i)] =
                block[std::int64_t(p.rpos[i]) * rs + std::int64_t(p.cpos[j]) * cs];
        vals = gathered.data();
      }
      apply_(*this, packet_view{p.rloc, p.nr, p.cloc, p.nc, reinterpret_cast<const std::byte*>(vals)});
      ++direct;
    }
    stats_.direct_packets += direct;
    stats_.t_apply += now() - t_binned;
    // Remote owners, parts not open for this round, or a strategy without
    // direct stores: pack each sub-block column-major behind its local row
    // and column lists, in pieces of at most max_packet_bytes (half the
    // memory cap, and within MPI's int counts).
    const std::size_t max_bytes = max_packet_bytes();
    // Reserves an nr x nc packet for `target`, writes its header and index
    // lists (packet_format.hpp), and returns where its values go.
    auto start_packet = [&](int target, std::int32_t nr, std::int32_t nc, const std::int32_t* rl,
                            const std::int32_t* cl) {
      const std::size_t bytes = *packet_bytes(std::size_t(nr), std::size_t(nc), sizeof(T));
      exchange_->reserve(*this, bytes);
      std::byte* slot = packet_slot(target, bytes);
      const std::int32_t dims[2] = {nr, nc};
      std::memcpy(slot, dims, sizeof dims);
      std::memcpy(slot + 8, rl, 4 * std::size_t(nr));
      std::memcpy(slot + 8 + 4 * std::size_t(nr), cl, 4 * std::size_t(nc));
      return reinterpret_cast<T*>(slot + bytes - std::size_t(nr) * std::size_t(nc) * sizeof(T));
    };
    for (const spilled_one& sp : spilled) {
      if (sp.target == shape_.my_part) {
        const assembly_engine::spill one{(std::int64_t(sp.lcol) * shape_.lld + sp.lrow) * w + sp.component,
                                         double(sp.value)};
        log_spills({&one, 1});
        continue;
      }
      // A 1 x 1 packet; a complex element's other component is -0, which
      // adds exactly to everything (x + -0 == x, -0 included).
      R one[w];
      std::fill_n(one, w, R(-0.0));
      one[sp.component] = sp.value;
      std::memcpy(start_packet(sp.target, 1, 1, &sp.lrow, &sp.lcol), one, sizeof one);
      exchange_->packed(*this, sp.target);
    }
    for (int target : remote) {
      const auto p = piece(target);
      std::int32_t rr = p.nr, cc = p.nc;
      if (*packet_bytes(std::size_t(p.nr), 1, sizeof(T)) > max_bytes) {
        rr = std::int32_t(std::max<std::size_t>(1, (max_bytes - 24) / (sizeof(T) + 4)));
        cc = 1;
      } else {
        const std::size_t col = std::size_t(p.nr) * sizeof(T) + 4;
        const std::size_t fixed = *packet_bytes(std::size_t(p.nr), 0, sizeof(T)) + 8;
        cc = std::int32_t(
            std::min<std::size_t>(std::size_t(p.nc), std::max<std::size_t>(1, (max_bytes - fixed) / col)));
      }
      const double t0 = now();
      // Whole columns of a column-major block: copy runs of consecutive
      // source rows (block-cyclic pieces come in runs of up to a block),
      // not one indexed load per element.
      const bool by_runs = colmaj && rr == p.nr;
      if (by_runs) make_runs(p.rpos, nullptr, p.nr, runs);
      for (std::int32_t j0 = 0; j0 < p.nc; j0 += cc)
        for (std::int32_t i0 = 0; i0 < p.nr; i0 += rr) {
          const std::int32_t pr = std::min(rr, p.nr - i0), pcn = std::min(cc, p.nc - j0);
          T* v = start_packet(target, pr, pcn, p.rloc + i0, p.cloc + j0);
          for (std::int32_t c = 0; c < pcn; ++c) {
            const T* src = block + std::int64_t(p.cpos[j0 + c]) * cs;
            T* to = v + std::int64_t(c) * pr;
            if (by_runs)
              for (const auto& ru : runs) std::memcpy(to + ru.first, src + ru.loc, std::size_t(ru.len) * sizeof(T));
            else
              for (std::int32_t r = 0; r < pr; ++r) to[r] = src[std::int64_t(p.rpos[i0 + r]) * rs];
          }
          exchange_->packed(*this, target);
        }
      stats_.t_bin += now() - t0;
    }
  }
  exchange_->updated(*this, rows.size() * cols.size());
}

}  // namespace accrete::detail
