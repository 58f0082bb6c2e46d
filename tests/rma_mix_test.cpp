// One-sided operations where they combine: every process issues a random
// mix of puts, gets and copies (contiguous, strided in 2 and 3 dimensions,
// irregular, third-party copies), RPC writes and atomics, to random targets,
// itself included, all in flight at once, with random completions (futures,
// promises, LPCs, remote completions, source completions after which the
// source buffer is overwritten at once). A phase's plan is drawn from one
// seed by every process alike: the cells written in a phase are disjoint,
// and no cell is both written and read in it, so every result is exact. The
// reads must see the state before the phase, the writes the values the plan
// gives, the remote completions their data, the atomics (integer and
// floating-point additions and minima) every operation.
// Written against <upcxx/upcxx.hpp>, as a UPC++ program would be, so the
// UPC++ completion vocabulary is covered together with accrete's paths:
// node-local stores, MPI RMA and active messages in one phase.
#include <upcxx/upcxx.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "test_random.hpp"

namespace {

using accrete_tests::mix;
using accrete_tests::rng;

// A 3-byte element: no alignment above 1, a size no MPI basic type has.
struct rgb {
  unsigned char c[3];
  friend bool operator==(const rgb&, const rgb&) = default;
};

template <class T>
T value_of(std::uint64_t h);
template <>
std::int64_t value_of<std::int64_t>(std::uint64_t h) {
  return std::int64_t(h >> 1);
}
template <>
rgb value_of<rgb>(std::uint64_t h) {
  return rgb{{static_cast<unsigned char>(h), static_cast<unsigned char>(h >> 8), static_cast<unsigned char>(h >> 16)}};
}

// Each process's array, seen as 4096 cells, as 64 x 64 (2-D shapes) and as
// 16 x 16 x 16 (3-D shapes), row-major.
constexpr std::int64_t cells = 4096;
constexpr int counters = 16;

enum class kind {
  put_value,
  put_run,
  put_strided2,
  put_strided3,
  put_irregular,
  put_rpc,
  copy_local_source,
  copy_third_party,
  get_value,
  get_run,
  get_strided2,
  get_strided3,
  get_irregular,
  copy_to_local,
  atomic_add,
  count_
};
constexpr int nkinds = int(kind::count_);
bool writes(kind k) { return k <= kind::copy_third_party; }

struct op {
  kind k;
  int target = 0;  // the rank whose array is written or read
  // The target's cells in element order (the order the source elements
  // map onto), and for strided shapes the box: extents and origin.
  std::vector<std::int64_t> tcells;
  std::array<std::int64_t, 3> ext{}, org{};
  // Irregular ops: the target's runs, and the lengths the local side is cut into.
  std::vector<std::pair<std::int64_t, std::int64_t>> truns;
  std::vector<std::int64_t> lcuts;
  int source = 0;                    // copy_third_party: the rank read
  std::vector<std::int64_t> scells;  // copy_third_party: its cells, one run
  int counter = 0;
  std::int64_t delta = 0;
  int completion = 0;  // 0 future, 1 promise, 2 lpc
  int source_cx = 0;   // puts: 0 none, 1 as_buffered, 2 as_blocking, 3 as_future
  bool remote_cx = false;
};

struct plan {
  std::vector<std::vector<op>> ops;  // per issuing rank
  std::vector<int> remote_expected;  // per rank: remote completions that target it
};

// Draws a phase's plan. written/read: per rank, per cell.
class planner {
 public:
  planner(int n, std::uint64_t seed) : n_(n), g_(seed), written_(n, std::vector<char>(cells, 0)), read_(written_) {}

  plan draw(int ops_per_rank) {
    plan p;
    p.ops.resize(std::size_t(n_));
    p.remote_expected.assign(std::size_t(n_), 0);
    for (int i = 0; i < ops_per_rank; ++i)
      for (int w = 0; w < n_; ++w) {
        for (int tries = 0; tries < 8; ++tries) {
          op o;
          if (make(o)) {
            if (o.remote_cx) ++p.remote_expected[std::size_t(o.target)];
            p.ops[std::size_t(w)].push_back(std::move(o));
            break;
          }
        }
      }
    return p;
  }

