// sparse_matrix<T>: assembly of random element sets into a distributed
// CSR, checked exactly against a serial reference that every process
// computes from the same generator. Rows are split unevenly (one process
// owns none, the last rows nobody touches), columns are split differently
// from rows (so the diagonal block is not square), elements repeat
// indices. Registered in sparse_matrix.cmake for P = 1..5, node sizes real
// and 1.
#include <algorithm>
#include <chrono>
#include <complex>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "accrete/accrete.hpp"
#include "accrete/sparse/sparse_matrix.hpp"
#include "assembly/repro.hpp"

using namespace accrete;

namespace {

constexpr int kElements = 240;

struct element {
  std::vector<std::int64_t> rows, cols;
};

// Uneven row ownership: rank 1 owns no rows; columns split evenly.
std::int64_t my_rows(int rank) { return rank == 1 ? 0 : 9 + 5 * (rank % 3); }
std::int64_t total_rows(int np) {
  std::int64_t m = 0;
  for (int p = 0; p < np; ++p) m += my_rows(p);
  return m;
}
std::int64_t my_cols(int rank, int np) {
  const std::int64_t n = total_rows(np) + 3;  // rectangular: three more columns
  return n / np + (rank < n % np ? 1 : 0);
}

// Element e (the same on every process): 3..6 rows and 2..6 columns, drawn
// with repeats, avoiding the last 4 rows (rows nobody touches) unless
// salted: salted elements reach entries that unsalted ones never do.
element make_element(int e, std::int64_t m, std::int64_t n, std::uint64_t salt = 0) {
  std::mt19937_64 g(std::uint64_t(e) * 7919 + 17 + salt);
  element el;
  const int nr = 3 + int(g() % 4), nc = 2 + int(g() % 5);
  const std::uint64_t span = std::uint64_t(salt ? m : m - 4);
  for (int i = 0; i < nr; ++i) el.rows.push_back(std::int64_t(g() % span));
  for (int j = 0; j < nc; ++j) el.cols.push_back(std::int64_t(g() % std::uint64_t(n)));
  return el;
}

// Block values, column-major: multiples of 1/32 below 8 in magnitude, so
// every sum is exact whatever its order.
template <class T>
T value(int e, int round, std::size_t k) {
  const double re = double(int((e * 31 + round * 7 + int(k) * 13) % 255) - 127) / 32.0;
  if constexpr (std::is_same_v<T, std::complex<double>> || std::is_same_v<T, std::complex<float>>)
    return T(typename T::value_type(re), typename T::value_type(double(int(k % 5) - 2) / 4.0));
  else
    return T(re);
}

template <class T>
std::vector<T> block_of(const element& el, int e, int round) {
  std::vector<T> b(el.rows.size() * el.cols.size());
  for (std::size_t k = 0; k < b.size(); ++k) b[k] = value<T>(e, round, k);
  return b;
}

template <class T>
using reference = std::map<std::pair<std::int64_t, std::int64_t>, T>;

// The serial assembly of rounds `rounds` of every element, rows [r0, r1).
template <class T>
reference<T> serial(std::int64_t m, std::int64_t n, std::int64_t r0, std::int64_t r1, std::initializer_list<int> rounds,
                    std::uint64_t salt = 0) {
  reference<T> ref;
  for (int round : rounds)
    for (int e = 0; e < kElements; ++e) {
      const element el = make_element(e, m, n, salt);
      const auto b = block_of<T>(el, e, round);
      for (std::size_t j = 0; j < el.cols.size(); ++j)
        for (std::size_t i = 0; i < el.rows.size(); ++i)
          if (el.rows[i] >= r0 && el.rows[i] < r1) ref[{el.rows[i], el.cols[j]}] += b[j * el.rows.size() + i];
    }
  return ref;
}

// This process's elements of one round (element e belongs to rank e % P).
template <class T>
void assemble(sparse_matrix<T>& A, int round, std::uint64_t salt = 0, int threads = 1) {
  const int me = rank_me(), np = rank_n();
  auto work = [&](int t) {
    for (int e = me + np * t; e < kElements; e += np * threads) {
      const element el = make_element(e, A.rows(), A.cols(), salt);
      const auto b = block_of<T>(el, e, round);
      A.update(b.data(), std::int64_t(el.rows.size()), el.rows, el.cols);
    }
  };
  std::vector<std::thread> ts;
  for (int t = 1; t < threads; ++t) ts.emplace_back(work, t);
  work(0);
  for (auto& th : ts) th.join();
}

// The committed local rows against the reference, through every view:
// the pattern (every entry, no other), the values, the two blocks' layout.
template <class T>
void expect_rows(const sparse_matrix<T>& A, const reference<T>& ref) {
  const auto d = A.diag(), o = A.offdiag();
  const auto cmap = A.col_map();
  const std::int64_t nl = A.row_end() - A.row_begin();
  ASSERT_EQ(d.row_ptr.size(), std::size_t(nl) + 1);
  ASSERT_EQ(o.row_ptr.size(), std::size_t(nl) + 1);
  ASSERT_TRUE(std::is_sorted(cmap.begin(), cmap.end()));
  reference<T> got;
  for (std::int64_t r = 0; r < nl; ++r) {
    const std::int64_t row = A.row_begin() + r;
    std::int64_t last = -1;
    for (std::int64_t k = d.row_ptr[r]; k < d.row_ptr[r + 1]; ++k) {
      const std::int64_t c = A.col_begin() + d.col[k];
      ASSERT_GE(d.col[k], 0);
      ASSERT_LT(c, A.col_end());
      ASSERT_GT(c, last) << "diagonal block columns ascend";
      last = c;
      got[{row, c}] = d.value[k];
    }
    last = -1;
    for (std::int64_t k = o.row_ptr[r]; k < o.row_ptr[r + 1]; ++k) {
      ASSERT_LT(std::size_t(o.col[k]), cmap.size());
      const std::int64_t c = cmap[o.col[k]];
      ASSERT_TRUE(c < A.col_begin() || c >= A.col_end()) << "off-diagonal column " << c;
      ASSERT_GT(c, last);
      last = c;
      got[{row, c}] = o.value[k];
    }
  }
  EXPECT_EQ(std::int64_t(got.size()), A.local_nnz());
  ASSERT_EQ(got.size(), ref.size()) << "pattern size on rank " << rank_me();
  for (const auto& [ij, v] : ref) {
    auto it = got.find(ij);
    ASSERT_NE(it, got.end()) << "entry (" << ij.first << ", " << ij.second << ") missing";
    EXPECT_EQ(it->second, v) << "entry (" << ij.first << ", " << ij.second << ")";
    EXPECT_EQ(A.get(ij.first, ij.second), v);
  }
}

template <class T>
void rounds_on_frozen_pattern(sparse_matrix_options opt, int threads = 1) {
  sparse_matrix<T> A(my_rows(rank_me()), my_cols(rank_me(), rank_n()), opt);
  ASSERT_EQ(A.rows(), total_rows(rank_n()));
  ASSERT_EQ(A.cols(), total_rows(rank_n()) + 3);
  assemble(A, 0, 0, threads);
  A.commit();
  EXPECT_TRUE(A.pattern_frozen());
  expect_rows(A, serial<T>(A.rows(), A.cols(), A.row_begin(), A.row_end(), {0}));
  // Round 1 adds on the pattern; round 2 starts from zero.
  A.reopen();
  assemble(A, 1, 0, threads);
  A.commit();
  expect_rows(A, serial<T>(A.rows(), A.cols(), A.row_begin(), A.row_end(), {0, 1}));
  A.reset();
  assemble(A, 2, 0, threads);
  A.commit();
  expect_rows(A, serial<T>(A.rows(), A.cols(), A.row_begin(), A.row_end(), {2}));
  EXPECT_EQ(A.round(), 3u);
}

// Updates take the slot cache once the pattern is frozen
// (sparse_matrix_options::cache_slots): recorded in the first frozen
// round, replayed when a round repeats them, recorded again where the
// sequence changes. Each process's list holds updates of its own rows and,
// every third, one that also adds into a row of any process (its own
// rows in place, the other rows sent). Mixed with the usual elements,
// checked exactly every round.
struct own_element {
  std::vector<std::int64_t> rows, cols;
  bool row_major = false;
  std::int64_t ld = 0;
};

// Process q's list (every process can make every list).
std::vector<own_element> own_list(int q, std::int64_t m, std::int64_t n) {
  std::int64_t r0 = 0;
  for (int p = 0; p < q; ++p) r0 += my_rows(p);
  const std::int64_t nl = my_rows(q);
  std::vector<own_element> own;
  std::mt19937_64 g(std::uint64_t(q) * 31 + 5);
  for (int k = 0; nl > 0 && k < 30; ++k) {
    own_element el;
    // Every fourth is wide (9..12 columns, the adds go in batches of 8)
    // with a column repeated inside the first batch: both of its adds count.
    // Those at k = 1 and 5 (mod 8) have distinct columns and their first row
    // twice (wide, then narrow): handed over row-major and contiguous (as
    // the wide ones with a repeated column at k = 3 mod 8; see add_own), a
    // batch spans both copies of the row, and all adds count.
    const bool twice = k % 4 == 1 && k % 3 != 2;
    const int nr = 3 + int(g() % 3), nc = k % 4 == 3 || k % 8 == 1 ? 9 + int(g() % 4) : 2 + int(g() % 5);
    for (int i = 0; i < nr; ++i) el.rows.push_back(r0 + std::int64_t(g() % std::uint64_t(nl)));
    if (k % 3 == 2) el.rows[1] = std::int64_t(g() % std::uint64_t(m));
    if (twice) el.rows[1] = el.rows[0];
    for (int j = 0; j < nc; ++j) el.cols.push_back(std::int64_t(g() % std::uint64_t(n)));
    if (twice) {
      std::sort(el.cols.begin(), el.cols.end());
      for (int j = 1; j < nc; ++j) el.cols[j] = std::max(el.cols[j], el.cols[j - 1] + 1) % n;
      std::sort(el.cols.begin(), el.cols.end());
      el.cols.erase(std::unique(el.cols.begin(), el.cols.end()), el.cols.end());
    }
    if (nc > 8 && !twice) el.cols[7] = el.cols[2];
    el.ld = nr;
    own.push_back(el);
  }
  return own;
}

// Which of a process's own elements a round adds, in what order, and
// whether in mixed layouts.
struct own_round {
  std::vector<std::size_t> order;
  bool mixed = false;
};
using own_plan = std::function<own_round(int round, std::size_t count)>;

// Round 0 discovers and records; 1 and 2 replay; 3 changes order and
// layouts (recorded again); 4 replays those.
own_round replays_then_reversed(int round, std::size_t count) {
  own_round o;
  for (std::size_t k = 0; k < count; ++k) o.order.push_back(round < 3 ? k : count - 1 - k);
  o.mixed = round >= 3;
  return o;
}

// Round 0's records replayed in parts: round 1 stops after the first
// third (the rest still hold round 0's places in their rows), round 2
// replays them all, round 3 keeps the first third and then reverses the
// rest (the sequence changes where round 2 left records, recorded again),
// round 4 replays round 3.
own_round replays_in_parts(int round, std::size_t count) {
  own_round o;
  const std::size_t third = count / 3;
  for (std::size_t k = 0; k < count; ++k) {
    if (round == 1 && k >= third) break;
    o.order.push_back(round >= 3 && k >= third ? count - 1 - (k - third) : k);
  }
  return o;
}

// Round 1 changes the sequence after its first third, where round 0's
// records still hold places in their rows (dropped unread); round 2
// replays round 1; round 3 goes back to round 0's order (recorded again);
// round 4 replays it.
own_round changes_before_replayed(int round, std::size_t count) {
  own_round o;
  const std::size_t third = count / 3;
  for (std::size_t k = 0; k < count; ++k)
    o.order.push_back((round == 1 || round == 2) && k >= third ? count - 1 - (k - third) : k);
  o.mixed = round == 2;
  return o;
}

template <class T>
void slot_cache_rounds(const sparse_matrix_options& opt, const own_plan& plan = replays_then_reversed) {
  sparse_matrix<T> A(my_rows(rank_me()), my_cols(rank_me(), rank_n()), opt);
  const std::int64_t r0 = A.row_begin(), nl = A.row_end() - r0;
  const std::vector<own_element> own = own_list(rank_me(), A.rows(), A.cols());
  // Round r's values of process q's element k, as (i, j) -> value.
  auto val = [](int q, std::size_t k, int round, std::size_t i, std::size_t j) {
    return value<T>(1000 + 40 * q + int(k), round, i * 7 + j);
  };
  auto add_own = [&](int round) {
    const own_round o = plan(round, own.size());
    const bool mixed_layouts = o.mixed;
    for (const std::size_t k : o.order) {
      own_element el = own[k];
      const std::size_t nr = el.rows.size(), nc = el.cols.size();
      el.row_major = mixed_layouts && k % 2 == 1;
      // Row-major contiguous at k = 1, 3, 5 (mod 8), padded at k = 7.
      el.ld = el.row_major ? std::int64_t(nc) + (k % 8 == 7 ? 1 : 0)
                           : std::int64_t(nr) + std::int64_t(mixed_layouts ? 2 : 0);
      std::vector<T> b(std::size_t(el.ld) * (el.row_major ? nr : nc), T(99));  // padding never read
      for (std::size_t i = 0; i < nr; ++i)
        for (std::size_t j = 0; j < nc; ++j)
          b[el.row_major ? i * std::size_t(el.ld) + j : j * std::size_t(el.ld) + i] = val(rank_me(), k, round, i, j);
      A.update(b.data(), el.ld, el.rows, el.cols, el.row_major ? matrix_layout::row_major : matrix_layout::col_major);
    }
  };
  auto expect_round = [&](int round) {
    auto ref = serial<T>(A.rows(), A.cols(), A.row_begin(), A.row_end(), {round});
    for (int q = 0; q < rank_n(); ++q) {
      const auto list = own_list(q, A.rows(), A.cols());
      // The pattern is round 0's (every element): what a round does not add is zero.
      auto add = [&](int r, bool values) {
        for (const std::size_t k : plan(r, list.size()).order)
          for (std::size_t i = 0; i < list[k].rows.size(); ++i)
            if (list[k].rows[i] >= A.row_begin() && list[k].rows[i] < A.row_end())
              for (std::size_t j = 0; j < list[k].cols.size(); ++j)
                ref[{list[k].rows[i], list[k].cols[j]}] += values ? val(q, k, round, i, j) : T{};
      };
      if (round > 0) add(0, false);
      add(round, true);
    }
    expect_rows(A, ref);
  };
  for (int round = 0; round < 5; ++round) {
    if (round > 0) A.reset();
    assemble(A, round);
    add_own(round);
    A.commit();
    SCOPED_TRACE("round " + std::to_string(round));
    expect_round(round);
  }
  // An own-row update with an entry outside the pattern throws, and nothing
  // of it is applied: the values stay those of round 4.
  A.reopen();
  if (nl > 0) {
    const std::int64_t row = r0;
    std::int64_t fresh = -1;
    for (std::int64_t c = 0; c < A.cols() && fresh < 0; ++c)
      if (A.get(row, c) == T{}) {
        const auto d = A.diag();
        bool stored = false;  // zero-valued entries may be stored: look at the pattern
        if (c >= A.col_begin() && c < A.col_end())
          for (auto k = d.row_ptr[0]; k < d.row_ptr[1]; ++k) stored = stored || A.col_begin() + d.col[k] == c;
        const auto o = A.offdiag();
        for (auto k = o.row_ptr[0]; k < o.row_ptr[1]; ++k) stored = stored || A.col_map()[o.col[k]] == c;
        if (!stored) fresh = c;
      }
    if (fresh >= 0) {
      const std::int64_t rows[2] = {row, row}, cols[2] = {own[0].cols[0], fresh};
      const T b[4] = {T(1), T(1), T(1), T(1)};
      try {
        A.update(b, 2, rows, cols);
        ADD_FAILURE() << "an own-row update outside the frozen pattern was accepted";
      } catch (const error& e) {
        EXPECT_NE(std::string(e.what()).find("nothing of the update was applied"), std::string::npos) << e.what();
      }
    }
  }
  A.commit();
  expect_round(4);
}

}  // namespace

