// sparse_matrix<T>: the typed layer over the assembly engine for a sparse
// target. The engine bins, buffers, sends and counts (no direct stores:
// only the owner knows where an entry lives); this file owns the pattern
// and the values, and the two kernels the engine calls on the owner:
//   sparse_apply   one packet: in round 0 logged whole (rows_from_log lays
//                  the pattern out from the log at the first commit); later
//                  each (row, column) found in the row's sorted columns and
//                  merged in place, entries not in a growing pattern
//                  collected for commit
//   sparse_settle  at commit: the reproducible log settled, then the
//                  pattern laid out (round 0) or the collected entries
//                  merged into it, as the diagonal and off-diagonal CSR
//                  blocks.
// Updates of the caller's own rows skip the engine: logged (round 0) or
// added through the slot cache (later rounds) in place, under the engine
// lock (log_in_place, update_in_place); in later rounds an update's rows
// of other processes go to the engine from the slot cache too, checked
// against the pattern once, when recorded.
#include "accrete/sparse/sparse_matrix.hpp"

#include <algorithm>
#include <atomic>
#include <climits>
#include <complex>
#include <cstring>
#include <stdexcept>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#include "accrete/collectives.hpp"
#include "accrete/detail/scalar_type.hpp"
#include "accrete/error.hpp"
#include "assembly/kernels.hpp"
#include "util/add_scattered.hpp"
#include "util/huge_pages.hpp"
#include "util/prefetch.hpp"