 private:
  std::int64_t pick(std::int64_t lo, std::int64_t hi) { return accrete_tests::pick(g_, lo, hi); }

  bool free_for(int r, const std::vector<std::int64_t>& cs, bool write) const {
    for (auto c : cs)
      if (written_[r][c] || (write && read_[r][c])) return false;
    return true;
  }
  void claim(int r, const std::vector<std::int64_t>& cs, bool write) {
    for (auto c : cs) (write ? written_ : read_)[r][c] = 1;
  }

  // A random box of the array seen with `dims` dimensions of side `side`,
  // its cells listed with the first extent fastest.
  void box(op& o, int dims, std::int64_t side) {
    for (int d = 0; d < 3; ++d) {
      o.ext[d] = d < dims ? pick(1, d == 0 ? 9 : 5) : 1;
      o.org[d] = d < dims ? pick(0, side - o.ext[d]) : 0;
    }
    for (std::int64_t z = 0; z < o.ext[2]; ++z)
      for (std::int64_t y = 0; y < o.ext[1]; ++y)
        for (std::int64_t x = 0; x < o.ext[0]; ++x)
          o.tcells.push_back(o.org[0] + x + side * (o.org[1] + y) + side * side * (o.org[2] + z));
  }

  bool make(op& o) {
    o.k = kind(pick(0, nkinds - 1));
    o.target = int(pick(0, n_ - 1));
    o.completion = int(pick(0, 2));
    const bool w = writes(o.k);
    switch (o.k) {
      case kind::put_value:
      case kind::get_value:
        o.tcells = {pick(0, cells - 1)};
        break;
      case kind::put_run:
      case kind::get_run:
      case kind::put_rpc:
      case kind::copy_local_source:
      case kind::copy_to_local:
      case kind::copy_third_party: {
        const std::int64_t len = pick(1, 200), s = pick(0, cells - len);
        for (std::int64_t i = 0; i < len; ++i) o.tcells.push_back(s + i);
        break;
      }
      case kind::put_strided2:
      case kind::get_strided2:
        box(o, 2, 64);
        break;
      case kind::put_strided3:
      case kind::get_strided3:
        box(o, 3, 16);
        break;
      case kind::put_irregular:
      case kind::get_irregular: {
        // Up to 6 runs at increasing places, then listed in a random order.
        std::int64_t at = pick(0, 400);
        const int nruns = int(pick(1, 6));
        for (int i = 0; i < nruns && at < cells; ++i) {
          const std::int64_t len = std::min(pick(1, 40), cells - at);
          o.truns.push_back({at, len});
          at += len + pick(0, 300);
        }
        std::shuffle(o.truns.begin(), o.truns.end(), g_);
        std::int64_t total = 0;
        for (auto [s, len] : o.truns) {
          total += len;
          for (std::int64_t i = 0; i < len; ++i) o.tcells.push_back(s + i);
        }
        for (std::int64_t left = total; left > 0;) {
          const std::int64_t c = std::min(left, pick(1, 50));
          o.lcuts.push_back(c);
          left -= c;
        }
        break;
      }
      case kind::atomic_add:
        o.counter = int(pick(0, counters - 1));
        o.delta = pick(-1000, 1000);
        return true;
      case kind::count_:
        return false;
    }
    if (!free_for(o.target, o.tcells, w)) return false;
    if (o.k == kind::copy_third_party) {
      o.source = int(pick(0, n_ - 1));
      const std::int64_t len = std::int64_t(o.tcells.size()), s = pick(0, cells - len);
      for (std::int64_t i = 0; i < len; ++i) o.scells.push_back(s + i);
      // Its source is read in this phase: not written by anyone, nor the
      // same cells as its own destination.
      if (!free_for(o.source, o.scells, false)) return false;
      if (o.source == o.target)
        for (auto c : o.scells)
          if (std::find(o.tcells.begin(), o.tcells.end(), c) != o.tcells.end()) return false;
      claim(o.source, o.scells, false);
    }
    claim(o.target, o.tcells, w);
    if (w && o.k != kind::put_rpc && o.k != kind::copy_third_party) {
      // copy takes no source completion; the others take one with a future
      // operation completion (put()).
      o.source_cx = o.k == kind::copy_local_source || o.completion != 0 ? 0 : int(pick(0, 3));
      o.remote_cx = pick(0, 2) == 0;
    }
    return true;
  }