TEST(SparseMatrix, UpdatesThroughTheSlotCache) { slot_cache_rounds<double>({}); }
TEST(SparseMatrix, UpdatesThroughTheSlotCacheComplexReproducible) {
  sparse_matrix_options o;
  o.reproducible = true;
  slot_cache_rounds<std::complex<double>>(o);
}
// Round 0's records (kept where round 0 logged its values, one int32 place
// in 1, 2 or 4 of a value's) replayed over several rounds, or dropped
// before any replay read them.
TEST(SparseMatrix, SlotCacheReplayedInParts) {
  slot_cache_rounds<float>({}, replays_in_parts);
  slot_cache_rounds<double>({}, replays_in_parts);
  slot_cache_rounds<std::complex<double>>({}, replays_in_parts);
}
TEST(SparseMatrix, SlotCacheChangedBeforeReplayed) {
  slot_cache_rounds<float>({}, changes_before_replayed);
  slot_cache_rounds<std::complex<float>>({}, changes_before_replayed);
  sparse_matrix_options o;
  o.reproducible = true;
  slot_cache_rounds<double>(o, changes_before_replayed);
}
TEST(SparseMatrix, RoundsOnAFrozenPatternDouble) { rounds_on_frozen_pattern<double>({}); }
TEST(SparseMatrix, RoundsOnAFrozenPatternComplex) { rounds_on_frozen_pattern<std::complex<double>>({}); }
TEST(SparseMatrix, RoundsOnAFrozenPatternFloat) { rounds_on_frozen_pattern<float>({}); }
TEST(SparseMatrix, AlltoallStrategy) {
  sparse_matrix_options o;
  o.strategy = update_strategy::alltoall;
  rounds_on_frozen_pattern<double>(o);
}
TEST(SparseMatrix, SmallBuffersAndThreads) {
  sparse_matrix_options o;
  o.buffer_cap = 2048;  // a packet or two in flight at a time
  o.coalesce_bytes = 256;
  rounds_on_frozen_pattern<double>(o, 3);
}