namespace accrete {
namespace detail {

// An update's or packet's columns sorted, with their positions: each row
// is then searched by one merge with its sorted columns instead of a
// binary search per entry (the lookups were most of a later round's time).
struct sorted_cols {
  std::vector<std::pair<std::int32_t, std::int32_t>> v;  // (column, position)
  template <class I>
  void assign(const I* cols, std::size_t n) {
    v.resize(n);
    for (std::size_t j = 0; j < n; ++j) v[j] = {std::int32_t(cols[j]), std::int32_t(j)};
    std::sort(v.begin(), v.end());
  }
};

// Whether no index of [b, b + n) repeats: the adds of an update or piece
// with none repeated go in batches (add_scattered).
template <class I>
inline bool all_distinct(const I* b, std::size_t n) {
  ACCRETE_THREAD_LOCAL std::vector<I> sorted;
  sorted.assign(b, b + n);
  std::sort(sorted.begin(), sorted.end());
  return std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end();
}

// For every column of `sc`, found(position, index in [b, e)) or
// found(position, -1) when the row does not hold it.
template <class F>
inline void merge_find(const std::int32_t* b, const std::int32_t* e, const sorted_cols& sc, F&& found) {
  const std::int32_t* p = b;
  for (const auto& [col, pos] : sc.v) {
    while (p != e && *p < col) ++p;
    found(pos, p != e && *p == col ? std::int64_t(p - b) : std::int64_t(-1));
  }
}

template <class T>
struct sparse_state {
  // A contribution to an entry not (yet) in the pattern: local row, global
  // column, value.
  struct entry {
    std::int32_t row, col;
    T v;
  };
  std::int64_t m = 0, n = 0, r0 = 0, r1 = 0, c0 = 0, c1 = 0;
  bool growing = false, built = false, cache_wanted = true;
  // The pattern is the two CSR blocks below; no full-row copy is kept (4
  // bytes per entry less to write in round 0 and to hold). A row's global
  // columns ascending (row_columns()) are its off-diagonal ones left of the
  // diagonal range, dfirst[i] of them, then its diagonal ones, then the rest
  // of its off-diagonal ones; so an entry's place in `values` follows from
  // its position in the full row and the row's offsets (slot()), with no
  // per-entry array to miss in cache.
  std::vector<std::int32_t> dfirst;
  // Values: the diagonal block's entries, then the off-diagonal block's.
  std::vector<T> values;
  std::int64_t nnz_d = 0;
  std::vector<std::int64_t> d_ptr, o_ptr, col_map;
  std::vector<std::int32_t> d_col, o_col;
  // Contributions to entries not in the pattern, in arrival order, in
  // chunks (a growing vector of all of them was copied at every doubling).
  struct entry_chunks {
    static constexpr std::size_t chunk = std::size_t(1) << 16;
    std::vector<std::vector<entry>> chunks;
    std::size_t count = 0;
    void push_back(const entry& x) {
      if (chunks.empty() || chunks.back().size() == chunk) {
        chunks.emplace_back();
        chunks.back().reserve(chunk);
      }
      chunks.back().push_back(x);
      ++count;
    }
    std::size_t size() const noexcept { return count; }
    bool empty() const noexcept { return count == 0; }
    template <class F>
    void for_each(F&& f) const {
      for (const auto& c : chunks)
        for (const entry& x : c) f(x);
    }
    void clear() {
      std::vector<std::vector<entry>>().swap(chunks);
      count = 0;
    }
  } fresh;
  // Round 0: every piece as it arrived (its local rows, its global columns,
  // its values row by row), kept until the first commit lays out the
  // pattern from all of them at once, row by row through a sparse
  // accumulator: linear in the contributions (merging each piece into
  // sorted rows as it arrived copied every row once per piece).
  struct piece_log {
    struct piece {
      const std::int32_t* rows;
      const std::int32_t* cols;
      const T* vals;  // nr x nc, row-major
      std::int32_t nr, nc;
      bool recorded;  // a slot-cache record's: its row places go over its values (rows_from_log)
    };
    static constexpr std::size_t chunk = std::size_t(1) << 22;  // bytes
    struct chunk_memory {
      huge_buffer mem;
      std::size_t bytes;
    };
    std::vector<piece> pieces;
    // Huge pages after the first: each is written once, from fresh memory.
    // Those holding slot-cache records become the cache's (slot_cache::adopt).
    std::vector<chunk_memory> chunks;
    std::size_t used = 0;
    std::size_t contributions = 0;
    // `bytes` at an address aligned for T and int64, valid until clear(),
    // in chunk chunks.size() - 1.
    std::byte* take(std::size_t bytes) {
      constexpr std::size_t a = alignof(T) > 8 ? alignof(T) : 8;
      bytes = (bytes + a - 1) / a * a;
      if (chunks.empty() || used + bytes > chunks.back().bytes) {
        const std::size_t cap = std::max(chunk, bytes);
        // Not the first chunk: a small matrix's log would pin a whole
        // 2 MiB page for its few pieces.
        chunks.push_back({allocate_huge(cap, !chunks.empty()), cap});  // a buffer: written once, read once
        used = 0;
      }
      std::byte* p = chunks.back().mem.get() + used;
      used += bytes;
      return p;
    }
    // Space for an nr x nc piece: its values (row-major) and then its nr rows
    // and nc columns, recorded as the next piece.
    std::pair<T*, std::int32_t*> next_piece(std::size_t nr, std::size_t nc, bool recorded) {
      std::byte* p = take(nr * nc * sizeof(T) + (nr + nc) * sizeof(std::int32_t));
      T* vals = reinterpret_cast<T*>(p);
      auto* rows = reinterpret_cast<std::int32_t*>(p + nr * nc * sizeof(T));
      pieces.push_back({rows, rows + nr, vals, std::int32_t(nr), std::int32_t(nc), recorded});
      contributions += nr * nc;
      return {vals, rows};
    }
    void add(const packet_view& v) {
      const std::size_t nr = std::size_t(v.nr), nc = std::size_t(v.nc);
      const auto [vals, rows] = next_piece(nr, nc, false);
      std::memcpy(rows, v.lrow, nr * sizeof(std::int32_t));
      std::memcpy(rows + nr, v.lcol, nc * sizeof(std::int32_t));
      const T* src = reinterpret_cast<const T*>(v.values);  // column-major
      for (std::size_t i = 0; i < nr; ++i)
        for (std::size_t j = 0; j < nc; ++j) vals[i * nc + j] = src[j * nr + i];
    }
    // An update of own rows, from the caller's block (element (i, j) at
    // block[i * rs + j * cs]), for the slot-cache record being made:
    // returns where its values went (its row places go there) and their
    // chunk.
    std::pair<T*, std::size_t> add(const T* block, std::int64_t rs, std::int64_t cs,
                                   std::span<const std::int64_t> grows, std::span<const std::int64_t> gcols,
                                   std::int64_t r0) {
      const std::size_t nr = grows.size(), nc = gcols.size();
      const auto [vals, rows] = next_piece(nr, nc, true);
      for (std::size_t i = 0; i < nr; ++i) rows[i] = std::int32_t(grows[i] - r0);
      for (std::size_t j = 0; j < nc; ++j) rows[nr + j] = std::int32_t(gcols[j]);
      for (std::size_t i = 0; i < nr; ++i)
        for (std::size_t j = 0; j < nc; ++j) vals[i * nc + j] = block[std::int64_t(i) * rs + std::int64_t(j) * cs];
      return {vals, chunks.size() - 1};
    }
    void clear() {
      std::vector<piece>().swap(pieces);
      std::vector<chunk_memory>().swap(chunks);
      used = contributions = 0;
    }
  } log;
  // The first entry that fell outside a frozen pattern at its owner: a
  // guard only, since the origin checks every entry before sending.
  std::string outside;
  // Frozen patterns are checked at the origin, before anything is applied,
  // against its own rows and copies of other processes' rows (`ghost`):
  // those it updated in round 0 (`touched`) arrive from their owners at the
  // first commit (fetch_ghosts); a row first updated later is asked of its
  // owner then, by message (learn_rows), and kept.
  std::vector<std::int64_t> starts;  // row ranges (parts + 1)
  std::mutex touched_lock;
  std::vector<std::int64_t> touched;
  std::shared_mutex ghost_lock;  // updating threads read ghost; learn_rows adds
  std::unordered_map<std::int64_t, std::vector<std::int32_t>> ghost;
  bool ghosts_known = false;
  // The slot cache (sparse_matrix_options::cache_slots): one round's
  // updates, in call order, each with its rows and columns and the slot
  // of every entry of an own row (row by row). An update that matches the
  // record at `cursor` adds through its slots; one that does not is looked
  // up and recorded there, dropping the records after it.
  struct slot_cache {
    // What a record's slots hold: places in `values`; places in their rows
    // (recorded in round 0 by log_in_place, filled in by the first commit,
    // turned into places in `values` by the first replay); or nothing yet
    // (recorded in round 0 from the engine's path: the first replay checks
    // and looks its entries up).
    enum class held : std::uint8_t { values, row_places, unknown };
    struct record {
      std::size_t nr, nc, idx, slot;  // sizes; where its indices and (unless logged) its slots start
      // Round 0's own-row updates: their slots live in the piece log's
      // chunk `chunk` (below), not in `slots`. Row places: row i's at
      // logged + i * nc * spread, over the row's consumed values; places in
      // `values`: packed, row i's at logged + i * nc.
      std::int32_t* logged;
      std::size_t chunk;
      held state;
      bool remote;    // holds rows of other processes (their slots unused)
      bool distinct;  // no column twice, so a row's slots are distinct (set once they hold values)
      bool unique;    // and no row twice either: every slot distinct (set with `distinct`)
    };
    static constexpr std::size_t spread = sizeof(T) / sizeof(std::int32_t);
    // Round 0's piece log, kept by the first commit when records live in
    // it: a separate array of slots, half as large as the log's values, was
    // fresh memory written in round 0, and a round 0 in a new process is
    // mostly first touches of fresh pages (paper preset, P = 2: peak 1.68 GB
    // per process with the array, 1.24 GB without; bench/fe_assembly
    // README). The first replay packs each record's slots at the front of
    // its chunk (`packed` bytes, in record order, so never over places not
    // yet read); a chunk with no record left to pack (`pending`) gives back
    // the pages behind them.
    struct log_chunk {
      typename piece_log::chunk_memory memory;
      std::size_t packed = 0, pending = 0;
    };
    bool on = false;
    std::mutex lock;  // one thread at a time; the others take the engine's path
    std::vector<record> records;
    fill_later_vector<std::int64_t> idx;    // each record's rows, then its columns
    fill_later_vector<std::int32_t> slots;  // each record's entry slots (written by whoever appends)
    std::vector<log_chunk> chunks;
    std::size_t cursor = 0;  // the next record of this round
    // A record at the end, its slots unwritten (the caller or the first commit fills them); returns them.
    std::int32_t* append(std::span<const std::int64_t> rows, std::span<const std::int64_t> cols, held state,
                         bool remote) {
      push(rows, cols, nullptr, 0, state, remote);
      slots.resize(slots.size() + rows.size() * cols.size());
      return slots.data() + records.back().slot;
    }
    // A record of an own-row update logged at `vals` in the log's chunk `chunk`.
    void append_logged(std::span<const std::int64_t> rows, std::span<const std::int64_t> cols, T* vals,
                       std::size_t chunk) {
      push(rows, cols, reinterpret_cast<std::int32_t*>(vals), chunk, held::row_places, false);
    }
    void push(std::span<const std::int64_t> rows, std::span<const std::int64_t> cols, std::int32_t* logged,
              std::size_t chunk, held state, bool remote) {
      records.push_back(
          {rows.size(), cols.size(), idx.size(), slots.size(), logged, chunk, state, remote, false, false});
      idx.insert(idx.end(), rows.begin(), rows.end());
      idx.insert(idx.end(), cols.begin(), cols.end());
    }
    std::int32_t* slots_of(const record& r) noexcept { return r.logged ? r.logged : slots.data() + r.slot; }
    // At the first commit: the log's chunks that hold records.
    void adopt(piece_log& log) {
      chunks.resize(log.chunks.size());
      for (std::size_t k = 0; k < chunks.size(); ++k) chunks[k] = {std::move(log.chunks[k]), 0, 0};
      for (const record& r : records)
        if (r.logged) ++chunks[r.chunk].pending;
      for (log_chunk& ch : chunks)
        if (ch.pending == 0) ch = {};
    }
    // Record r's row places turned into places in `values`, packed:
    // place(i, from, to) reads row i's nc places at `from` and writes their
    // slots at `to`, each one read before it is written (the two may
    // overlap, to <= from). Returns the packed slots.
    template <class F>
    std::int32_t* pack(record& r, F&& place) {
      log_chunk& ch = chunks[r.chunk];
      auto* to = reinterpret_cast<std::int32_t*>(ch.memory.mem.get() + ch.packed);
      // Row i goes to to + i * nc <= logged + i * nc * spread: below its own
      // places and past every earlier row's (to <= logged: earlier records
      // in the chunk, at least as large, were packed first).
      for (std::size_t i = 0; i < r.nr; ++i) place(i, r.logged + i * r.nc * spread, to + i * r.nc);
      ch.packed += r.nr * r.nc * sizeof(std::int32_t);
      r.logged = to;  // the caller marks it held::values, with what it learns then
      settled(ch);
      return to;
    }
    void settled(log_chunk& ch) noexcept {
      if (--ch.pending > 0) return;
      if (ch.packed == 0) {
        ch = {};
        return;
      }
      const auto b = reinterpret_cast<std::uintptr_t>(ch.memory.mem.get());
      static const auto page = std::uintptr_t(sysconf(_SC_PAGESIZE));
      const std::uintptr_t lo = (b + ch.packed + page - 1) & ~(page - 1), hi = (b + ch.memory.bytes) & ~(page - 1);
      if (lo < hi) (void)madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);  // only a hint
    }
    // The sequence changed at the cursor: later records are stale.
    void drop_after_cursor() {
      for (std::size_t k = cursor; k < records.size(); ++k)
        if (records[k].logged && records[k].state == held::row_places) settled(chunks[records[k].chunk]);
      records.resize(cursor);
      if (records.empty()) return clear();
      const auto& last = records.back();
      idx.resize(last.idx + last.nr + last.nc);
      slots.resize(last.slot + (last.logged ? 0 : last.nr * last.nc));
    }
    void clear() {
      records.clear();
      idx.clear();
      slots.clear();
      chunks.clear();
    }
  } cache;
  // Received pieces' slots (frozen pattern): a piece of another process's
  // update arrives again in every later round with the same rows and
  // columns, in whatever packet and order the exchange gives it, so it is
  // found by its indices (a hash, then an exact compare) instead of searched
  // row by row. Touched only by sparse_apply, under the engine lock.
  struct piece_cache {
    // Records: next record with the same hash (or -1), nr, nc, rows, columns,
    // 1 if no row and no column repeats (the slots are distinct), then the
    // nr x nc slots in the piece's (column-major) order.
    std::vector<std::int32_t> store;
    std::unordered_map<std::uint64_t, std::int64_t> heads;  // hash -> first record
    std::size_t limit = 0;                                  // most int32s in store; 0: off
    static std::uint64_t hash(const packet_view& v) noexcept {
      std::uint64_t h = std::uint64_t(std::uint32_t(v.nr)) << 32 | std::uint32_t(v.nc);
      auto take = [&h](std::int32_t x) { h = (h ^ std::uint32_t(x)) * 0x9e3779b97f4a7c15ull; };
      for (std::int32_t i = 0; i < v.nr; ++i) take(v.lrow[i]);
      for (std::int32_t j = 0; j < v.nc; ++j) take(v.lcol[j]);
      return mix(h);  // assembly/common.hpp
    }
    const std::int32_t* find(const packet_view& v, std::uint64_t h) const noexcept {
      const auto it = heads.find(h);
      if (it == heads.end()) return nullptr;
      for (std::int64_t at = it->second; at >= 0; at = store[std::size_t(at)]) {
        const std::int32_t* r = store.data() + at;
        if (r[1] == v.nr && r[2] == v.nc && std::equal(v.lrow, v.lrow + v.nr, r + 3) &&
            std::equal(v.lcol, v.lcol + v.nc, r + 3 + v.nr))
          return r + 4 + v.nr + v.nc;
      }
      return nullptr;
    }
    void add(const packet_view& v, std::uint64_t h, const std::int64_t* slots) {
      const std::size_t count = std::size_t(v.nr) * std::size_t(v.nc);
      if (store.size() + 4 + std::size_t(v.nr) + std::size_t(v.nc) + count > limit) return;
      const auto it = heads.try_emplace(h, -1).first;
      const std::int64_t at = std::int64_t(store.size());
      store.push_back(std::int32_t(it->second));
      it->second = at;
      store.push_back(v.nr);
      store.push_back(v.nc);
      store.insert(store.end(), v.lrow, v.lrow + v.nr);
      store.insert(store.end(), v.lcol, v.lcol + v.nc);
      store.push_back(all_distinct(v.lrow, std::size_t(v.nr)) && all_distinct(v.lcol, std::size_t(v.nc)) ? 1 : 0);
      for (std::size_t k = 0; k < count; ++k) store.push_back(std::int32_t(slots[k]));
    }
    void clear() {
      std::vector<std::int32_t>().swap(store);
      heads.clear();
    }
  } received;
  std::unique_ptr<assembly_engine> engine;  // last: destroyed (collectively) first