  int n_;
  rng g_;
  std::vector<std::vector<char>> written_, read_;
};

// Remote completions that arrived here, and those whose data was wrong,
// counted over every phase: one of the next phase's can run here while
// this process is still in the barrier that ends a phase.
int remote_arrived = 0, remote_bad = 0;

// Progress until done() holds; a count that never arrives fails the test
// with what was missing instead of hanging it.
template <class Done>
bool progress_until(Done&& done, const std::string& what) {
  const auto start = std::chrono::steady_clock::now();
  while (!done()) {
    upcxx::progress();
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(60)) {
      ADD_FAILURE() << "rank " << upcxx::rank_me() << ": still waiting after 60 s for " << what;
      return false;
    }
  }
  return true;
}

// Counters [0, counters / 2) take additions, the others minima: within a
// phase each is order-free.
bool adds(int counter) { return counter < counters / 2; }

template <class T, class A>
struct mix_state {
  upcxx::global_ptr<T> mine;
  std::vector<upcxx::global_ptr<T>> arrays;
  std::vector<upcxx::global_ptr<A>> ctrs;
  std::vector<std::vector<T>> ref;       // every rank's array before the phase
  std::vector<std::vector<A>> ref_ctrs;  // and its counters
};

// The array of this process, for remote completions that check their data.
template <class T>
T* local_array = nullptr;

template <class T>
std::uint64_t digest(const T* p, std::int64_t n) {
  std::uint64_t h = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint64_t v = 0;
    std::memcpy(&v, p + i, sizeof(T));
    h = mix(h ^ v);
  }
  return h;
}

template <class T, class A>
struct issuer {
  issuer(mix_state<T, A>& st, upcxx::atomic_domain<A>& d, int ph) : s(st), ad(d), phase(ph) {}
  mix_state<T, A>& s;
  upcxx::atomic_domain<A>& ad;
  int phase;
  std::vector<upcxx::future<>> futures;
  upcxx::promise<> prom;
  int lpcs_due = 0, lpcs_done = 0;
  // Reads: where the data landed, and what it must be.
  std::vector<std::pair<std::vector<T>*, std::vector<T>>> checks;
  std::vector<std::unique_ptr<std::vector<T>>> buffers;
  std::vector<std::string> failures;

  std::vector<T>& buffer(std::size_t n) {
    buffers.push_back(std::make_unique<std::vector<T>>(n));
    return *buffers.back();
  }
  void scribble(std::vector<T>& b) {
    for (auto& x : b) x = value_of<T>(mix(0xdeadull + std::uint64_t(phase)));
  }

  // The operation completion this op asked for.
  template <class F>
  void complete(const op& o, F&& issue) {
    switch (o.completion) {
      case 0:
        futures.push_back(issue(upcxx::operation_cx::as_future()));
        break;
      case 1:
        issue(upcxx::operation_cx::as_promise(prom));
        break;
      default:
        ++lpcs_due;
        issue(upcxx::operation_cx::as_lpc(upcxx::current_persona(), [this] { ++lpcs_done; }));
        break;
    }
  }