// Updates rows {in_pattern, outside} x {col} and expects the error naming
// (outside, col) at block position (1, 0).
void expect_rejected_second_row(sparse_matrix<double>& A, std::int64_t in_pattern, std::int64_t outside,
                                std::int64_t col) {
  const std::int64_t rows[2] = {in_pattern, outside}, cols[1] = {col};
  const double b[2] = {1.0, 1.0};
  try {
    A.update(b, 2, rows, cols);
    ADD_FAILURE() << "update accepted an entry outside the frozen pattern";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("entry (row " + std::to_string(outside) + ", column " + std::to_string(col) +
                                         ") at block position (1, 0)"),
              std::string::npos)
        << e.what();
  }
}

// A new entry in a row whose pattern the origin knows (its own rows, and
// rows it updated in round 0) throws from update, before anything of the
// update is applied.
TEST(SparseMatrix, NewEntryInAFrozenPatternThrowsAtTheOrigin) {
  sparse_matrix<double> A(my_rows(rank_me()), my_cols(rank_me(), rank_n()));
  assemble(A, 0);
  A.commit();
  A.reopen();
  const std::int64_t last = A.rows() - 1;  // a row nobody updated in round 0
  if (last >= A.row_begin() && last < A.row_end()) {
    // The update's first row is in the pattern, its second is not: nothing
    // may be applied, not even the first row's part.
    const element el = make_element(rank_me(), A.rows(), A.cols());
    expect_rejected_second_row(A, el.rows[0], last, el.cols[0]);
  }
  // Rows updated in round 0 are known to every origin that updated them.
  const element el = make_element(rank_me(), A.rows(), A.cols());
  if (std::int64_t(rank_me()) < kElements) {
    std::set<std::int64_t> in_row;
    for (std::int64_t c : el.cols) in_row.insert(c);
    // A column of the matrix this row does not hold (round 0 used few).
    const std::int64_t row = el.rows[0];
    std::int64_t fresh_col = -1;
    const auto ref = serial<double>(A.rows(), A.cols(), row, row + 1, {0});
    for (std::int64_t c = 0; c < A.cols() && fresh_col < 0; ++c)
      if (!ref.count({row, c})) fresh_col = c;
    if (fresh_col >= 0) {
      const std::int64_t rows[1] = {row}, cols[1] = {fresh_col};
      const double b[1] = {2.0};
      EXPECT_THROW(A.update(b, 1, rows, cols), error) << "row " << row << ", column " << fresh_col;
    }
  }
  A.commit();  // nothing of the rejected updates arrived anywhere
  expect_rows(A, serial<double>(A.rows(), A.cols(), A.row_begin(), A.row_end(), {0}));
}