  bool frozen() const noexcept { return built && !growing; }
  bool owns(std::int64_t row) const noexcept { return row >= r0 && row < r1; }
  // The index in `values` of entry (local row lrow, global column col), or -1.
  std::int64_t find(std::int32_t lrow, std::int64_t col) const noexcept {
    if (!built) return -1;
    const std::size_t r = std::size_t(lrow);
    if (col >= c0 && col < c1) {
      const auto b = d_col.begin() + d_ptr[r], e = d_col.begin() + d_ptr[r + 1];
      const auto it = std::lower_bound(b, e, std::int32_t(col - c0));
      return it != e && *it == col - c0 ? std::int64_t(it - d_col.begin()) : -1;
    }
    const auto m = std::lower_bound(col_map.begin(), col_map.end(), col);
    if (m == col_map.end() || *m != col) return -1;
    const auto b = o_col.begin() + o_ptr[r], e = o_col.begin() + o_ptr[r + 1];
    const auto it = std::lower_bound(b, e, std::int32_t(m - col_map.begin()));
    return it != e && *it == m - col_map.begin() ? nnz_d + std::int64_t(it - o_col.begin()) : -1;
  }
  // Local row r's global columns, ascending, into `out`; returns the count.
  std::size_t row_columns(std::int64_t r, std::vector<std::int32_t>& out) const {
    const std::size_t i = std::size_t(r);
    const std::int64_t db = d_ptr[i], de = d_ptr[i + 1], ob = o_ptr[i], oe = o_ptr[i + 1], ol = ob + dfirst[i];
    out.resize(std::size_t(de - db + oe - ob));
    std::int32_t* o = out.data();
    for (std::int64_t q = ob; q < ol; ++q) *o++ = std::int32_t(col_map[std::size_t(o_col[std::size_t(q)])]);
    for (std::int64_t q = db; q < de; ++q) *o++ = std::int32_t(c0 + d_col[std::size_t(q)]);
    for (std::int64_t q = ol; q < oe; ++q) *o++ = std::int32_t(col_map[std::size_t(o_col[std::size_t(q)])]);
    return out.size();
  }
  // The index in `values` of the k-th entry of local row r.
  std::int64_t slot(std::int64_t r, std::int64_t k) const noexcept {
    const std::int64_t ds = dfirst[std::size_t(r)], db = d_ptr[std::size_t(r)], dc = d_ptr[std::size_t(r) + 1] - db;
    if (k >= ds && k < ds + dc) return db + (k - ds);
    return nnz_d + o_ptr[std::size_t(r)] + (k < ds ? k : k - dc);
  }
};

namespace {

template <class T>
T merge_one(merge_op op, T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (op == merge_op::max) return merge_max(a, b);
    if (op == merge_op::min) return merge_min(a, b);
  }
  return a + b;
}

template <class T>
void sparse_apply(assembly_engine& e, const packet_view& v) {
  auto& s = *static_cast<sparse_state<T>*>(e.shape().context);
  const T* vals = reinterpret_cast<const T*>(v.values);
  const merge_op op = e.shape().merge;
  if (!s.built) {  // round 0: laid out at commit
    s.log.add(v);
    return;
  }
  const std::size_t count = std::size_t(v.nr) * std::size_t(v.nc);
  using R = real_t<T>;
  constexpr int w = width<T>;
  const bool exact = exact_capable<T> && e.shape().reproducible;
  ACCRETE_THREAD_LOCAL std::vector<assembly_engine::spill> spilled;
  spilled.clear();
  // Adds value `at` of the piece into values[k].
  auto add_one = [&](std::size_t at, std::int64_t k) {
    if (exact) {
      const R* from = reinterpret_cast<const R*>(vals + at);
      add_run_exact(reinterpret_cast<R*>(s.values.data() + k), from, w, [&](std::int32_t c) {
        spilled.push_back({k * w + c, double(from[c])});
      });
    } else {
      s.values[std::size_t(k)] = merge_one(op, s.values[std::size_t(k)], vals[at]);
    }
  };
  const bool cached = s.frozen() && s.received.limit > 0;
  const std::uint64_t h = cached ? s.received.hash(v) : 0;
  if (cached) {
    if (const std::int32_t* known = s.received.find(v, h)) {
      if (!exact && op == merge_op::sum && known[-1] == 1) {
        add_scattered(s.values.data(), known, vals, 1, count);
      } else if (!exact && op == merge_op::sum) {
        T* val = s.values.data();
        for (std::size_t at = 0; at < count; ++at) val[known[at]] += vals[at];
      } else if (exact && w == 1 && known[-1] == 1) {
        add_scattered_exact(reinterpret_cast<R*>(s.values.data()), known, reinterpret_cast<const R*>(vals), 1, count,
                            [&](std::int32_t k, R x) {
                              spilled.push_back({k, double(x)});
                            });
      } else {
        for (std::size_t at = 0; at < count; ++at) add_one(at, known[at]);
      }
      if (!spilled.empty()) e.log_spills(spilled);
      return;
    }
  }
  ACCRETE_THREAD_LOCAL std::vector<std::int64_t> slot;
  slot.resize(count);
  // Every slot first: with a frozen pattern a piece holding an entry
  // outside it is dropped whole.
  bool missing = false;
  ACCRETE_THREAD_LOCAL sorted_cols sc;
  sc.assign(v.lcol, std::size_t(v.nc));
  ACCRETE_THREAD_LOCAL std::vector<std::int32_t> row;
  for (std::int32_t i = 0; i < v.nr; ++i) {
    const std::size_t len = s.row_columns(v.lrow[i], row);
    merge_find(row.data(), row.data() + len, sc, [&](std::int32_t j, std::int64_t k) {
      slot[std::size_t(j) * std::size_t(v.nr) + std::size_t(i)] = k < 0 ? -1 : s.slot(v.lrow[i], k);
      if (k < 0 && !missing) {
        missing = true;
        if (s.frozen() && s.outside.empty())
          s.outside = "accrete::sparse_matrix: entry (row " + std::to_string(s.r0 + v.lrow[i]) + ", column " +
                      std::to_string(v.lcol[j]) + ") is not in the frozen pattern (round " + std::to_string(e.round()) +
                      "); the piece of the update that held it was not applied";
      }
    });
  }
  if (missing && s.frozen()) return;
  if (cached) s.received.add(v, h, slot.data());
  for (std::int32_t j = 0; j < v.nc; ++j)
    for (std::int32_t i = 0; i < v.nr; ++i) {
      const std::size_t at = std::size_t(j) * std::size_t(v.nr) + std::size_t(i);
      const std::int64_t k = slot[at];
      if (k < 0)
        s.fresh.push_back({v.lrow[i], v.lcol[j], vals[at]});
      else
        add_one(at, k);
    }
  if (!spilled.empty()) e.log_spills(spilled);
}

// Whether a table with one entry per global column is affordable next to
// `items` entries of data: tables indexed by column are the fast path, but a
// process of a wide matrix (N in the billions) must not hold O(N) memory.
inline bool column_table_fits(std::int64_t n, std::size_t items) {
  return n <= std::max<std::int64_t>(std::int64_t(1) << 22, 4 * std::int64_t(items));
}

// Lays the pattern out, row by row, each row's columns ascending: the full
// rows (for lookups) and the diagonal and off-diagonal blocks with their
// values. `most` bounds the entries (capacity reserved, not touched).
template <class T>
struct layout_writer {
  sparse_state<T>& s;
  std::int64_t r = 0;    // the row being written
  std::int32_t len = 0;  // its entries so far
  std::vector<std::int64_t> dptr, optr;
  std::vector<std::int32_t> dcol, dfirst;
  std::vector<std::int64_t> ocol;  // global columns until finish() compresses them
  std::vector<T> dval, oval;
  layout_writer(sparse_state<T>& st, std::size_t most) : s(st) {
    const std::size_t nl = std::size_t(s.r1 - s.r0);
    dptr.assign(nl + 1, 0);
    optr.assign(nl + 1, 0);
    dfirst.assign(nl, 0);
    reserve_huge(dcol, most, huge_use::buffer);
    reserve_huge(dval, most, huge_use::target);  // every later round's scattered adds
  }
  void push(std::int32_t c, const T& v) {
    if (c >= s.c0 && c < s.c1) {
      if (std::int64_t(dcol.size()) == dptr[std::size_t(r)]) dfirst[std::size_t(r)] = len;
      dcol.push_back(std::int32_t(c - s.c0));
      dval.push_back(v);
    } else {
      ocol.push_back(c);
      oval.push_back(v);
    }
    ++len;
  }
  void end_row() {
    // A row without diagonal entries: its off-diagonal ones from position 0.
    if (std::int64_t(dcol.size()) == dptr[std::size_t(r)]) dfirst[std::size_t(r)] = len;
    ++r;
    len = 0;
    dptr[std::size_t(r)] = std::int64_t(dcol.size());
    optr[std::size_t(r)] = std::int64_t(ocol.size());
  }
  void finish() {
    std::vector<std::int64_t> offcols = ocol;
    std::sort(offcols.begin(), offcols.end());
    offcols.erase(std::unique(offcols.begin(), offcols.end()), offcols.end());
    s.o_col.resize(ocol.size());
    if (column_table_fits(s.n, ocol.size())) {
      std::vector<std::int32_t> place(offcols.empty() ? 0 : std::size_t(s.n));  // global column -> col_map place
      for (std::size_t k = 0; k < offcols.size(); ++k) place[std::size_t(offcols[k])] = std::int32_t(k);
      for (std::size_t k = 0; k < ocol.size(); ++k) s.o_col[k] = place[std::size_t(ocol[k])];
    } else {
      for (std::size_t k = 0; k < ocol.size(); ++k)
        s.o_col[k] = std::int32_t(std::lower_bound(offcols.begin(), offcols.end(), ocol[k]) - offcols.begin());
    }
    s.nnz_d = std::int64_t(dval.size());
    dval.insert(dval.end(), oval.begin(), oval.end());
    s.values = std::move(dval);
    s.d_col = std::move(dcol);
    s.d_ptr = std::move(dptr);
    s.o_ptr = std::move(optr);
    s.dfirst = std::move(dfirst);
    s.col_map = std::move(offcols);
  }
};

// Round 0's rows from the logged pieces: for each row, the contributions
// of the pieces holding it, in arrival order, through a sparse accumulator
// over the columns (`mark`: for each column, the last row that saw it and
// its place in that row); then the row's columns sorted. Rows fed by the same
// pieces (a node's d unknowns) have the same columns: the previous row's
// order is reused. With reproducible sums every contribution is added
// exactly or logged, and each logged entry settled by an exact sum, so the
// bits depend on no order.
template <class T>
void rows_from_log(sparse_state<T>& s, const assembly_shape& shape) {
  const std::int64_t nl = s.r1 - s.r0;
  auto& log = s.log;
  // A row's part of a piece: 16 bytes (one per row of every piece, written
  // to fresh memory; pointers made it 32), unpacked by view().
  struct ref {
    std::size_t piece;
    std::int32_t i;
  };
  struct ref_view {
    const std::int32_t* cols;
    const T* vals;
    std::int32_t nc;
    bool recorded;  // the row places go over vals (sparse_state::slot_cache::record)
  };
  auto view = [&](const ref& f) {
    const auto& p = log.pieces[f.piece];
    return ref_view{p.cols, p.vals + std::size_t(f.i) * std::size_t(p.nc), p.nc, p.recorded};
  };
  std::vector<std::int64_t> first(std::size_t(nl) + 1, 0);
  for (const auto& p : log.pieces)
    for (std::int32_t i = 0; i < p.nr; ++i) ++first[std::size_t(p.rows[i]) + 1];
  for (std::int64_t r = 0; r < nl; ++r) first[std::size_t(r) + 1] += first[std::size_t(r)];
  std::vector<ref> refs;
  reserve_huge(refs, std::size_t(first.back()), huge_use::buffer);
  refs.resize(std::size_t(first.back()));
  {
    std::vector<std::int64_t> at(first.begin(), first.end() - 1);
    for (std::size_t k = 0; k < log.pieces.size(); ++k) {
      const auto& p = log.pieces[k];
      for (std::int32_t i = 0; i < p.nr; ++i) refs[std::size_t(at[std::size_t(p.rows[i])]++)] = {k, i};
    }
  }
  using R = real_t<T>;
  constexpr int w = width<T>;
  const bool exact = exact_capable<T> && shape.reproducible;
  const merge_op op = shape.merge;
  // Per column: the last row that saw it, and its place in that row.
  struct seen {
    std::int32_t row, place;
  };
  // The columns the accumulator indexes: global ones, or, for a matrix too
  // wide for a table per global column, the pieces' distinct columns (the
  // logged column lists renumbered in place; the order is kept).
  std::vector<std::int32_t> distinct;
  const bool renumbered = !column_table_fits(s.n, log.contributions);
  if (renumbered) {
    for (const auto& p : log.pieces) distinct.insert(distinct.end(), p.cols, p.cols + p.nc);
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    for (const auto& p : log.pieces) {
      auto* cols = const_cast<std::int32_t*>(p.cols);  // the log's own copy
      for (std::int32_t j = 0; j < p.nc; ++j)
        cols[j] = std::int32_t(std::lower_bound(distinct.begin(), distinct.end(), cols[j]) - distinct.begin());
    }
  }
  std::vector<seen> mark(renumbered ? distinct.size() : std::size_t(s.n), seen{-1, 0});
  std::vector<std::int32_t> ucol;  // the row's columns, first seen first
  std::vector<T> uval;
  std::vector<std::uint64_t> order;                      // (column, place in ucol), sorted
  std::vector<std::int32_t> sorted_at;                   // place in ucol -> place in the sorted row
  std::vector<std::pair<std::int64_t, double>> spilled;  // (component of uval, value)
  // Each contribution's place in the row (ref order), kept for the next
  // row: one fed by the same pieces puts its contributions in the same
  // places, without the accumulator's lookups and its unpredictable
  // first-seen branch (2 of 3 rows of a 3-unknown node).
  std::vector<std::int32_t> place;
  std::vector<std::int32_t> row_places;  // a recorded piece's, for one row
  for (const auto& p : log.pieces) row_places.resize(std::max(row_places.size(), std::size_t(p.nc)));
  layout_writer<T> lay(s, log.contributions);
  // One row's contributions into ucol/uval; returns the row's length.
  auto accumulate = [&]<bool Exact>(const ref* rb, const ref* re, std::int32_t r) {
    std::size_t most = 0;
    for (const ref* f = rb; f != re; ++f) most += std::size_t(log.pieces[f->piece].nc);
    if (ucol.size() < most) ucol.resize(most), uval.resize(most);
    if (place.size() < most) place.resize(most);
    std::int32_t* uc = ucol.data();
    T* uv = uval.data();
    std::int32_t* pl = place.data();
    std::int32_t len = 0;
    for (const ref* f = rb; f != re; ++f) {
      const auto [cols, vals, nc, recorded] = view(*f);
      for (std::int32_t j = 0; j < nc; ++j) {
        seen& m = mark[std::size_t(cols[j])];
        const T x = vals[j];
        if (m.row != r) {
          m = {r, len};
          uc[len] = cols[j];
          uv[len++] = merge_one(op, T{}, x);
        } else if constexpr (Exact) {
          const std::int64_t k = m.place;
          const R* from = reinterpret_cast<const R*>(&x);
          add_run_exact(reinterpret_cast<R*>(uv + k), from, w, [&](std::int32_t q) {
            spilled.push_back({k * w + q, double(from[q])});
          });
        } else {
          uv[m.place] = merge_one(op, uv[m.place], x);
        }
        *pl++ = m.place;
      }
    }
    return len;
  };
  // A row fed by the same pieces as the previous one (`len` columns): its
  // values start from T{} and every contribution merges into its recorded
  // place, as the first-seen ones did (merge_one(op, T{}, x)): the same bits.
  auto accumulate_same = [&](const ref* rb, const ref* re, std::int32_t len) {
    T* uv = uval.data();
    std::fill(uv, uv + len, T{});
    const std::int32_t* pl = place.data();
    for (const ref* f = rb; f != re; ++f) {
      const auto [cols, vals, nc, recorded] = view(*f);
      if (op == merge_op::sum) {
        for (std::int32_t j = 0; j < nc; ++j) uv[pl[j]] += vals[j];
      } else {
        for (std::int32_t j = 0; j < nc; ++j) uv[pl[j]] = merge_one(op, uv[pl[j]], vals[j]);
      }
      pl += nc;
    }
  };
  for (std::int64_t r = 0; r < nl; ++r) {
    const ref* rb = refs.data() + first[std::size_t(r)];
    const ref* re = refs.data() + first[std::size_t(r) + 1];
    // The pieces were logged long ago (out of cache), each row's in
    // several places: the next row's are fetched while this one is summed.
    if (r + 1 < nl)
      for (const ref* f = re; f != refs.data() + first[std::size_t(r) + 2]; ++f) {
        const auto [cols, vals, nc, recorded] = view(*f);
        prefetch_lines(vals, std::size_t(nc) * sizeof(T), false);
      }
    const bool same = r > 0 && re - rb == rb - (refs.data() + first[std::size_t(r) - 1]) &&
                      std::equal(rb, re, refs.data() + first[std::size_t(r) - 1],
                                 [](const ref& x, const ref& y) { return x.piece == y.piece; });
    std::int32_t len = std::int32_t(order.size());
    if (exact)
      len = accumulate.template operator()<true>(rb, re, std::int32_t(r));
    else if (same)
      accumulate_same(rb, re, len);
    else
      len = accumulate.template operator()<false>(rb, re, std::int32_t(r));
    if constexpr (exact_capable<T>) {
      if (!spilled.empty()) {
        std::sort(spilled.begin(), spilled.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
        R* u = reinterpret_cast<R*>(uval.data());
        for (std::size_t i = 0; i < spilled.size();) {
          std::size_t j = i;
          while (j < spilled.size() && spilled[j].first == spilled[i].first) ++j;
          R& x = u[spilled[i].first];
          x = settle_sum(x, j - i, [&](std::size_t k) { return spilled[i + k].second; });
          i = j;
        }
        spilled.clear();
      }
    }
    if (!same) {
      order.resize(std::size_t(len));
      for (std::int32_t k = 0; k < len; ++k)
        order[std::size_t(k)] = std::uint64_t(std::uint32_t(ucol[std::size_t(k)])) << 32 | std::uint32_t(k);
      std::sort(order.begin(), order.end());
      sorted_at.clear();
    }
    for (std::uint64_t o : order) {
      const std::size_t k = std::size_t(o & 0xffffffffu);
      lay.push(renumbered ? distinct[std::size_t(ucol[k])] : ucol[k], uval[k]);
    }
    lay.end_row();
    // Recorded places, each contribution's place in the sorted row, written
    // over the piece's values of this row, read by now (the slot cache's
    // record, as large as them, is kept in the log: slot_cache::adopt).
    bool recorded = false;
    for (const ref* f = rb; f != re && !recorded; ++f) recorded = log.pieces[f->piece].recorded;
    if (recorded) {
      if (sorted_at.empty()) {  // first-seen order -> the sorted row's
        sorted_at.resize(std::size_t(len));
        for (std::size_t k = 0; k < order.size(); ++k) sorted_at[std::size_t(order[k] & 0xffffffffu)] = std::int32_t(k);
      }
      const std::int32_t* pl = place.data();
      for (const ref* f = rb; f != re; ++f) {
        const auto [cols, vals, nc, rec] = view(*f);
        if (rec) {
          std::int32_t* out = row_places.data();
          for (std::int32_t j = 0; j < nc; ++j) out[j] = sorted_at[std::size_t(pl[j])];
          // Bytes, not int32 stores: the memory held T values a moment ago.
          std::memcpy(static_cast<void*>(const_cast<T*>(vals)), out, std::size_t(nc) * sizeof(std::int32_t));
        }
        pl += nc;
      }
    }
  }
  s.cache.adopt(log);
  log.clear();
  lay.finish();
}

// The fresh entries merged into the pattern; both CSR blocks laid out again.
// A built pattern with the fresh entries merged in (a growing pattern).
template <class T>
void merge_fresh(sparse_state<T>& s, const assembly_shape& shape) {
  using entry = typename sparse_state<T>::entry;
  const std::int64_t nl = s.r1 - s.r0;
  // Sorted by (row, column), stably: duplicates combine in arrival order
  // (only the reproducible sum, which does not depend on it, reorders
  // them). A counting sort by row, then each row's few entries by column:
  // linear passes instead of a comparison sort of every contribution.
  std::vector<entry> f(s.fresh.size());
  {
    std::vector<std::int64_t> at(std::size_t(nl) + 1, 0);
    s.fresh.for_each([&](const entry& x) { ++at[std::size_t(x.row) + 1]; });
    for (std::int64_t r = 0; r < nl; ++r) at[std::size_t(r) + 1] += at[std::size_t(r)];
    const std::vector<std::int64_t> row_begin(at.begin(), at.end());
    s.fresh.for_each([&](const entry& x) { f[std::size_t(at[std::size_t(x.row)]++)] = x; });
    s.fresh.clear();
    // Within a row, by column and then arrival: the row field holds the
    // arrival position while the row is sorted (an in-place sort; a stable
    // sort allocated a buffer per row).
    for (std::int64_t r = 0; r < nl; ++r) {
      const auto b = f.begin() + row_begin[std::size_t(r)], e = f.begin() + row_begin[std::size_t(r) + 1];
      for (auto it = b; it != e; ++it) it->row = std::int32_t(it - b);
      std::sort(b, e, [](const entry& x, const entry& y) { return x.col != y.col ? x.col < y.col : x.row < y.row; });
      for (auto it = b; it != e; ++it) it->row = std::int32_t(r);
    }
  }
  std::vector<entry> add;
  for (std::size_t i = 0; i < f.size();) {
    std::size_t j = i;
    T acc{};
    if constexpr (exact_capable<T>) {
      if (shape.reproducible) {
        using R = real_t<T>;
        constexpr int w = width<T>;
        while (j < f.size() && f[j].row == f[i].row && f[j].col == f[i].col) ++j;
        R parts[w];
        for (int c = 0; c < w; ++c) {
          auto part = [&](std::size_t k) { return reinterpret_cast<const R*>(&f[k].v)[c]; };
          parts[c] = settle_sum(part(i), j - i - 1, [&](std::size_t k) { return double(part(i + 1 + k)); });
        }
        std::memcpy(&acc, parts, sizeof acc);
        add.push_back({f[i].row, f[i].col, acc});
        i = j;
        continue;
      }
    }
    for (; j < f.size() && f[j].row == f[i].row && f[j].col == f[i].col; ++j) acc = merge_one(shape.merge, acc, f[j].v);
    add.push_back({f[i].row, f[i].col, acc});
    i = j;
  }
  std::vector<entry>().swap(f);

  // Rows merged: the existing entries (with their values) and the new ones.
  layout_writer<T> lay(s, s.values.size() + add.size());
  std::vector<std::int32_t> row;
  std::size_t a = 0;
  for (std::int64_t r = 0; r < nl; ++r) {
    const std::int64_t ke = std::int64_t(s.row_columns(r, row));
    std::int64_t k = 0;
    while (k < ke || (a < add.size() && add[a].row == r)) {
      const bool take_old = k < ke && (a >= add.size() || add[a].row != r || row[std::size_t(k)] < add[a].col);
      if (take_old) {
        lay.push(row[std::size_t(k)], s.values[std::size_t(s.slot(r, k))]);
        ++k;
      } else {
        lay.push(add[a].col, add[a].v);
        ++a;
      }
    }
    lay.end_row();
  }
  lay.finish();
}

template <class T>
void rebuild(sparse_state<T>& s, const assembly_shape& shape) {
  if (!s.built) {
    rows_from_log(s, shape);
  } else {
    merge_fresh(s, shape);
    // Slots moved: recorded ones are void (round 0's were recorded for the first layout).
    s.cache.clear();
  }
  s.cache.cursor = 0;
  s.built = true;
  // Recorded slots are places in this layout. Bounded: about twice the
  // bytes of the values; slots and record offsets are int32.
  s.received.clear();
  s.received.limit =
      s.cache_wanted && s.values.size() <= std::size_t(INT32_MAX)
          ? std::min<std::size_t>(INT32_MAX, std::max<std::size_t>(std::size_t(1) << 16, 4 * s.values.size()))
          : 0;
}

template <class T>
void sparse_settle(assembly_engine& e) {
  auto& s = *static_cast<sparse_state<T>*>(e.shape().context);
  if constexpr (exact_capable<T>)
    if (e.shape().reproducible) settle_spills_into(e, s.values.data());
  if (!s.built || !s.fresh.empty()) rebuild(s, e.shape());
}

template <class T>
void sparse_clear(assembly_engine& e) {
  auto& s = *static_cast<sparse_state<T>*>(e.shape().context);
  std::fill(s.values.begin(), s.values.end(), T{});
}

}  // namespace

// ---- other processes' rows of a frozen pattern -----------------------------------

// The columns of own rows `rows`, for the process that asked: per row its
// count, then its columns.
template <class T, class Rows>
void append_rows(const sparse_state<T>& s, const Rows& rows, std::vector<std::int32_t>& out) {
  std::vector<std::int32_t> row;
  for (std::int64_t r : rows) {
    const std::size_t len = s.row_columns(r - s.r0, row);
    out.push_back(std::int32_t(len));
    out.insert(out.end(), row.begin(), row.begin() + std::ptrdiff_t(len));
  }
}

// The other side: keeps `rows` (as append_rows wrote them at `in`) in
// `ghost`; returns the end of what it read. A row already there (two
// threads asked at once) is left as it is: the same columns.
template <class T, class Rows>
const std::int32_t* keep_rows(sparse_state<T>& s, const Rows& rows, const std::int32_t* in) {
  for (std::int64_t r : rows) {
    const std::int32_t n = *in++;
    if (auto [it, fresh] = s.ghost.try_emplace(r); fresh) it->second.assign(in, in + n);
    in += n;
  }
  return in;
}

// A question about rows of a frozen pattern, on the asking thread's stack
// until the answer is in.
struct rows_asked {
  std::atomic<bool> done{false};
  std::vector<std::int32_t> answer;
};

// Message layout: a question is (engine id, the asker's rows_asked, rows);
// an answer is (the asker's rows_asked, append_rows of those rows).
struct question_head {
  std::uint32_t id, pad;
  std::uint64_t asker;
};

void take_answer(int, std::span<const std::byte> p) {
  std::uint64_t asker;
  std::memcpy(&asker, p.data(), sizeof asker);
  auto* q = reinterpret_cast<rows_asked*>(std::uintptr_t(asker));
  q->answer.resize((p.size() - sizeof asker) / sizeof(std::int32_t));
  std::memcpy(q->answer.data(), p.data() + sizeof asker, q->answer.size() * sizeof(std::int32_t));
  q->done.store(true, std::memory_order_release);
}

// Runs in internal progress (the owner may be inside a commit, waiting for
// the asker): the frozen pattern it reads never changes again, and every
// process laid it out before any could ask (the freezing commit ends with
// fetch_ghosts, a collective).
template <class T>
void answer_question(int source, std::span<const std::byte> p) {
  question_head h;
  std::memcpy(&h, p.data(), sizeof h);
  const auto& s = *static_cast<const sparse_state<T>*>(assembly_engine::by_id(h.id, source).shape().context);
  std::vector<std::int64_t> rows((p.size() - sizeof h) / sizeof(std::int64_t));
  std::memcpy(rows.data(), p.data() + sizeof h, rows.size() * sizeof(std::int64_t));
  std::vector<std::int32_t> cols;
  append_rows(s, rows, cols);
  std::vector<std::byte> msg = message_buffer(sizeof h.asker + cols.size() * sizeof(std::int32_t));
  const auto* a = reinterpret_cast<const std::byte*>(&h.asker);
  msg.insert(msg.end(), a, a + sizeof h.asker);
  const auto* c = reinterpret_cast<const std::byte*>(cols.data());
  msg.insert(msg.end(), c, c + cols.size() * sizeof(std::int32_t));
  am_send_owned(source, &take_answer, std::move(msg));
}

template <class T>
void register_questions() {
  static const bool once = [] {
    am_register(&answer_question<T>, true);
    am_register(&take_answer, true);
    return true;
  }();
  (void)once;
}

// Other processes' rows `rows` (sorted, unique, none known yet) asked of
// their owners, one message each, and kept in `ghost`. Makes progress
// while it waits, so that the owners, and whoever asks this process, go on.
template <class T>
void learn_rows(sparse_state<T>& s, std::span<const std::int64_t> rows) {
  const int np = int(s.starts.size()) - 1;
  std::vector<rows_asked> asked(static_cast<std::size_t>(np));
  std::vector<std::size_t> first(std::size_t(np) + 1, rows.size());
  for (std::size_t k = rows.size(); k-- > 0;) {
    const int p = int(std::upper_bound(s.starts.begin(), s.starts.end(), rows[k]) - s.starts.begin()) - 1;
    first[std::size_t(p)] = k;
  }
  for (int p = np; p-- > 0;) first[std::size_t(p)] = std::min(first[std::size_t(p)], first[std::size_t(p) + 1]);
  // The engine lock serialises backend calls between updating threads.
  std::recursive_mutex& lock = s.engine->lock();
  const std::uint32_t id = s.engine->id();
  std::unique_lock held(lock);
  for (int p = 0; p < np; ++p) {
    const std::size_t b = first[std::size_t(p)], e = first[std::size_t(p) + 1];
    if (b == e) {
      asked[std::size_t(p)].done.store(true, std::memory_order_relaxed);
      continue;
    }
    const question_head h{id, 0, std::uint64_t(reinterpret_cast<std::uintptr_t>(&asked[std::size_t(p)]))};
    std::vector<std::byte> msg = message_buffer(sizeof h + (e - b) * sizeof(std::int64_t));
    const auto* hb = reinterpret_cast<const std::byte*>(&h);
    msg.insert(msg.end(), hb, hb + sizeof h);
    const auto* rb = reinterpret_cast<const std::byte*>(rows.data() + b);
    msg.insert(msg.end(), rb, rb + (e - b) * sizeof(std::int64_t));
    am_send_owned(p, &answer_question<T>, std::move(msg));
  }
  held.unlock();
  unsigned spins = 0;
  for (int p = 0; p < np; ++p)
    while (!asked[std::size_t(p)].done.load(std::memory_order_acquire)) {
      held.lock();
      poll();
      held.unlock();
      if (!asked[std::size_t(p)].done.load(std::memory_order_acquire)) idle_backoff(spins);
    }
  std::unique_lock g(s.ghost_lock);
  for (int p = 0; p < np; ++p) {
    const std::size_t b = first[std::size_t(p)], e = first[std::size_t(p) + 1];
    keep_rows(s, rows.subspan(b, e - b), asked[std::size_t(p)].answer.data());
  }
}

// Throws accrete::error naming the first entry of an update that a frozen
// pattern does not hold (of this process's rows, or another's, asked of its
// owner the first time this process updates it).
template <class T>
void check_pattern(sparse_state<T>& s, std::span<const std::int64_t> rows, std::span<const std::int64_t> cols) {
  ACCRETE_THREAD_LOCAL std::vector<std::int64_t> unknown;
  unknown.clear();
  {
    std::shared_lock g(s.ghost_lock);
    for (std::int64_t r : rows)
      if ((r < s.r0 || r >= s.r1) && !s.ghost.count(r)) unknown.push_back(r);
  }
  if (!unknown.empty()) {
    std::sort(unknown.begin(), unknown.end());
    unknown.erase(std::unique(unknown.begin(), unknown.end()), unknown.end());
    learn_rows(s, unknown);
  }
  ACCRETE_THREAD_LOCAL sorted_cols sc;
  sc.assign(cols.data(), cols.size());
  ACCRETE_THREAD_LOCAL std::vector<std::int32_t> row;
  std::shared_lock g(s.ghost_lock);  // map nodes stay put as rows are added
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::int64_t r = rows[i];
    const std::int32_t* b = nullptr;
    const std::int32_t* e = nullptr;
    if (r >= s.r0 && r < s.r1) {
      const std::size_t len = s.row_columns(r - s.r0, row);
      b = row.data();
      e = b + len;
    } else {
      const auto& g_cols = s.ghost.at(r);
      b = g_cols.data();
      e = b + g_cols.size();
    }
    std::int64_t bad = -1;
    merge_find(b, e, sc, [&](std::int32_t j, std::int64_t k) {
      if (k < 0 && (bad < 0 || j < bad)) bad = j;
    });
    if (bad >= 0)
      throw error("accrete::sparse_matrix::update: entry (row " + std::to_string(r) + ", column " +
                  std::to_string(cols[std::size_t(bad)]) + ") at block position (" + std::to_string(i) + ", " +
                  std::to_string(bad) + ") is not in the frozen pattern; nothing of the update was applied");
  }
}