  // A put's completions: the operation's, then a source completion after
  // which the source is overwritten at once, and the remote one.
  template <bool source_cx_ok = true, class Put>
  void put(const op& o, std::vector<T>& src, Put&& put_with) {
    // Every remote completion is counted at its target; those of
    // contiguous writes also check there that their data has landed (the
    // others check an empty run).
    const bool contiguous = o.k == kind::put_value || o.k == kind::put_run || o.k == kind::copy_local_source;
    const auto rcx = upcxx::remote_cx::as_rpc(
        [](std::int64_t first, std::int64_t n, std::uint64_t want) {
          ++remote_arrived;
          if (digest(local_array<T> + first, n) != want) ++remote_bad;
        },
        o.tcells.front(), contiguous ? std::int64_t(o.tcells.size()) : std::int64_t(0),
        contiguous ? digest(src.data(), std::int64_t(src.size())) : 0);
    auto with_remote = [&](auto cx) { return o.remote_cx ? put_with(cx | rcx) : put_with(cx); };
    if constexpr (source_cx_ok) {
      // Source completions come with a future operation completion only
      // (the planner draws them so): each combination is a template
      // instantiation of the whole put, and these keep the test quick to
      // compile.
      if (o.source_cx != 0) {
        const auto op_future = upcxx::operation_cx::as_future();
        switch (o.source_cx) {
          case 1:
            futures.push_back(with_remote(op_future | upcxx::source_cx::as_buffered()));
            break;
          case 2:
            futures.push_back(with_remote(op_future | upcxx::source_cx::as_blocking()));
            break;
          default: {
            auto [done, src_done] = with_remote(op_future | upcxx::source_cx::as_future());
            futures.push_back(done);
            src_done.wait();
            break;
          }
        }
        scribble(src);
        return;
      }
    }
    complete(o, with_remote);
  }

