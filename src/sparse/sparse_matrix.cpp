// sparse_matrix<T>: the typed layer over the assembly engine for a sparse
// target. The engine bins, buffers, sends and counts (no direct stores:
// only the owner knows where an entry lives); this file owns the pattern
// and the values, and the two kernels the engine calls on the owner:
//   sparse_apply   one packet: each (row, column) found in the row's sorted
//                  columns and merged in place; entries not in the pattern
//                  collected for commit (round 0, or a growing pattern)
//   sparse_settle  at commit: the reproducible log settled, then the
//                  collected entries merged into the pattern, which is laid
//                  out again as the diagonal and off-diagonal CSR blocks.
#include "accrete/sparse/sparse_matrix.hpp"

#include <algorithm>
#include <climits>
#include <complex>
#include <cstring>
#include <stdexcept>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "accrete/collectives.hpp"
#include "accrete/detail/scalar_type.hpp"
#include "accrete/error.hpp"
#include "assembly/kernels.hpp"

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
  // The pattern by full rows, for lookups: row i's global columns
  // pcol[row_ptr[i] .. row_ptr[i+1]) ascending. The diagonal columns are
  // one range of them, from position dfirst[i] in the row, so an entry's
  // place in `values` follows from the row's offsets (slot()), with no
  // per-entry array to miss in cache.
  std::vector<std::int64_t> row_ptr;
  std::vector<std::int32_t> pcol;
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
  // Round 0 without reproducible sums: each row's entries so far, by
  // column, values merged as they arrive (no contribution is kept, so the
  // first commit lays out the blocks without sorting every contribution).
  std::vector<std::vector<std::pair<std::int32_t, T>>> draft;
  std::string outside;  // the first entry that fell outside a frozen pattern
  // Frozen patterns are checked at the origin, before anything is applied,
  // for the rows it can see: its own, and the other processes' rows it
  // updated in round 0 (`touched`), whose columns their owners send at the
  // first commit (`ghost`). Other rows are checked by their owner.
  std::vector<std::int64_t> starts;  // row ranges (parts + 1)
  std::mutex touched_lock;
  std::vector<std::int64_t> touched;
  std::unordered_map<std::int64_t, std::vector<std::int32_t>> ghost;
  bool ghosts_known = false;
  // The slot cache (sparse_matrix_options::cache_slots): one round's
  // updates of own rows, in call order, each with its rows and columns and
  // the slot of every entry (column-major). An update that matches the
  // record at `cursor` adds through its slots; one that does not is looked
  // up and recorded there, dropping the records after it.
  struct slot_cache {
    struct record {
      std::size_t nr, nc, idx, slot;  // sizes; where its indices and slots start
    };
    bool on = false;
    std::mutex lock;  // one thread at a time; the others take the engine's path
    std::vector<record> records;
    std::vector<std::int64_t> idx;    // each record's rows, then its columns
    std::vector<std::int32_t> slots;  // each record's entry slots
    std::size_t cursor = 0;           // the next record of this round
  } cache;
  std::unique_ptr<assembly_engine> engine;  // last: destroyed (collectively) first

  bool frozen() const noexcept { return built && !growing; }
  std::int64_t find(std::int32_t lrow, std::int32_t col) const noexcept {
    if (!built) return -1;
    const auto b = pcol.begin() + row_ptr[std::size_t(lrow)], e = pcol.begin() + row_ptr[std::size_t(lrow) + 1];
    const auto it = std::lower_bound(b, e, col);
    return it != e && *it == col ? slot(lrow, it - b) : -1;
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
  const std::size_t count = std::size_t(v.nr) * std::size_t(v.nc);
  ACCRETE_THREAD_LOCAL std::vector<std::int64_t> slot;
  slot.resize(count);
  // Every slot first: with a frozen pattern a piece holding an entry
  // outside it is dropped whole.
  bool missing = false;
  if (!s.built) {
    std::fill(slot.begin(), slot.end(), -1);
    missing = true;
  } else {
    ACCRETE_THREAD_LOCAL sorted_cols sc;
    sc.assign(v.lcol, std::size_t(v.nc));
    for (std::int32_t i = 0; i < v.nr; ++i) {
      const std::int64_t rb = s.row_ptr[std::size_t(v.lrow[i])], re = s.row_ptr[std::size_t(v.lrow[i]) + 1];
      merge_find(s.pcol.data() + rb, s.pcol.data() + re, sc, [&](std::int32_t j, std::int64_t k) {
        slot[std::size_t(j) * std::size_t(v.nr) + std::size_t(i)] = k < 0 ? -1 : s.slot(v.lrow[i], k);
        if (k < 0 && !missing) {
          missing = true;
          if (s.frozen() && s.outside.empty())
            s.outside = "accrete::sparse_matrix: entry (row " + std::to_string(s.r0 + v.lrow[i]) + ", column " +
                        std::to_string(v.lcol[j]) + ") is not in the frozen pattern (round " +
                        std::to_string(e.round()) + "); the piece of the update that held it was not applied";
        }
      });
    }
  }
  if (missing && s.frozen()) return;
  using R = real_t<T>;
  constexpr int w = width<T>;
  const bool exact = exact_capable<T> && e.shape().reproducible;
  if (!s.built && !exact) {
    // Round 0: merge the piece's sorted columns into each row's draft.
    if (s.draft.empty()) s.draft.resize(std::size_t(s.r1 - s.r0));
    ACCRETE_THREAD_LOCAL sorted_cols sc;
    ACCRETE_THREAD_LOCAL std::vector<std::pair<std::int32_t, T>> merged;
    sc.assign(v.lcol, std::size_t(v.nc));
    for (std::int32_t i = 0; i < v.nr; ++i) {
      auto& row = s.draft[std::size_t(v.lrow[i])];
      merged.clear();
      std::size_t k = 0;
      for (const auto& [col, pos] : sc.v) {
        while (k < row.size() && row[k].first < col) merged.push_back(row[k++]);
        const T x = vals[std::size_t(pos) * std::size_t(v.nr) + std::size_t(i)];
        if (!merged.empty() && merged.back().first == col)  // a repeated column of the piece
          merged.back().second = merge_one(op, merged.back().second, x);
        else if (k < row.size() && row[k].first == col)
          merged.push_back({col, merge_one(op, row[k++].second, x)});
        else
          merged.push_back({col, merge_one(op, T{}, x)});
      }
      merged.insert(merged.end(), row.begin() + std::ptrdiff_t(k), row.end());
      row.swap(merged);
    }
    return;
  }
  ACCRETE_THREAD_LOCAL std::vector<assembly_engine::spill> spilled;
  spilled.clear();
  for (std::int32_t j = 0; j < v.nc; ++j)
    for (std::int32_t i = 0; i < v.nr; ++i) {
      const std::size_t at = std::size_t(j) * std::size_t(v.nr) + std::size_t(i);
      const std::int64_t k = slot[at];
      if (k < 0) {
        s.fresh.push_back({v.lrow[i], v.lcol[j], vals[at]});
      } else if (exact) {
        const R* from = reinterpret_cast<const R*>(vals + at);
        add_run_exact(reinterpret_cast<R*>(s.values.data() + k), from, w,
                      [&](std::int32_t c) { spilled.push_back({k * w + c, double(from[c])}); });
      } else {
        s.values[std::size_t(k)] = merge_one(op, s.values[std::size_t(k)], vals[at]);
      }
    }
  if (!spilled.empty()) e.log_spills(spilled);
}