// A later round's update (frozen pattern) through the slot cache: its
// own rows added in place under the engine lock, its rows of other
// processes (if any) handed to the engine as one block. An update matching
// the record at the cursor reuses the record's slots and skips the
// checks its indices passed when recorded (a frozen pattern cannot
// change); one that does not is validated, checked and recorded. False
// when the cache does not apply (off, in use by another thread, or this
// process's part not open for the round): the caller takes the engine's
// path. Throws naming the first entry outside the pattern (or a bad
// argument) before anything is applied.
template <class T>
bool update_in_place(sparse_state<T>& s, const T* block, std::int64_t ld, std::span<const std::int64_t> rows,
                     std::span<const std::int64_t> cols, matrix_layout lay) {
  auto& c = s.cache;
  if (!c.on || rows.empty() || cols.empty()) return false;
  std::unique_lock cg(c.lock, std::try_to_lock);
  if (!cg.owns_lock()) return false;
  assembly_engine& e = *s.engine;
  if (!e.own_part_open()) return false;  // stays open for the round once open
  const std::size_t nr = rows.size(), nc = cols.size();
  auto own = [&](std::int64_t r) { return s.owns(r); };
  const std::int32_t* slot = nullptr;
  bool remote = false, distinct = false, unique = false;
  // The slots of the own rows' entries, into `found` (rows of other
  // processes keep 0: never read); throws naming an entry outside the pattern.
  auto look_up = [&](std::int32_t* found) {
    ACCRETE_THREAD_LOCAL sorted_cols sc;
    sc.assign(cols.data(), nc);
    ACCRETE_THREAD_LOCAL std::vector<std::int32_t> row;
    for (std::size_t i = 0; i < nr; ++i) {
      if (!own(rows[i])) continue;
      const std::int64_t lr = rows[i] - s.r0;
      const std::size_t len = s.row_columns(lr, row);
      const std::int32_t* b = row.data();
      const std::int32_t* en = b + len;
      std::int64_t bad = -1;
      merge_find(b, en, sc, [&](std::int32_t j, std::int64_t k) {
        if (k < 0) {
          if (bad < 0 || j < bad) bad = j;
        } else {
          found[i * nc + std::size_t(j)] = std::int32_t(s.slot(lr, k));
        }
      });
      if (bad >= 0)
        throw error("accrete::sparse_matrix::update: entry (row " + std::to_string(rows[i]) + ", column " +
                    std::to_string(cols[std::size_t(bad)]) + ") at block position (" + std::to_string(i) + ", " +
                    std::to_string(bad) + ") is not in the frozen pattern; nothing of the update was applied");
    }
  };
  using held = typename sparse_state<T>::slot_cache::held;
  if (c.cursor < c.records.size()) {
    auto& r = c.records[c.cursor];
    const std::int64_t* ix = c.idx.data() + r.idx;
    if (r.nr == nr && r.nc == nc && std::equal(rows.begin(), rows.end(), ix) &&
        std::equal(cols.begin(), cols.end(), ix + nr)) {
      e.validate_block(nr, nc, ld, lay, block);  // the indices were validated when recorded
      std::int32_t* sl = c.slots_of(r);
      if (r.state == held::row_places) {
        sl = c.pack(r, [&](std::size_t i, const std::int32_t* from, std::int32_t* to) {
          const std::int64_t lr = rows[i] - s.r0;
          for (std::size_t j = 0; j < nc; ++j) to[j] = std::int32_t(s.slot(lr, from[j]));
        });
      } else if (r.state == held::unknown) {
        if (r.remote) check_pattern(s, rows, cols);  // every row, other processes' too
        look_up(sl);
      }
      // Once per record (round 0 records every update and need not know).
      if (r.state != held::values) {
        r.distinct = all_distinct(cols.data(), nc);
        r.unique = r.distinct && all_distinct(rows.data(), nr);
      }
      r.state = held::values;
      slot = sl;
      remote = r.remote;
      distinct = r.distinct;
      unique = r.unique;
    }
  }
  if (!slot) {
    e.validate(rows, cols, ld, lay, block);  // the lookups below index by them
    remote = !std::all_of(rows.begin(), rows.end(), own);
    if (remote) check_pattern(s, rows, cols);  // every row, other processes' too
    ACCRETE_THREAD_LOCAL std::vector<std::int32_t> found;
    found.assign(nr * nc, 0);
    look_up(found.data());
    c.drop_after_cursor();
    std::int32_t* sl = c.append(rows, cols, held::values, remote);
    std::copy(found.begin(), found.end(), sl);
    slot = sl;
    distinct = c.records.back().distinct = all_distinct(cols.data(), nc);
    unique = c.records.back().unique = distinct && all_distinct(rows.data(), nr);
  }
  ++c.cursor;
  const bool colmaj = lay == matrix_layout::col_major;
  const std::int64_t rs = colmaj ? 1 : ld, cs = colmaj ? ld : 1;
  std::size_t nown = nr;
  if (remote) {
    // Other processes' rows first, as one column-major block: if the
    // engine refuses them, nothing was applied here either.
    ACCRETE_THREAD_LOCAL std::vector<std::int64_t> rrows;
    ACCRETE_THREAD_LOCAL std::vector<T> rblock;
    rrows.clear();
    for (std::int64_t r : rows)
      if (!own(r)) rrows.push_back(r);
    const std::size_t nrr = rrows.size();
    rblock.resize(nrr * nc);
    for (std::size_t j = 0; j < nc; ++j) {
      std::size_t q = 0;
      for (std::size_t i = 0; i < nr; ++i)
        if (!own(rows[i])) rblock[j * nrr + q++] = block[std::int64_t(i) * rs + std::int64_t(j) * cs];
    }
    e.update(rblock.data(), std::int64_t(nrr), rrows, cols, matrix_layout::col_major);
    nown = nr - nrr;
  }
  using R = real_t<T>;
  constexpr int w = width<T>;
  const bool exact = exact_capable<T> && e.shape().reproducible;
  const merge_op op = e.shape().merge;
  ACCRETE_THREAD_LOCAL std::vector<assembly_engine::spill> spilled;
  spilled.clear();
  if (nown > 0) {
    std::lock_guard g(e.lock());  // as received packets are applied
    T* v = s.values.data();
    // Row by row: a row's slots ascend through its part of `values`.
    const bool batched = !exact && op == merge_op::sum && distinct;
    // The exact adds of a real T: a contribution that would round is logged.
    auto spill_real = [&](std::int32_t k, R x) { spilled.push_back({k, double(x)}); };
    if (batched && !remote) {
      add_scattered_rows(v, slot, block, rs, cs, nr, nc);
    } else if (exact && w == 1 && distinct && !remote) {
      add_scattered_exact_rows(reinterpret_cast<R*>(v), slot, reinterpret_cast<const R*>(block), rs, cs, nr, nc, unique,
                               spill_real);
    } else {
      for (std::size_t i = 0; i < nr; ++i) {
        if (remote && !own(rows[i])) continue;
        const T* src = block + std::int64_t(i) * rs;
        const std::int32_t* si = slot + i * nc;
        if (exact && w == 1 && distinct) {
          add_scattered_exact(reinterpret_cast<R*>(v), si, reinterpret_cast<const R*>(src), cs, nc, spill_real);
        } else if (exact) {
          for (std::size_t j = 0; j < nc; ++j) {
            const std::int64_t k = si[j];
            const R* from = reinterpret_cast<const R*>(src + std::int64_t(j) * cs);
            add_run_exact(reinterpret_cast<R*>(v + k), from, w, [&](std::int32_t q) {
              spilled.push_back({k * w + q, double(from[q])});
            });
          }
        } else if (batched) {
          add_scattered(v, si, src, cs, nc);
        } else if (op == merge_op::sum) {
          for (std::size_t j = 0; j < nc; ++j) v[si[j]] += src[std::int64_t(j) * cs];
        } else {
          for (std::size_t j = 0; j < nc; ++j) v[si[j]] = merge_one(op, v[si[j]], src[std::int64_t(j) * cs]);
        }
      }
    }
    e.counted_in_place(nown * nc, !remote);  // the engine counted the update itself
  }
  // The targets of the update the replay expects next, fetched while the
  // caller computes that update's block: a later round's adds otherwise
  // wait on their lines of `values` (out of cache: an element's rows are
  // spread over the matrix) while the block's computation leaves the memory
  // idle. One prefetch per cache line's worth of slots (a row's slots
  // ascend, and an element's entries come in runs of consecutive columns);
  // only records whose slots are places in `values` (a remote record's
  // other rows hold none). After this update's adds: issued before them,
  // the prefetches competed with the adds' own misses (later rounds 6-12%
  // slower, bench/fe_assembly/README.md). Then the lines of the record after
  // next (its slots and indices), which the target prefetches and the
  // index comparison would otherwise wait on. Inline here: GCC deduces a
  // function of nothing but prefetches to be pure and drops the call.
  if (c.cursor < c.records.size()) {
    const auto& nx = c.records[c.cursor];
    if (nx.state == held::values && !nx.remote) {
      constexpr std::size_t step = sizeof(T) >= 64 ? 1 : 64 / sizeof(T);
      const std::int32_t* ns = c.slots_of(nx);
      const T* v = s.values.data();
      for (std::size_t k = 0, n = nx.nr * nx.nc; k < n; k += step) __builtin_prefetch(v + ns[k], 1);
    }
    if (c.cursor + 1 < c.records.size()) {
      const auto& nn = c.records[c.cursor + 1];
      const std::size_t spread = nn.state == held::row_places ? c.spread : 1;  // round 0's places, over its values
      prefetch_lines(c.slots_of(nn), nn.nr * nn.nc * spread * sizeof(std::int32_t), false);
      prefetch_lines(c.idx.data() + nn.idx, (nn.nr + nn.nc) * sizeof(std::int64_t), false);
    }
  }
  cg.unlock();
  if (!spilled.empty()) e.log_spills(spilled);
  if (nown > 0) e.applied_in_place(nown * nc);
  return true;
}