  void issue(const op& o, rng& g) {
    const std::size_t n = o.tcells.size();
    const auto& tref = s.ref[std::size_t(o.target)];
    upcxx::global_ptr<T> base = s.arrays[std::size_t(o.target)];
    // A put's values; a get's expected values (the state before the phase).
    std::vector<T> vals(n);
    for (std::size_t i = 0; i < n; ++i)
      vals[i] = writes(o.k) ? value_of<T>(mix(std::uint64_t(phase) << 40 ^ std::uint64_t(o.target) << 20 ^
                                              std::uint64_t(o.tcells[i])))
                            : tref[std::size_t(o.tcells[i])];
    constexpr std::ptrdiff_t e = sizeof(T);
    switch (o.k) {
      case kind::put_value: {
        std::vector<T>& src = buffer(1);
        src[0] = vals[0];
        put(o, src, [&](auto cx) { return upcxx::rput(src[0], base + o.tcells[0], cx); });
        break;
      }
      case kind::put_run: {
        std::vector<T>& src = buffer(n);
        src = vals;
        put(o, src, [&](auto cx) { return upcxx::rput(src.data(), base + o.tcells[0], n, cx); });
        break;
      }
      case kind::copy_local_source: {
        // From this process's own segment (a scratch allocation).
        upcxx::global_ptr<T> tmp = upcxx::new_array<T>(n);
        std::copy(vals.begin(), vals.end(), tmp.local());
        std::vector<T>& src = buffer(n);  // for the remote completion's digest
        src = vals;
        put<false>(o, src, [&](auto cx) { return upcxx::copy(tmp, base + o.tcells[0], n, cx); });
        scratch.push_back(tmp);
        break;
      }
      case kind::put_strided2:
      case kind::put_strided3:
      case kind::get_strided2:
      case kind::get_strided3: {
        const bool three = o.k == kind::put_strided3 || o.k == kind::get_strided3;
        const std::int64_t side = three ? 16 : 64;
        // The local box in the opposite order (last extent fastest), with
        // padding between its lines.
        const std::int64_t ex = o.ext[0], ey = o.ext[1], ez = o.ext[2];
        const std::int64_t lz = 1, ly = ez + 1, lx = ly * ey + 2;
        std::vector<T>& loc = buffer(std::size_t(lx * ex));
        auto at = [&](std::int64_t x, std::int64_t y, std::int64_t z) -> T& {
          return loc[std::size_t(x * lx + y * ly + z * lz)];
        };
        upcxx::global_ptr<T> origin = base + (o.org[0] + side * o.org[1] + side * side * o.org[2]);
        std::size_t i = 0;
        if (three) {
          const std::array<std::ptrdiff_t, 3> ls{lx * e, ly * e, lz * e}, rs{e, side * e, side * side * e};
          const std::array<std::size_t, 3> ext{std::size_t(ex), std::size_t(ey), std::size_t(ez)};
          if (o.k == kind::put_strided3) {
            for (std::int64_t z = 0; z < ez; ++z)
              for (std::int64_t y = 0; y < ey; ++y)
                for (std::int64_t x = 0; x < ex; ++x) at(x, y, z) = vals[i++];
            put(o, loc, [&](auto cx) { return upcxx::rput_strided<3>(loc.data(), ls, origin, rs, ext, cx); });
          } else {
            complete(o, [&](auto cx) { return upcxx::rget_strided<3>(origin, rs, loc.data(), ls, ext, cx); });
            std::vector<T> want(loc.size());
            for (std::int64_t z = 0; z < ez; ++z)
              for (std::int64_t y = 0; y < ey; ++y)
                for (std::int64_t x = 0; x < ex; ++x) want[std::size_t(x * lx + y * ly + z * lz)] = vals[i++];
            checks.push_back({&loc, std::move(want)});  // the padding untouched
          }
        } else {
          const std::array<std::ptrdiff_t, 2> ls{lx * e, ly * e}, rs{e, side * e};
          const std::array<std::size_t, 2> ext{std::size_t(ex), std::size_t(ey)};
          if (o.k == kind::put_strided2) {
            for (std::int64_t y = 0; y < ey; ++y)
              for (std::int64_t x = 0; x < ex; ++x) at(x, y, 0) = vals[i++];
            put(o, loc, [&](auto cx) { return upcxx::rput_strided<2>(loc.data(), ls, origin, rs, ext, cx); });
          } else {
            complete(o, [&](auto cx) { return upcxx::rget_strided<2>(origin, rs, loc.data(), ls, ext, cx); });
            std::vector<T> want(loc.size());
            for (std::int64_t y = 0; y < ey; ++y)
              for (std::int64_t x = 0; x < ex; ++x) want[std::size_t(x * lx + y * ly)] = vals[i++];
            checks.push_back({&loc, std::move(want)});
          }
        }
        break;
      }
      case kind::put_irregular:
      case kind::get_irregular: {
        // The local side: the element sequence cut at lcuts, with a gap of
        // one element after each piece.
        std::vector<T>& loc = buffer(n + o.lcuts.size());
        std::vector<std::pair<T*, std::size_t>> lruns;
        std::vector<std::pair<upcxx::global_ptr<T>, std::size_t>> rruns;
        std::vector<std::size_t> where;  // element i's place in loc
        std::size_t at = 0;
        for (auto c : o.lcuts) {
          lruns.push_back({loc.data() + at, std::size_t(c)});
          for (std::int64_t j = 0; j < c; ++j) where.push_back(at + std::size_t(j));
          at += std::size_t(c) + 1;
        }
        for (auto [st, len] : o.truns) rruns.push_back({base + st, std::size_t(len)});
        if (o.k == kind::put_irregular) {
          for (std::size_t i = 0; i < n; ++i) loc[where[i]] = vals[i];
          std::vector<std::pair<const T*, std::size_t>> cruns(lruns.begin(), lruns.end());
          put(o, loc, [&](auto cx) {
            return upcxx::rput_irregular(cruns.begin(), cruns.end(), rruns.begin(), rruns.end(), cx);
          });
        } else {
          complete(o, [&](auto cx) {
            return upcxx::rget_irregular(rruns.begin(), rruns.end(), lruns.begin(), lruns.end(), cx);
          });
          std::vector<T> want(loc.size());
          for (std::size_t i = 0; i < n; ++i) want[where[i]] = vals[i];
          // The gaps must keep what they held: value-initialised elements.
          checks.push_back({&loc, std::move(want)});
        }
        break;
      }
      case kind::put_rpc: {
        // Written at the target by an RPC's handler; its future completes it.
        auto f = upcxx::rpc(
            o.target,
            [](std::int64_t first, upcxx::view<T> v) { std::copy(v.begin(), v.end(), local_array<T> + first); },
            o.tcells[0], upcxx::make_view(vals.begin(), vals.end()));
        futures.push_back(f);
        break;
      }
      case kind::copy_third_party: {
        // Both ends may be elsewhere: the values are the source's before the phase.
        upcxx::global_ptr<T> from = s.arrays[std::size_t(o.source)] + o.scells[0];
        complete(o, [&](auto cx) { return upcxx::copy(from, base + o.tcells[0], n, cx); });
        break;
      }
      case kind::get_value: {
        upcxx::future<T> f = upcxx::rget(base + o.tcells[0]);
        std::vector<T>& got = buffer(1);
        futures.push_back(f.then([&got](T v) { got[0] = v; }));
        checks.push_back({&got, vals});
        break;
      }
      case kind::get_run: {
        std::vector<T>& got = buffer(n);
        complete(o, [&](auto cx) { return upcxx::rget(base + o.tcells[0], got.data(), n, cx); });
        checks.push_back({&got, vals});
        break;
      }
      case kind::copy_to_local: {
        std::vector<T>& got = buffer(n);
        complete(o, [&](auto cx) { return upcxx::copy(base + o.tcells[0], got.data(), n, cx); });
        checks.push_back({&got, vals});
        break;
      }
      case kind::atomic_add: {
        upcxx::global_ptr<A> c = s.ctrs[std::size_t(o.target)] + o.counter;
        const A v = A(o.delta);
        if (adds(o.counter))
          futures.push_back(o.completion == 0 ? ad.fetch_add(c, v, std::memory_order_relaxed).then([](A) {})
                                              : ad.add(c, v, std::memory_order_relaxed));
        else
          futures.push_back(o.completion == 0 ? ad.fetch_min(c, v, std::memory_order_relaxed).then([](A) {})
                                              : ad.min(c, v, std::memory_order_relaxed));
        break;
      }
      case kind::count_:
        break;
    }
    if (g() % 4 == 0) upcxx::progress();
  }