// Rows of other processes that process q did not update in round 0 (in
// which only process 0 updated, every element) but the pattern holds: up
// to three entries (row, column) for q, the same picks on every process.
std::vector<std::pair<std::int64_t, std::int64_t>> unseen_entries(int q, std::int64_t m, std::int64_t n,
                                                                  std::int64_t q0, std::int64_t q1) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  if (q == 0) return out;
  for (const auto& [ij, v] : serial<double>(m, n, 0, m, {0})) {
    (void)v;
    const std::int64_t r = ij.first;
    if ((r < q0 || r >= q1) && (out.empty() || out.back().first != r) && out.size() < 3) out.push_back(ij);
  }
  return out;
}

// A row of another process that the origin did not update in round 0 is
// asked of its owner at the first update after the freeze: entries in the
// pattern are added, an entry outside it throws from update, and nothing of
// that update is applied (not even its rows the pattern holds).
TEST(SparseMatrix, RowsFirstUpdatedAfterTheFreezeAreCheckedAtTheOrigin) {
  sparse_matrix<double> A(my_rows(rank_me()), my_cols(rank_me(), rank_n()));
  if (rank_me() == 0)
    for (int e = 0; e < kElements; ++e) {
      const element el = make_element(e, A.rows(), A.cols());
      const auto b = block_of<double>(el, e, 0);
      A.update(b.data(), std::int64_t(el.rows.size()), el.rows, el.cols);
    }
  A.commit();
  A.reopen();
  const int np = rank_n(), me = rank_me();
  const std::int64_t last = A.rows() - 1;  // a row nobody updated in round 0
  const auto mine = unseen_entries(me, A.rows(), A.cols(), A.row_begin(), A.row_end());
  if (!mine.empty() && (last < A.row_begin() || last >= A.row_end())) {
    expect_rejected_second_row(A, mine[0].first, last, mine[0].second);
  }
  // Twice, by two threads at once: both may ask, or one finds the rows
  // known.
  auto twice = [&] {
    for (const auto& [r, c] : mine) {
      const std::int64_t rows[1] = {r}, cols[1] = {c};
      const double b[1] = {0.5};
      A.update(b, 1, rows, cols);
    }
  };
  std::thread other(twice);
  twice();
  other.join();
  A.commit();  // no error anywhere: the rejected update sent nothing
  auto ref = serial<double>(A.rows(), A.cols(), A.row_begin(), A.row_end(), {0});
  std::int64_t starts[2] = {0, 0};
  for (int q = 0; q < np; ++q) {
    starts[1] = starts[0] + my_rows(q);
    for (const auto& [r, c] : unseen_entries(q, A.rows(), A.cols(), starts[0], starts[1]))
      if (r >= A.row_begin() && r < A.row_end()) ref[{r, c}] += 1.0;
    starts[0] = starts[1];
  }
  expect_rows(A, ref);
}