// The fresh entries merged into the pattern; both CSR blocks laid out again.
template <class T>
void rebuild(sparse_state<T>& s, const assembly_shape& shape) {
  using entry = typename sparse_state<T>::entry;
  const std::int64_t nl = s.r1 - s.r0;
  std::vector<std::int64_t> ptr(std::size_t(nl) + 1, 0);
  std::vector<std::int32_t> col;
  std::vector<T> val;
  if (!s.draft.empty()) {
    // Round 0's rows, merged already (no earlier pattern).
    std::size_t total = 0;
    for (const auto& row : s.draft) total += row.size();
    col.reserve(total);
    val.reserve(total);
    for (std::int64_t r = 0; r < nl; ++r) {
      for (const auto& [c, x] : s.draft[std::size_t(r)]) col.push_back(c), val.push_back(x);
      ptr[std::size_t(r) + 1] = std::int64_t(col.size());
    }
    std::vector<std::vector<std::pair<std::int32_t, T>>>().swap(s.draft);
  } else {
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
          R parts[w];
          for (int c = 0; c < w; ++c) {
            exact_sum sum;
            for (std::size_t k = i; k < f.size() && f[k].row == f[i].row && f[k].col == f[i].col; ++k)
              sum.add(double(reinterpret_cast<const R*>(&f[k].v)[c]));
            parts[c] = sum.round<R>();
          }
          std::memcpy(&acc, parts, sizeof acc);
          while (j < f.size() && f[j].row == f[i].row && f[j].col == f[i].col) ++j;
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
    col.reserve(s.pcol.size() + add.size());
    val.reserve(s.pcol.size() + add.size());
    std::size_t a = 0;
    for (std::int64_t r = 0; r < nl; ++r) {
      std::int64_t k = s.built ? s.row_ptr[std::size_t(r)] : 0;
      const std::int64_t ke = s.built ? s.row_ptr[std::size_t(r) + 1] : 0;
      while (k < ke || (a < add.size() && add[a].row == r)) {
        const bool take_old = k < ke && (a >= add.size() || add[a].row != r || s.pcol[std::size_t(k)] < add[a].col);
        if (take_old) {
          col.push_back(s.pcol[std::size_t(k)]);
          val.push_back(s.values[std::size_t(s.slot(r, k - s.row_ptr[std::size_t(r)]))]);
          ++k;
        } else {
          col.push_back(add[a].col);
          val.push_back(add[a].v);
          ++a;
        }
      }
      ptr[std::size_t(r) + 1] = std::int64_t(col.size());
    }
  }

  // Split by column ownership; off-diagonal columns compressed.
  std::vector<std::int64_t> offcols;
  std::int64_t nd = 0;
  for (std::int32_t c : col)
    if (c >= s.c0 && c < s.c1)
      ++nd;
    else
      offcols.push_back(c);
  std::sort(offcols.begin(), offcols.end());
  offcols.erase(std::unique(offcols.begin(), offcols.end()), offcols.end());
  s.nnz_d = nd;
  s.values.assign(col.size(), T{});
  s.dfirst.assign(std::size_t(nl), 0);
  s.d_ptr.assign(std::size_t(nl) + 1, 0);
  s.o_ptr.assign(std::size_t(nl) + 1, 0);
  s.d_col.clear();
  s.o_col.clear();
  s.d_col.reserve(std::size_t(nd));
  s.o_col.reserve(col.size() - std::size_t(nd));
  std::int64_t di = 0, oi = nd;
  for (std::int64_t r = 0; r < nl; ++r) {
    const std::int64_t row0 = ptr[std::size_t(r)], dstart = di;
    for (std::int64_t k = row0; k < ptr[std::size_t(r) + 1]; ++k) {
      const std::int32_t c = col[std::size_t(k)];
      std::int64_t slot;
      if (c >= s.c0 && c < s.c1) {
        if (di == dstart) s.dfirst[std::size_t(r)] = std::int32_t(k - row0);
        slot = di++;
        s.d_col.push_back(std::int32_t(c - s.c0));
      } else {
        slot = oi++;
        s.o_col.push_back(std::int32_t(std::lower_bound(offcols.begin(), offcols.end(), c) - offcols.begin()));
      }
      s.values[std::size_t(slot)] = val[std::size_t(k)];
    }
    s.d_ptr[std::size_t(r) + 1] = di;
    s.o_ptr[std::size_t(r) + 1] = oi - nd;
  }
  s.row_ptr = std::move(ptr);
  s.pcol = std::move(col);
  s.col_map = std::move(offcols);
  s.built = true;
  // Slots moved: recorded ones are void.
  s.cache.records.clear();
  s.cache.idx.clear();
  s.cache.slots.clear();
  s.cache.cursor = 0;
}