// Round 0: an update of this process's own rows only, logged here under
// the engine lock, with a slot-cache record whose slots the first commit
// fills in (so round 1 replays instead of looking every entry up). False
// when it does not apply (as update_in_place); the caller takes the
// engine's path.
template <class T>
bool log_in_place(sparse_state<T>& s, const T* block, std::int64_t ld, std::span<const std::int64_t> rows,
                  std::span<const std::int64_t> cols, matrix_layout lay) {
  auto& c = s.cache;
  if (!s.cache_wanted || s.growing || rows.empty() || cols.empty()) return false;
  for (std::int64_t r : rows)
    if (r < s.r0 || r >= s.r1) return false;
  std::unique_lock cg(c.lock, std::try_to_lock);
  if (!cg.owns_lock()) return false;
  assembly_engine& e = *s.engine;
  const std::size_t nr = rows.size(), nc = cols.size();
  const bool colmaj = lay == matrix_layout::col_major;
  {
    std::lock_guard g(e.lock());  // as received packets are applied
    if (!e.own_part_open()) return false;
    const auto [vals, chunk] = s.log.add(block, colmaj ? 1 : ld, colmaj ? ld : 1, rows, cols, s.r0);
    c.append_logged(rows, cols, vals, chunk);
    e.counted_in_place(nr * nc, true);
  }
  cg.unlock();
  e.applied_in_place(nr * nc);
  return true;
}