// An update rejected at the origin (a row nobody updated in round 0, so
// empty on every process) leaves the round clean: the commit succeeds
// everywhere, and reset() starts over on the same pattern.
TEST(SparseMatrix, ResetAfterARejectedUpdateKeepsThePattern) {
  sparse_matrix<double> A(my_rows(rank_me()), my_cols(rank_me(), rank_n()));
  assemble(A, 0);
  A.commit();
  A.reopen();
  const std::int64_t last = A.rows() - 1;
  const std::int64_t rows[1] = {last}, cols[1] = {0};
  const double b[1] = {1.0};
  EXPECT_THROW(A.update(b, 1, rows, cols), error);
  A.commit();
  expect_rows(A, serial<double>(A.rows(), A.cols(), A.row_begin(), A.row_end(), {0}));
  A.reset();
  assemble(A, 2);
  A.commit();
  expect_rows(A, serial<double>(A.rows(), A.cols(), A.row_begin(), A.row_end(), {2}));
}

TEST(SparseMatrix, GrowingPattern) {
  sparse_matrix_options o;
  o.growing_pattern = true;
  sparse_matrix<double> A(my_rows(rank_me()), my_cols(rank_me(), rank_n()), o);
  assemble(A, 0);
  A.commit();
  EXPECT_FALSE(A.pattern_frozen());
  A.reopen();
  assemble(A, 1, 99);  // new entries and existing ones
  A.commit();
  auto ref = serial<double>(A.rows(), A.cols(), A.row_begin(), A.row_end(), {0});
  for (auto& [ij, v] : serial<double>(A.rows(), A.cols(), A.row_begin(), A.row_end(), {1}, 99)) ref[ij] += v;
  expect_rows(A, ref);
}