template <class T>
void sparse_settle(assembly_engine& e) {
  auto& s = *static_cast<sparse_state<T>*>(e.shape().context);
  if constexpr (exact_capable<T>)
    if (e.shape().reproducible) settle_spills_into(e, s.values.data());
  if (!s.built || !s.fresh.empty() || !s.draft.empty()) rebuild(s, e.shape());
}

template <class T>
void sparse_clear(assembly_engine& e) {
  auto& s = *static_cast<sparse_state<T>*>(e.shape().context);
  std::fill(s.values.begin(), s.values.end(), T{});
}

}  // namespace

// Throws accrete::error naming the first entry of an update that a frozen
// pattern does not hold, among the rows this process knows the pattern of.
template <class T>
void check_pattern(const sparse_state<T>& s, std::span<const std::int64_t> rows, std::span<const std::int64_t> cols) {
  ACCRETE_THREAD_LOCAL sorted_cols sc;
  sc.assign(cols.data(), cols.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::int64_t r = rows[i];
    const std::int32_t* b = nullptr;
    const std::int32_t* e = nullptr;
    if (r >= s.r0 && r < s.r1) {
      b = s.pcol.data() + s.row_ptr[std::size_t(r - s.r0)];
      e = s.pcol.data() + s.row_ptr[std::size_t(r - s.r0) + 1];
    } else if (auto it = s.ghost.find(r); it != s.ghost.end()) {
      b = it->second.data();
      e = b + it->second.size();
    } else {
      continue;  // its owner checks
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

// An update of this process's own rows only, with a frozen pattern,
// applied here through the slot cache (recorded if it does not match), in
// place under the engine lock. False when it does not apply (rows of other
// processes, the part not open for this round, the cache off or in use by
// another thread): the caller takes the engine's path. Throws naming the
// first entry outside the pattern, before anything is applied.
template <class T>
bool update_in_place(sparse_state<T>& s, const T* block, std::int64_t ld, std::span<const std::int64_t> rows,
                     std::span<const std::int64_t> cols, matrix_layout lay) {
  auto& c = s.cache;
  if (!c.on || rows.empty() || cols.empty()) return false;
  for (std::int64_t r : rows)
    if (r < s.r0 || r >= s.r1) return false;
  std::unique_lock cg(c.lock, std::try_to_lock);
  if (!cg.owns_lock()) return false;
  assembly_engine& e = *s.engine;
  if (!e.own_part_open()) return false;
  const std::size_t nr = rows.size(), nc = cols.size();
  const std::int32_t* slot = nullptr;
  if (c.cursor < c.records.size()) {
    const auto& r = c.records[c.cursor];
    const std::int64_t* ix = c.idx.data() + r.idx;
    if (r.nr == nr && r.nc == nc && std::equal(rows.begin(), rows.end(), ix) &&
        std::equal(cols.begin(), cols.end(), ix + nr))
      slot = c.slots.data() + r.slot;
  }
  if (!slot) {
    ACCRETE_THREAD_LOCAL std::vector<std::int32_t> found;
    ACCRETE_THREAD_LOCAL sorted_cols sc;
    found.resize(nr * nc);
    sc.assign(cols.data(), nc);
    for (std::size_t i = 0; i < nr; ++i) {
      const std::int64_t lr = rows[i] - s.r0;
      const std::int32_t* b = s.pcol.data() + s.row_ptr[std::size_t(lr)];
      const std::int32_t* en = s.pcol.data() + s.row_ptr[std::size_t(lr) + 1];
      std::int64_t bad = -1;
      merge_find(b, en, sc, [&](std::int32_t j, std::int64_t k) {
        if (k < 0) {
          if (bad < 0 || j < bad) bad = j;
        } else {
          found[std::size_t(j) * nr + i] = std::int32_t(s.slot(lr, k));
        }
      });
      if (bad >= 0)
        throw error("accrete::sparse_matrix::update: entry (row " + std::to_string(rows[i]) + ", column " +
                    std::to_string(cols[std::size_t(bad)]) + ") at block position (" + std::to_string(i) + ", " +
                    std::to_string(bad) + ") is not in the frozen pattern; nothing of the update was applied");
    }
    c.records.resize(c.cursor);  // the sequence changed here: later records are stale
    if (c.records.empty()) {
      c.idx.clear();
      c.slots.clear();
    } else {
      const auto& last = c.records.back();
      c.idx.resize(last.idx + last.nr + last.nc);
      c.slots.resize(last.slot + last.nr * last.nc);
    }
    c.records.push_back({nr, nc, c.idx.size(), c.slots.size()});
    c.idx.insert(c.idx.end(), rows.begin(), rows.end());
    c.idx.insert(c.idx.end(), cols.begin(), cols.end());
    c.slots.insert(c.slots.end(), found.begin(), found.end());
    slot = c.slots.data() + c.records.back().slot;
  }
  ++c.cursor;
  const bool colmaj = lay == matrix_layout::col_major;
  const std::int64_t rs = colmaj ? 1 : ld, cs = colmaj ? ld : 1;
  using R = real_t<T>;
  constexpr int w = width<T>;
  const bool exact = exact_capable<T> && e.shape().reproducible;
  const merge_op op = e.shape().merge;
  ACCRETE_THREAD_LOCAL std::vector<assembly_engine::spill> spilled;
  spilled.clear();
  {
    std::lock_guard g(e.lock());  // as received packets are applied
    T* v = s.values.data();
    for (std::size_t j = 0; j < nc; ++j) {
      const T* src = block + std::int64_t(j) * cs;
      const std::int32_t* sj = slot + j * nr;
      if (exact) {
        for (std::size_t i = 0; i < nr; ++i) {
          const std::int64_t k = sj[i];
          const R* from = reinterpret_cast<const R*>(src + std::int64_t(i) * rs);
          add_run_exact(reinterpret_cast<R*>(v + k), from, w,
                        [&](std::int32_t q) { spilled.push_back({k * w + q, double(from[q])}); });
        }
      } else if (op == merge_op::sum) {
        for (std::size_t i = 0; i < nr; ++i) v[sj[i]] += src[std::int64_t(i) * rs];
      } else {
        for (std::size_t i = 0; i < nr; ++i) v[sj[i]] = merge_one(op, v[sj[i]], src[std::int64_t(i) * rs]);
      }
    }
  }
  cg.unlock();
  if (!spilled.empty()) e.log_spills(spilled);
  e.applied_in_place(nr * nc);
  return true;
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
    for (std::size_t k = 0; k < rcount[p] / sizeof(std::int64_t); ++k) {
      std::int64_t r;
      std::memcpy(&r, asked.data() + rdisp[p] + k * sizeof r, sizeof r);
      const std::int64_t lr = r - s.r0, b = s.row_ptr[std::size_t(lr)], e = s.row_ptr[std::size_t(lr) + 1];
      reply.push_back(std::int32_t(e - b));
      reply.insert(reply.end(), s.pcol.begin() + b, s.pcol.begin() + e);
    }
    qcount[p] = reply.size() * sizeof(std::int32_t) - qdisp[p];
  }
  auto got = alltoallv_bytes(reinterpret_cast<const std::byte*>(reply.data()), qcount, qdisp, acount, adisp, wait);
  collective_end(ticket);
  const auto* in = reinterpret_cast<const std::int32_t*>(got.data());
  std::size_t at = 0;
  for (std::int64_t r : t) {  // owners answered in the order asked, owners ascending
    const std::int32_t n = in[at++];
    s.ghost[r].assign(in + at, in + at + n);
    at += std::size_t(n);
  }
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
    if (local_rows < 0) throw std::invalid_argument(who + "local_rows = " + std::to_string(local_rows) + " is negative");
    if (local_cols < 0) throw std::invalid_argument(who + "local_cols = " + std::to_string(local_cols) + " is negative");
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
    s.engine->validate(rows, cols, ld, lay, block);  // ranges first: the lookups below index by them
    if (detail::update_in_place(s, block, ld, rows, cols, lay)) return;
    detail::check_pattern(s, rows, cols);
  }
  s.engine->update(block, ld, rows, cols, lay);  // validates
  if (!s.built && !s.growing && !cols.empty()) {
    std::lock_guard g(s.touched_lock);
    for (std::int64_t r : rows)
      if (r < s.r0 || r >= s.r1) s.touched.push_back(r);
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
  return {s.o_ptr, s.o_col,
          std::span<T>(s.values.data() + s.nnz_d, s.values.size() - std::size_t(s.nnz_d))};
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
    throw std::out_of_range("accrete::sparse_matrix::get: row " + std::to_string(i) + " is not in this process's rows [" +
                            std::to_string(s.r0) + ", " + std::to_string(s.r1) + ")");
  if (j < 0 || j >= s.n)
    throw std::out_of_range("accrete::sparse_matrix::get: column " + std::to_string(j) + " is outside [0, " +
                            std::to_string(s.n) + ")");
  const std::int64_t k = s.find(std::int32_t(i - s.r0), std::int32_t(j));
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