// Round 0: an update that took the engine's path (rows of other
// processes, say) keeps its place in the slot cache's sequence, with its
// slots unknown: its first replay checks it and looks them up.
template <class T>
void record_unknown(sparse_state<T>& s, std::span<const std::int64_t> rows, std::span<const std::int64_t> cols) {
  auto& c = s.cache;
  if (!s.cache_wanted || s.growing || rows.empty() || cols.empty()) return;
  std::unique_lock cg(c.lock, std::try_to_lock);
  if (!cg.owns_lock()) return;  // another thread's order is not repeatable anyway
  const bool remote = !std::all_of(rows.begin(), rows.end(), [&](std::int64_t r) { return s.owns(r); });
  c.append(rows, cols, sparse_state<T>::slot_cache::held::unknown, remote);
}

// At the commit that freezes the pattern: the columns of every other
// process's row this process updated in round 0, from their owners.
template <class T>
void fetch_ghosts(sparse_state<T>& s) {
  const int np = world_size();
  auto& t = s.touched;
  std::sort(t.begin(), t.end());
  t.erase(std::unique(t.begin(), t.end()), t.end());
  // Requests: rows by owner (t is sorted, and owners' ranges ascend).
  std::vector<std::size_t> scount(np, 0), sdisp(np, 0), rcount, rdisp;
  for (std::int64_t r : t) {
    const int p = int(std::upper_bound(s.starts.begin(), s.starts.end(), r) - s.starts.begin()) - 1;
    scount[std::size_t(p)] += sizeof(std::int64_t);
  }
  for (int p = 1; p < np; ++p) sdisp[p] = sdisp[p - 1] + scount[p - 1];
  const collective_ticket ticket = collective_begin("accrete::sparse_matrix::commit (the frozen pattern's rows)");
  auto wait = [&](request& r) { wait_collective(r, ticket); };
  auto asked = alltoallv_bytes(reinterpret_cast<const std::byte*>(t.data()), scount, sdisp, rcount, rdisp, wait);
  // Replies: for each asked row, its column count, then its columns.
  std::vector<std::int32_t> reply;
  std::vector<std::size_t> qcount(np, 0), qdisp(np, 0), acount, adisp;
  for (int p = 0; p < np; ++p) {
    qdisp[p] = reply.size() * sizeof(std::int32_t);
    std::vector<std::int64_t> rows(rcount[p] / sizeof(std::int64_t));
    if (!rows.empty()) std::memcpy(rows.data(), asked.data() + rdisp[p], rcount[p]);
    append_rows(s, rows, reply);
    qcount[p] = reply.size() * sizeof(std::int32_t) - qdisp[p];
  }
  auto got = alltoallv_bytes(reinterpret_cast<const std::byte*>(reply.data()), qcount, qdisp, acount, adisp, wait);
  collective_end(ticket);
  // Owners answered in the order asked, owners ascending.
  keep_rows(s, t, reinterpret_cast<const std::int32_t*>(got.data()));
  t.clear();
  t.shrink_to_fit();
  s.ghosts_known = true;
}

}  // namespace detail