// A matrix far wider than its entries (5 million columns per process, a
// few dozen entries): round 0 lays the pattern out over the pieces' own
// columns, renumbered, instead of a table per global column, and the
// off-diagonal map is searched; rows, columns and values exact, two rounds.
TEST(SparseMatrix, WideMatrixWithFewEntries) {
  const int np = rank_n();
  sparse_matrix<double> A(3, 5'000'000);
  const std::int64_t m = A.rows(), n = A.cols();
  auto update = [&](int p, int u, int round, auto&& f) {
    const std::int64_t rows[2] = {(p * 7 + u * 3) % m, (p + 2 * u + 1) % m};
    const std::int64_t cols[3] = {(std::int64_t(p) * 1'000'003 + u * 999'983) % n, (p * 17 + u * 31) % n, n - 1 - u};
    double block[6];
    for (int k = 0; k < 6; ++k) block[k] = 0.25 * ((p + 3 * u + k) % 7 + 1) * (round + 1);
    f(rows, cols, block);
  };
  for (int round = 0; round < 2; ++round) {
    if (round > 0) A.reset();
    for (int u = 0; u < 6; ++u)
      update(rank_me(), u, round, [&](const std::int64_t* r, const std::int64_t* c, const double* b) {
        A.update(b, 2, std::span<const std::int64_t>(r, 2), std::span<const std::int64_t>(c, 3));
      });
    A.commit();
    reference<double> ref;
    for (int p = 0; p < np; ++p)
      for (int u = 0; u < 6; ++u)
        update(p, u, round, [&](const std::int64_t* r, const std::int64_t* c, const double* b) {
          for (int i = 0; i < 2; ++i)
            if (r[i] >= A.row_begin() && r[i] < A.row_end())
              for (int j = 0; j < 3; ++j) ref[{r[i], c[j]}] += b[i + 2 * j];
        });
    expect_rows(A, ref);
  }
}

// Reproducible sums: values that round, added in whatever order the
// packets arrive; every entry must be the exact sum rounded once (which is
// unique, so the bits are the same for every P, partition and order).
// Rounds 0 and 1 add up (reopen), the later ones start from zero (reset)
// and replay through the slot cache.
template <class MakeElement>
void expect_reproducible_rounds(MakeElement make, int rounds) {
  sparse_matrix_options o;
  o.reproducible = true;
  sparse_matrix<double> A(my_rows(rank_me()), my_cols(rank_me(), rank_n()), o);
  auto val = [](int e, int round, std::size_t k) {
    std::mt19937_64 g(std::uint64_t(e) * 131 + std::uint64_t(round) * 7 + k);
    return std::ldexp(double(g() >> 11), -53) * std::ldexp(1.0, int(g() % 40) - 20) * ((g() & 1) ? 1 : -1);
  };
  auto run = [&](int round) {
    for (int e = rank_me(); e < kElements; e += rank_n()) {
      const element el = make(e, A.rows(), A.cols());
      std::vector<double> b(el.rows.size() * el.cols.size());
      for (std::size_t k = 0; k < b.size(); ++k) b[k] = val(e, round, k);
      A.update(b.data(), std::int64_t(el.rows.size()), el.rows, el.cols);
    }
    A.commit();
  };
  reference<double> ref;
  for (int round = 0; round < rounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    if (round >= 2) {
      A.reset();
      ref.clear();
    }
    run(round);
    // Reference: the exact sum of the value before the round and every
    // contribution of the round, rounded once.
    std::map<std::pair<std::int64_t, std::int64_t>, detail::exact_sum> exact;
    for (auto& [ij, v] : ref) exact[ij].add(v);
    for (int e = 0; e < kElements; ++e) {
      const element el = make(e, A.rows(), A.cols());
      for (std::size_t j = 0; j < el.cols.size(); ++j)
        for (std::size_t i = 0; i < el.rows.size(); ++i)
          if (el.rows[i] >= A.row_begin() && el.rows[i] < A.row_end())
            exact[{el.rows[i], el.cols[j]}].add(val(e, round, j * el.rows.size() + i));
    }
    for (auto& [ij, s] : exact) ref[ij] = s.template round<double>();
    expect_rows(A, ref);
    if (round == 0) A.reopen();
  }
}

TEST(SparseMatrix, ReproducibleIsTheExactSumRoundedOnce) {
  expect_reproducible_rounds([](int e, std::int64_t m, std::int64_t n) { return make_element(e, m, n); }, 2);
}

// Rows of 9 or more distinct columns, the elements' shape: a later round
// adds them in batches, whose sums may be exact for some entries and not
// for others (src/util/add_scattered.hpp, add_scattered_exact).
TEST(SparseMatrix, ReproducibleWideRowsInLaterRounds) {
  auto wide = [](int e, std::int64_t m, std::int64_t n) {
    std::mt19937_64 g(std::uint64_t(e) * 6007 + 5);
    element el;
    const int nr = 1 + int(g() % 3);
    for (int i = 0; i < nr; ++i) el.rows.push_back(std::int64_t(g() % std::uint64_t(m - 4)));
    std::vector<std::int64_t> all(static_cast<std::size_t>(n));
    for (std::int64_t j = 0; j < n; ++j) all[std::size_t(j)] = j;
    std::shuffle(all.begin(), all.end(), g);
    all.resize(std::size_t(std::min<std::int64_t>(n, 9 + std::int64_t(g() % 12))));
    el.cols = all;
    return el;
  };
  expect_reproducible_rounds(wide, 4);
}

TEST(SparseMatrix, BadInputThrowsNamingTheValue) {
  sparse_matrix<double> A(my_rows(rank_me()), my_cols(rank_me(), rank_n()));
  const double b[4] = {1, 2, 3, 4};
  const std::int64_t good[2] = {0, 1}, bad_row[2] = {0, A.rows()}, bad_col[2] = {-1, 0};
  try {
    A.update(b, 2, bad_row, good);
    ADD_FAILURE();
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("row index " + std::to_string(A.rows())), std::string::npos) << e.what();
  }
  EXPECT_THROW(A.update(b, 2, good, bad_col), std::out_of_range);
  try {
    A.update(b, 1, good, good);
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("leading dimension 1"), std::string::npos) << e.what();
  }
  A.commit();  // nothing was applied: an empty pattern
  EXPECT_EQ(A.local_nnz(), 0);
  EXPECT_THROW((void)A.get(A.row_end(), 0), std::out_of_range);
  // One process passing a bad size: every process throws, none waits.
  // (there std::invalid_argument, elsewhere accrete::collective_misuse,
  // both with the bad process's message).
  try {
    sparse_matrix<double> B(rank_me() == rank_n() - 1 ? -1 : 3, 3);
    ADD_FAILURE();
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("local_rows = -1 is negative"), std::string::npos) << e.what();
  }
  sparse_matrix_options o;
  o.merge = merge_op::max;
  EXPECT_THROW(sparse_matrix<std::complex<double>>(3, 3, o), std::invalid_argument);
}