  std::vector<upcxx::global_ptr<T>> scratch;
};

template <class T, class A>
void run_phases(std::uint64_t seed, int phases, int ops_per_rank) {
  const int me = upcxx::rank_me(), n = upcxx::rank_n();
  mix_state<T, A> s;
  s.mine = upcxx::new_array<T>(std::size_t(cells));
  local_array<T> = s.mine.local();
  upcxx::global_ptr<A> my_ctrs = upcxx::new_array<A>(counters);
  for (std::int64_t i = 0; i < cells; ++i)
    s.mine.local()[i] = value_of<T>(mix(std::uint64_t(me) << 20 ^ std::uint64_t(i)));
  for (int i = 0; i < counters; ++i) my_ctrs.local()[i] = A(0);
  // Reset before the barrier below: past it, the others may issue this
  // run's operations, and every remote completion of a run before this one
  // has arrived (that run waited for them).
  remote_arrived = 0;
  remote_bad = 0;
  {
    upcxx::dist_object<std::pair<upcxx::global_ptr<T>, upcxx::global_ptr<A>>> d({s.mine, my_ctrs});
    for (int r = 0; r < n; ++r) {
      auto [a, c] = d.fetch(r).wait();
      s.arrays.push_back(a);
      s.ctrs.push_back(c);
      std::vector<T> init(static_cast<std::size_t>(cells));
      for (std::int64_t i = 0; i < cells; ++i)
        init[std::size_t(i)] = value_of<T>(mix(std::uint64_t(r) << 20 ^ std::uint64_t(i)));
      s.ref.push_back(std::move(init));
      s.ref_ctrs.emplace_back(counters, A(0));
    }
    upcxx::barrier();
  }
  upcxx::atomic_domain<A> ad({upcxx::atomic_op::fetch_add, upcxx::atomic_op::add, upcxx::atomic_op::fetch_min,
                              upcxx::atomic_op::min, upcxx::atomic_op::load});
  rng local_g(seed ^ (std::uint64_t(me) * 7919u));
  int remote_expected = 0;
  std::array<long, nkinds> issued{};
  for (int ph = 0; ph < phases; ++ph) {
    plan p = planner(n, mix(seed + std::uint64_t(ph))).draw(ops_per_rank);
    remote_expected += p.remote_expected[std::size_t(me)];
    issuer<T, A> is(s, ad, ph);
    for (const op& o : p.ops[std::size_t(me)]) {
      is.issue(o, local_g);
      ++issued[int(o.k)];
    }
    is.prom.finalize().wait();
    for (auto& f : is.futures) f.wait();
    progress_until([&] { return is.lpcs_done >= is.lpcs_due; }, "LPC completions in phase " + std::to_string(ph) +
                                                                    ": " + std::to_string(is.lpcs_done) + " of " +
                                                                    std::to_string(is.lpcs_due));
    for (auto& [got, want] : is.checks)
      if (*got != want) is.failures.push_back("a read in phase " + std::to_string(ph) + " saw other data");
    // The remote completions aimed here: each ran after its data was in place.
    progress_until([&] { return remote_arrived >= remote_expected; },
                   "remote completions by phase " + std::to_string(ph) + ": " + std::to_string(remote_arrived) +
                       " of " + std::to_string(remote_expected));
    upcxx::barrier();
    EXPECT_EQ(remote_arrived, remote_expected) << "phase " << ph;
    EXPECT_EQ(remote_bad, 0) << "phase " << ph << ": remote completions ran before their data was in place";
    for (const auto& f : is.failures) ADD_FAILURE() << f;
    for (auto g : is.scratch) upcxx::delete_array(g);
    // The state after the phase: every write of every process's plan.
    for (int w = 0; w < n; ++w)
      for (const op& o : p.ops[std::size_t(w)]) {
        if (o.k == kind::atomic_add) {
          A& c = s.ref_ctrs[std::size_t(o.target)][std::size_t(o.counter)];
          c = adds(o.counter) ? c + A(o.delta) : std::min(c, A(o.delta));
          continue;
        }
        if (!writes(o.k)) continue;
        auto& tref = s.ref[std::size_t(o.target)];
        if (o.k == kind::copy_third_party) {
          // Reads the source as it was before the phase: no write touches it.
          for (std::size_t i = 0; i < o.tcells.size(); ++i)
            tref[std::size_t(o.tcells[i])] = s.ref[std::size_t(o.source)][std::size_t(o.scells[i])];
          continue;
        }
        for (std::size_t i = 0; i < o.tcells.size(); ++i)
          tref[std::size_t(o.tcells[i])] =
              value_of<T>(mix(std::uint64_t(ph) << 40 ^ std::uint64_t(o.target) << 20 ^ std::uint64_t(o.tcells[i])));
      }
    // This process's array and counters, against the reference.
    std::int64_t wrong = 0, first = -1;
    for (std::int64_t i = 0; i < cells; ++i)
      if (!(s.mine.local()[i] == s.ref[std::size_t(me)][std::size_t(i)])) {
        if (first < 0) first = i;
        ++wrong;
      }
    EXPECT_EQ(wrong, 0) << "phase " << ph << ": " << wrong << " cells differ on rank " << me << ", first " << first;
    // The counters, through the domain from another process.
    const int other = (me + 1) % n;
    for (int c = 0; c < counters; ++c)
      EXPECT_EQ(ad.load(s.ctrs[std::size_t(other)] + c, std::memory_order_relaxed).wait(),
                s.ref_ctrs[std::size_t(other)][std::size_t(c)])
          << "phase " << ph << ", counter " << c << " of rank " << other;
    // A failure in one phase would repeat in every later one; stop together.
    if (upcxx::reduce_all(int(::testing::Test::HasFailure()), upcxx::op_fast_max).wait()) break;
  }
  // The test must have exercised what it names: every kind of operation,
  // many times over.
  for (int k = 0; k < nkinds; ++k) {
    const long all = upcxx::reduce_all(issued[std::size_t(k)], upcxx::op_fast_add).wait();
    EXPECT_GE(all, 10) << "operation kind " << k;
  }
  ad.destroy();
  upcxx::barrier();
  upcxx::delete_array(my_ctrs);
  upcxx::delete_array(s.mine);
}

}  // namespace

TEST(RmaMix, EightByteCellsAndIntegerAtomics) { run_phases<std::int64_t, std::int64_t>(0x5eed0001, 60, 40); }

TEST(RmaMix, ThreeByteCellsAndDoubleAtomics) { run_phases<rgb, double>(0x5eed0002, 30, 40); }