template <class T>
sparse_matrix<T>::sparse_matrix(std::int64_t local_rows, std::int64_t local_cols, const sparse_matrix_options& opt)
    : s_(std::make_unique<detail::sparse_state<T>>()) {
  const char* name = "accrete::sparse_matrix";
  detail::require_initialized(name);
  const std::string who = std::string(name) + ": ";
  std::exception_ptr bad;
  try {
    if (local_rows < 0)
      throw std::invalid_argument(who + "local_rows = " + std::to_string(local_rows) + " is negative");
    if (local_cols < 0)
      throw std::invalid_argument(who + "local_cols = " + std::to_string(local_cols) + " is negative");
    if (opt.merge != merge_op::sum && opt.merge != merge_op::max && opt.merge != merge_op::min)
      throw std::invalid_argument(who + "merge = " + std::to_string(int(opt.merge)) + " is not sum, max or min");
    if (opt.merge != merge_op::sum && !std::is_floating_point_v<T>)
      throw std::invalid_argument(who + "merge = " + (opt.merge == merge_op::max ? "max" : "min") +
                                  " on complex elements, which have no order");
    if (opt.reproducible && opt.merge != merge_op::sum)
      throw std::invalid_argument(who + "reproducible = true concerns sums; merge is " +
                                  (opt.merge == merge_op::max ? "max" : "min") + ", order-independent already");
    if (opt.strategy != update_strategy::packets && opt.strategy != update_strategy::alltoall)
      throw std::invalid_argument(who + "strategy = " + std::to_string(int(opt.strategy)) +
                                  " is not an update_strategy");
    if (opt.buffer_cap < 1024)
      throw std::invalid_argument(who + "buffer_cap = " + std::to_string(opt.buffer_cap) + " is below 1 KiB");
    if (opt.coalesce_bytes == 0) throw std::invalid_argument(who + "coalesce_bytes = 0");
  } catch (...) {
    bad = std::current_exception();
  }
  detail::agree(name, bad,
                {{"element type", std::int64_t(detail::element_type_of<T>()), &detail::show_scalar_type},
                 {"strategy", std::int64_t(opt.strategy), &detail::show_strategy},
                 {"reproducible", opt.reproducible, &detail::show_bool},
                 {"merge", std::int64_t(opt.merge), &detail::show_merge},
                 {"growing_pattern", opt.growing_pattern, &detail::show_bool}});
  const std::int64_t mine[2] = {local_rows, local_cols};
  const auto all = detail::world_allgather(mine, name);
  const int np = detail::world_size(), me = detail::world_rank();
  std::vector<std::int64_t> starts(std::size_t(np) + 1, 0);
  std::int64_t cols = 0, c0 = 0;
  for (int p = 0; p < np; ++p) {
    starts[std::size_t(p) + 1] = starts[std::size_t(p)] + all[2 * std::size_t(p)];
    if (p == me) c0 = cols;
    cols += all[2 * std::size_t(p) + 1];
  }
  // The same on every process (from the same gathered sizes).
  if (starts.back() > INT32_MAX || cols > INT32_MAX)
    throw std::invalid_argument(who + "the global size " + std::to_string(starts.back()) + " x " +
                                std::to_string(cols) + " exceeds 2^31-1 rows or columns");
  auto& s = *s_;
  s.m = starts.back();
  s.n = cols;
  s.r0 = starts[std::size_t(me)];
  s.r1 = starts[std::size_t(me) + 1];
  s.c0 = c0;
  s.c1 = c0 + local_cols;
  s.growing = opt.growing_pattern;
  s.cache_wanted = opt.cache_slots;
  // Empty blocks until the first commit lays out the pattern.
  s.d_ptr.assign(std::size_t(s.r1 - s.r0) + 1, 0);
  s.o_ptr = s.d_ptr;
  detail::assembly_shape sh;
  sh.name = name;
  sh.rows = s.m;
  sh.cols = s.n;
  sh.row_map.parts = np;
  sh.row_map.starts = starts;
  s.starts = std::move(starts);
  sh.col_map.parts = 1;
  sh.my_part = me;
  sh.lrows = s.r1 - s.r0;
  sh.lcols = s.n;
  sh.lld = std::max<std::int64_t>(1, sh.lrows);
  sh.elem_size = sizeof(T);
  sh.storage_bytes = detail::assembly_engine::header_bytes;
  sh.strategy = opt.strategy;
  sh.buffer_cap = opt.buffer_cap;
  sh.coalesce_bytes = opt.coalesce_bytes;
  sh.seed = opt.seed;
  sh.reproducible = opt.reproducible && detail::exact_capable<T>;
  sh.merge = opt.merge;
  sh.element_storage = false;
  sh.context = &s;
  detail::register_questions<T>();
  s.engine = std::make_unique<detail::assembly_engine>(sh, &detail::sparse_apply<T>, &detail::sparse_settle<T>,
                                                       &detail::sparse_clear<T>);
}