TEST(SparseMatrix, MaxMerge) {
  sparse_matrix_options o;
  o.merge = merge_op::max;
  sparse_matrix<double> A(my_rows(rank_me()), my_cols(rank_me(), rank_n()), o);
  // Reference: max over a round's contributions, starting from 0 (an absent
  // entry, or the zero reset() leaves).
  auto expect_round = [&](int round) {
    reference<double> ref;
    for (int e = 0; e < kElements; ++e) {
      const element el = make_element(e, A.rows(), A.cols());
      const auto b = block_of<double>(el, e, round);
      for (std::size_t j = 0; j < el.cols.size(); ++j)
        for (std::size_t i = 0; i < el.rows.size(); ++i)
          if (el.rows[i] >= A.row_begin() && el.rows[i] < A.row_end()) {
            auto [it, fresh] = ref.try_emplace({el.rows[i], el.cols[j]}, 0.0);
            it->second = std::max(it->second, b[j * el.rows.size() + i]);
            (void)fresh;
          }
    }
    expect_rows(A, ref);
  };
  // Round 0 discovers; the frozen rounds 1 and 2 repeat the same updates
  // (at P = 1 all of them through the slot cache: recorded, then replayed).
  for (int round = 0; round < 3; ++round) {
    if (round > 0) A.reset();
    assemble(A, round);
    A.commit();
    SCOPED_TRACE("round " + std::to_string(round));
    expect_round(round);
  }
}

// Finite-element-like rows: a chain of nodes with 3 unknowns each, element
// e joining nodes e and e + 1 (6 x 6 blocks, rows = columns), elements
// dealt round-robin and ordered differently on each process. Each node's
// 3 rows are fed by the same pieces, which the first layout sums through
// the first row's places (a path random elements rarely take): sums and
// max merges, exact against a serial assembly, in round 0 and the frozen
// rounds after it.
void node_rows(merge_op op) {
  sparse_matrix_options o;
  o.merge = op;
  const int me = rank_me(), np = rank_n();
  const std::int64_t nodes = 40, d = 3;
  // Uneven ownership, cut inside a node on some processes.
  auto rows_of = [&](int p) { return (nodes * d) / np + (p < (nodes * d) % np ? 1 : 0); };
  sparse_matrix<double> A(rows_of(me), rows_of(me), o);
  auto block = [&](std::int64_t e, int round, std::vector<std::int64_t>& idx) {
    idx.clear();
    for (std::int64_t n : {e, e + 1})
      for (std::int64_t c = 0; c < d; ++c) idx.push_back(n * d + c);
    std::vector<double> b(36);
    for (int k = 0; k < 36; ++k) b[std::size_t(k)] = double((e * 37 + k * 11 + round * 5) % 23) - 11.0;
    return b;
  };
  for (int round = 0; round < 3; ++round) {
    if (round > 0) A.reset();
    std::vector<std::int64_t> mine;
    for (std::int64_t e = me; e < nodes - 1; e += np) mine.push_back(e);
    if (me % 2) std::reverse(mine.begin(), mine.end());
    std::vector<std::int64_t> idx;
    for (std::int64_t e : mine) {
      const auto b = block(e, round, idx);
      A.update(b.data(), 6, idx, idx);
    }
    A.commit();
    reference<double> ref;
    for (std::int64_t e = 0; e < nodes - 1; ++e) {
      const auto b = block(e, round, idx);
      for (std::size_t j = 0; j < 6; ++j)
        for (std::size_t i = 0; i < 6; ++i)
          if (idx[i] >= A.row_begin() && idx[i] < A.row_end()) {
            auto [it, fresh] = ref.try_emplace({idx[i], idx[j]}, 0.0);
            const double x = b[j * 6 + i];
            it->second = op == merge_op::max ? std::max(it->second, x) : it->second + x;
            (void)fresh;
          }
    }
    SCOPED_TRACE("round " + std::to_string(round));
    expect_rows(A, ref);
  }
}
TEST(SparseMatrix, RowsOfOneNodeSum) { node_rows(merge_op::sum); }
TEST(SparseMatrix, RowsOfOneNodeMaxMerge) { node_rows(merge_op::max); }

// Every process floods rank 0's rows while rank 0 sleeps (no progress):
// the flooders wait for room instead of buffering without bound, and every
// update still arrives.
TEST(SparseMatrix, FloodingASleepingOwnerStaysWithinBufferCap) {
  sparse_matrix_options o;
  o.buffer_cap = 4 << 10;
  o.coalesce_bytes = 1 << 10;
  sparse_matrix<double> A(my_rows(rank_me()), my_cols(rank_me(), rank_n()), o);
  const std::int64_t owned = my_rows(0);  // rows [0, owned) are rank 0's
  std::vector<std::int64_t> rows(static_cast<std::size_t>(owned)), cols(static_cast<std::size_t>(A.cols()));
  for (std::int64_t i = 0; i < owned; ++i) rows[std::size_t(i)] = i;
  for (std::int64_t j = 0; j < A.cols(); ++j) cols[std::size_t(j)] = j;
  std::vector<double> block(rows.size() * cols.size(), 0.5);
  constexpr int kFloods = 40;  // ~40 x 9 x 30 x 8 bytes per process, far above the cap
  if (rank_me() == 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  else
    for (int k = 0; k < kFloods; ++k) A.update(block.data(), owned, rows, cols);
  A.commit();
  EXPECT_LE(A.stats().peak_buffered, o.buffer_cap);
  if (rank_me() == 0) {
    for (std::int64_t i = 0; i < owned; ++i)
      for (std::int64_t j = 0; j < A.cols(); ++j) ASSERT_EQ(A.get(i, j), 0.5 * kFloods * (rank_n() - 1));
  }
}

// Where options meet: each configuration runs round 0 (pattern discovery),
// a reopened round on top of it (salted elements: new entries when the
// pattern grows), a reset round with the elements in reverse order (the
// slot cache records again), and a replay of it. Exact against a serial
// merge after every commit; a reset leaves the pattern's entries at zero.
struct combination {
  const char* name;
  sparse_matrix_options opt;
  int threads;
};

template <class T>
T merged(merge_op op, T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (op == merge_op::max) return std::max(a, b);
    if (op == merge_op::min) return std::min(a, b);
  }
  return a + b;
}

template <class T>
void combined_rounds(const combination& c) {
  const sparse_matrix_options& o = c.opt;
  sparse_matrix<T> A(my_rows(rank_me()), my_cols(rank_me(), rank_n()), o);
  const std::int64_t m = A.rows(), n = A.cols();
  const std::uint64_t salt = o.growing_pattern ? 99 : 0;
  reference<T> ref;
  // Round `round` of every element (salted or not), into ref as the owner merges it.
  auto add_to_ref = [&](int round, std::uint64_t s) {
    for (int e = 0; e < kElements; ++e) {
      const element el = make_element(e, m, n, s);
      const auto b = block_of<T>(el, e, round);
      for (std::size_t j = 0; j < el.cols.size(); ++j)
        for (std::size_t i = 0; i < el.rows.size(); ++i)
          if (el.rows[i] >= A.row_begin() && el.rows[i] < A.row_end()) {
            auto [it, fresh] = ref.try_emplace({el.rows[i], el.cols[j]}, T{});
            it->second = merged(o.merge, it->second, b[j * el.rows.size() + i]);
            (void)fresh;
          }
    }
  };
  // This process's elements, from `threads` threads, forwards or backwards.
  auto run = [&](int round, std::uint64_t s, bool reversed) {
    const int me = rank_me(), np = rank_n();
    std::vector<int> mine;
    for (int e = me; e < kElements; e += np) mine.push_back(e);
    if (reversed) std::reverse(mine.begin(), mine.end());
    auto work = [&](int t) {
      for (std::size_t k = std::size_t(t); k < mine.size(); k += std::size_t(c.threads)) {
        const element el = make_element(mine[k], m, n, s);
        const auto b = block_of<T>(el, mine[k], round);
        A.update(b.data(), std::int64_t(el.rows.size()), el.rows, el.cols);
      }
    };
    std::vector<std::thread> ts;
    for (int t = 1; t < c.threads; ++t) ts.emplace_back(work, t);
    work(0);
    for (auto& th : ts) th.join();
    A.commit();
  };
  auto zero_ref = [&] {
    for (auto& kv : ref) kv.second = T{};
  };
  SCOPED_TRACE(c.name);
  run(0, 0, false);
  add_to_ref(0, 0);
  EXPECT_EQ(A.pattern_frozen(), !o.growing_pattern);
  expect_rows(A, ref);
  A.reopen();
  run(1, salt, false);
  add_to_ref(1, salt);
  expect_rows(A, ref);
  for (int round = 2; round < 4; ++round) {
    A.reset();
    run(round, 0, true);
    zero_ref();
    add_to_ref(round, 0);
    SCOPED_TRACE("round " + std::to_string(round));
    expect_rows(A, ref);
  }
}

combination make_combination(const char* name, auto&& set, int threads = 1) {
  combination c{name, {}, threads};
  set(c.opt);
  return c;
}

const std::vector<combination>& combinations() {
  static const std::vector<combination> all = {
      make_combination(
          "growing, reproducible, small buffers, 3 threads",
          [](auto& o) {
            o.growing_pattern = true;
            o.reproducible = true;
            o.buffer_cap = 2048;
            o.coalesce_bytes = 256;
          },
          3),
      make_combination("growing, max, alltoall",
                       [](auto& o) {
                         o.growing_pattern = true;
                         o.merge = merge_op::max;
                         o.strategy = update_strategy::alltoall;
                       }),
      make_combination("frozen, reproducible, alltoall, no slot cache",
                       [](auto& o) {
                         o.reproducible = true;
                         o.strategy = update_strategy::alltoall;
                         o.cache_slots = false;
                       }),
      make_combination(
          "frozen, min, small buffers, 2 threads",
          [](auto& o) {
            o.merge = merge_op::min;
            o.buffer_cap = 1024;
            o.coalesce_bytes = 128;
          },
          2),
      make_combination(
          "frozen, reproducible, slot cache, 2 threads", [](auto& o) { o.reproducible = true; }, 2),
      make_combination(
          "growing, no slot cache, 2 threads",
          [](auto& o) {
            o.growing_pattern = true;
            o.cache_slots = false;
          },
          2),
  };
  return all;
}

TEST(SparseMatrix, OptionCombinationsDouble) {
  for (const auto& c : combinations()) combined_rounds<double>(c);
}
TEST(SparseMatrix, OptionCombinationsFloat) {
  for (const auto& c : combinations()) combined_rounds<float>(c);
}
TEST(SparseMatrix, OptionCombinationsComplex) {
  for (const auto& c : combinations())
    if (c.opt.merge == merge_op::sum) combined_rounds<std::complex<double>>(c);
}