template <class T>
sparse_matrix<T>::~sparse_matrix() = default;

template <class T>
std::int64_t sparse_matrix<T>::rows() const noexcept {
  return s_->m;
}
template <class T>
std::int64_t sparse_matrix<T>::cols() const noexcept {
  return s_->n;
}
template <class T>
std::int64_t sparse_matrix<T>::row_begin() const noexcept {
  return s_->r0;
}
template <class T>
std::int64_t sparse_matrix<T>::row_end() const noexcept {
  return s_->r1;
}
template <class T>
std::int64_t sparse_matrix<T>::col_begin() const noexcept {
  return s_->c0;
}
template <class T>
std::int64_t sparse_matrix<T>::col_end() const noexcept {
  return s_->c1;
}

template <class T>
void sparse_matrix<T>::update(const T* block, std::int64_t ld, std::span<const std::int64_t> rows,
                              std::span<const std::int64_t> cols, matrix_layout lay) {
  auto& s = *s_;
  if (s.frozen()) {
    if (detail::update_in_place(s, block, ld, rows, cols, lay)) return;  // validates
    s.engine->validate(rows, cols, ld, lay, block);  // ranges first: the lookups below index by them
    detail::check_pattern(s, rows, cols);
  } else if (!s.built) {
    s.engine->validate(rows, cols, ld, lay, block);
    if (detail::log_in_place(s, block, ld, rows, cols, lay)) return;
  }
  s.engine->update(block, ld, rows, cols, lay);  // validates
  if (!s.built && !s.growing && !cols.empty()) {
    {
      std::lock_guard g(s.touched_lock);
      for (std::int64_t r : rows)
        if (!s.owns(r)) s.touched.push_back(r);
    }
    detail::record_unknown(s, rows, cols);
  }
}

template <class T>
void sparse_matrix<T>::commit() {
  auto& s = *s_;
  s.engine->commit();
  std::exception_ptr bad;
  if (!s.outside.empty()) {
    bad = std::make_exception_ptr(error(s.outside));
    s.outside.clear();
  }
  {
    // The next round's updates replay the cache from its start.
    std::lock_guard g(s.cache.lock);
    s.cache.on = s.cache_wanted && s.frozen() && s.values.size() <= std::size_t(INT32_MAX);
    s.cache.cursor = 0;
    if (!s.cache.on) s.cache.clear();  // round 0's records (and the log they keep) would never be read
  }
  detail::agree("accrete::sparse_matrix::commit", bad);
  if (s.frozen() && !s.ghosts_known) detail::fetch_ghosts(s);
}

template <class T>
void sparse_matrix<T>::reopen() {
  s_->engine->reopen();
}
template <class T>
void sparse_matrix<T>::reset() {
  s_->engine->reset();
}
template <class T>
std::uint64_t sparse_matrix<T>::round() const noexcept {
  return s_->engine->round();
}
template <class T>
bool sparse_matrix<T>::pattern_frozen() const noexcept {
  return s_->frozen();
}
template <class T>
std::int64_t sparse_matrix<T>::local_nnz() const noexcept {
  return std::int64_t(s_->values.size());
}

template <class T>
csr_block<T> sparse_matrix<T>::diag() const {
  s_->engine->require_usable("diag");
  auto& s = *s_;
  return {s.d_ptr, s.d_col, std::span<T>(s.values.data(), std::size_t(s.nnz_d))};
}
template <class T>
csr_block<T> sparse_matrix<T>::offdiag() const {
  s_->engine->require_usable("offdiag");
  auto& s = *s_;
  return {s.o_ptr, s.o_col, std::span<T>(s.values.data() + s.nnz_d, s.values.size() - std::size_t(s.nnz_d))};
}
template <class T>
std::span<const std::int64_t> sparse_matrix<T>::col_map() const {
  s_->engine->require_usable("col_map");
  return s_->col_map;
}

template <class T>
T sparse_matrix<T>::get(std::int64_t i, std::int64_t j) const {
  auto& s = *s_;
  s.engine->require_usable("get");
  if (i < s.r0 || i >= s.r1)
    throw std::out_of_range("accrete::sparse_matrix::get: row " + std::to_string(i) +
                            " is not in this process's rows [" + std::to_string(s.r0) + ", " + std::to_string(s.r1) +
                            ")");
  if (j < 0 || j >= s.n)
    throw std::out_of_range("accrete::sparse_matrix::get: column " + std::to_string(j) + " is outside [0, " +
                            std::to_string(s.n) + ")");
  const std::int64_t k = s.find(std::int32_t(i - s.r0), j);
  return k < 0 ? T{} : s.values[std::size_t(k)];
}

template <class T>
assembly_stats sparse_matrix<T>::stats() const {
  return s_->engine->stats();
}

template class sparse_matrix<float>;
template class sparse_matrix<double>;
template class sparse_matrix<std::complex<float>>;
template class sparse_matrix<std::complex<double>>;

}  // namespace accrete
