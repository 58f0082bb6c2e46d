#pragma once
// The three implementations the dist_array benchmarks race, behind one
// small interface so each workload (hf_proxy, matmul, array_rma) is written
// once and runs the same algorithm on all three:
//   accrete  dist_array<double> + counter;
//   mpi      plain MPI-3 RMA: one window over each process's part, locked
//            for the whole run (lock_all), MPI_Get / MPI_Accumulate with
//            derived datatypes (cached per shape, as a careful MPI user
//            would), MPI_Fetch_and_op on rank 0 for the counter;
//   ga       Global Arrays 5.8 (NGA_Put/Get/Acc, NGA_Read_inc), when built
//            with it (ACCRETE_BENCH_GA).
// Every implementation moves column-major buffers of patches of a square
// n x n array of doubles. GA's C interface is row-major, so its array is
// created with the two dimensions swapped: a column-major patch is then a
// row-major GA patch and GA moves the caller's buffer as is.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <mpi.h>

#include "accrete/accrete.hpp"
#include "accrete/array/counter.hpp"
#include "accrete/array/dist_array.hpp"

#ifdef ACCRETE_BENCH_GA
#include <ga.h>
#include <macdecls.h>
#endif

namespace bench {

/// The square distributions the workloads name (grid: square_grid_rows).
enum class dist_kind { block, block_cyclic, element_cyclic };
inline const char* name_of(dist_kind k) {
  return k == dist_kind::block ? "block" : k == dist_kind::block_cyclic ? "block_cyclic" : "element_cyclic";
}
inline accrete::distribution make_distribution(dist_kind k, std::int64_t n, std::int64_t nb) {
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  const int pr = accrete::square_grid_rows(p), pc = p / pr;
  switch (k) {
    case dist_kind::block:
      return accrete::distribution::block(n, n, pr, pc);
    case dist_kind::block_cyclic:
      return accrete::distribution::block_cyclic(accrete::block_cyclic(n, n, nb, nb, pr, pc));
    default:
      return accrete::distribution::element_cyclic(n, n, pr, pc);
  }
}

// ---- accrete ------------------------------------------------------------------------------
class accrete_array {
 public:
  static constexpr const char* name = "accrete";
  accrete_array(dist_kind k, std::int64_t n, std::int64_t nb) : a_(make_distribution(k, n, nb)) {}
  void get(const accrete::patch& p, double* buf, std::int64_t ld) { a_.get_blocking(p, buf, ld); }
  void put(const accrete::patch& p, const double* buf, std::int64_t ld) { a_.put_blocking(p, buf, ld); }
  void acc(const accrete::patch& p, const double* buf, std::int64_t ld) { a_.acc_blocking(p, buf, ld); }
  /// Remote completion of this process's puts and accs.
  void flush() { a_.flush(); }
  void sync() { a_.sync(); }
  void zero() { a_.zero(); }
  std::int64_t next_task() { return counter_.fetch_add(1); }
  void reset_counter() { counter_.reset(0); }

 private:
  accrete::dist_array<double> a_;
  accrete::counter counter_;
};

// ---- plain MPI RMA -----------------------------------------------------------------------
class mpi_array {
 public:
  static constexpr const char* name = "mpi";
  mpi_array(dist_kind k, std::int64_t n, std::int64_t nb) : d_(make_distribution(k, n, nb)) {
    MPI_Comm_rank(MPI_COMM_WORLD, &me_);
    MPI_Comm_size(MPI_COMM_WORLD, &np_);
    lld_.resize(std::size_t(np_));
    for (int r = 0; r < np_; ++r) lld_[std::size_t(r)] = std::max<std::int64_t>(1, d_.local_rows(r));
    const MPI_Aint bytes = MPI_Aint(lld_[std::size_t(me_)] * d_.local_cols(me_)) * MPI_Aint(sizeof(double));
    // The elements start on a cache line, as accrete's storage does: Open
    // MPI 4.1 places MPI_Win_allocate's memory 8 bytes past a page, where a
    // run of 8 doubles at an aligned index spans two lines. One line more,
    // and every process's offset (in elements) known to the others.
    double* raw = nullptr;
    MPI_Win_allocate(bytes + 64, sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &raw, &win_);
    const int pad = int((64 - reinterpret_cast<std::uintptr_t>(raw) % 64) % 64 / sizeof(double));
    pad_.resize(std::size_t(np_));
    MPI_Allgather(&pad, 1, MPI_INT, pad_.data(), 1, MPI_INT, MPI_COMM_WORLD);
    base_ = raw + pad;
    MPI_Win_allocate(me_ == 0 ? sizeof(std::int64_t) : 0, sizeof(std::int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &ctr_,
                     &cwin_);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win_);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, cwin_);
    zero();
    reset_counter();
  }
  ~mpi_array() {
    MPI_Win_unlock_all(win_);
    MPI_Win_unlock_all(cwin_);
    MPI_Win_free(&win_);
    MPI_Win_free(&cwin_);
    for (auto& [k, t] : types_) MPI_Type_free(&t);
  }
  mpi_array(const mpi_array&) = delete;
  mpi_array& operator=(const mpi_array&) = delete;

  void get(const accrete::patch& p, double* buf, std::int64_t ld) {
    for_each_owner(p, ld, [&](int r, MPI_Datatype o, MPI_Aint disp, MPI_Datatype t) {
      MPI_Get(buf, 1, o, r, disp, 1, t, win_);
    });
    for (int r : touched_) MPI_Win_flush_local(r, win_);
  }
  void put(const accrete::patch& p, const double* buf, std::int64_t ld) {
    for_each_owner(p, ld, [&](int r, MPI_Datatype o, MPI_Aint disp, MPI_Datatype t) {
      MPI_Put(buf, 1, o, r, disp, 1, t, win_);
    });
    for (int r : touched_) MPI_Win_flush_local(r, win_);
  }
  void acc(const accrete::patch& p, const double* buf, std::int64_t ld) {
    for_each_owner(p, ld, [&](int r, MPI_Datatype o, MPI_Aint disp, MPI_Datatype t) {
      MPI_Accumulate(buf, 1, o, r, disp, 1, t, MPI_SUM, win_);
    });
    for (int r : touched_) MPI_Win_flush_local(r, win_);
  }
  // Per-target flushes: MPICH 4.0's MPI_Win_flush_all misbehaves (README,
  // known limitations), and the loop costs the same elsewhere.
  void flush() {
    for (int r = 0; r < np_; ++r) MPI_Win_flush(r, win_);
  }
  void sync() {
    flush();
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(win_);
  }
  void zero() {
    MPI_Barrier(MPI_COMM_WORLD);
    std::fill(base_, base_ + lld_[std::size_t(me_)] * d_.local_cols(me_), 0.0);
    MPI_Win_sync(win_);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  std::int64_t next_task() {
    const std::int64_t one = 1;
    std::int64_t old = 0;
    MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0, 0, MPI_SUM, cwin_);
    MPI_Win_flush(0, cwin_);
    return old;
  }
  void reset_counter() {
    MPI_Barrier(MPI_COMM_WORLD);
    if (me_ == 0) *ctr_ = 0;
    MPI_Win_sync(cwin_);
    MPI_Barrier(MPI_COMM_WORLD);
  }

 private:
  // The patch's piece on each owner is one local rectangle; the origin
  // elements are the positions of the owner's runs in the patch. f(owner,
  // origin type, target displacement, target type).
  template <class F>
  void for_each_owner(const accrete::patch& p, std::int64_t ld, F&& f) {
    touched_.clear();
    if (p.empty()) return;
    rows_.assign(std::size_t(d_.grid_rows()), {});
    cols_.assign(std::size_t(d_.grid_cols()), {});
    auto runs_of = [](const accrete::axis& a, std::int64_t lo, std::int64_t hi, auto& per_part) {
      a.for_each_run(lo, hi, [&](int k, std::int64_t g, std::int64_t l, std::int64_t len) {
        auto& s = per_part[std::size_t(k)];
        if (s.runs.empty()) s.local = l;
        s.runs.push_back(int(g - lo));
        s.runs.push_back(int(len));
        s.count += len;
      });
    };
    runs_of(d_.row_axis(), p.row_lo, p.row_hi, rows_);
    runs_of(d_.col_axis(), p.col_lo, p.col_hi, cols_);
    for (int pr = 0; pr < d_.grid_rows(); ++pr)
      for (int pc = 0; pc < d_.grid_cols(); ++pc) {
        const auto &rs = rows_[std::size_t(pr)], &cs = cols_[std::size_t(pc)];
        if (!rs.count || !cs.count) continue;
        const int r = pr * d_.grid_cols() + pc;
        const std::int64_t lld = lld_[std::size_t(r)];
        f(r, origin_type(rs.runs, cs.runs, ld), MPI_Aint(pad_[std::size_t(r)] + cs.local * lld + rs.local),
          vector_type(cs.count, rs.count, lld));
        touched_.push_back(r);
      }
  }
  MPI_Datatype cached(std::vector<std::int64_t> key, MPI_Datatype (*make)(const std::vector<std::int64_t>&)) {
    auto it = types_.find(key);
    if (it != types_.end()) return it->second;
    MPI_Datatype t = make(key);
    MPI_Type_commit(&t);
    return types_.emplace(std::move(key), t).first->second;
  }
  MPI_Datatype vector_type(std::int64_t count, std::int64_t len, std::int64_t stride) {
    return cached({0, count, len, stride}, [](const std::vector<std::int64_t>& k) {
      MPI_Datatype t;
      MPI_Type_vector(int(k[1]), int(k[2]), int(k[3]), MPI_DOUBLE, &t);
      return t;
    });
  }
  // Rows runs within a column, stretched to ld, then the column runs.
  MPI_Datatype origin_type(const std::vector<int>& rr, const std::vector<int>& cr, std::int64_t ld) {
    std::vector<std::int64_t> key{1, ld, std::int64_t(rr.size())};
    key.insert(key.end(), rr.begin(), rr.end());
    key.insert(key.end(), cr.begin(), cr.end());
    return cached(std::move(key), [](const std::vector<std::int64_t>& k) {
      const std::size_t nr = std::size_t(k[2]) / 2, nc = (k.size() - 3 - 2 * nr) / 2;
      std::vector<int> rl(nr), rd(nr), cl(nc), cd(nc);
      for (std::size_t i = 0; i < nr; ++i) rd[i] = int(k[3 + 2 * i]), rl[i] = int(k[4 + 2 * i]);
      for (std::size_t i = 0; i < nc; ++i) cd[i] = int(k[3 + 2 * nr + 2 * i]), cl[i] = int(k[4 + 2 * nr + 2 * i]);
      MPI_Datatype col, stretched, t;
      MPI_Type_indexed(int(nr), rl.data(), rd.data(), MPI_DOUBLE, &col);
      MPI_Type_create_resized(col, 0, MPI_Aint(k[1]) * MPI_Aint(sizeof(double)), &stretched);
      MPI_Type_indexed(int(nc), cl.data(), cd.data(), stretched, &t);
      MPI_Type_free(&col);
      MPI_Type_free(&stretched);
      return t;
    });
  }

  struct side {
    std::int64_t local = 0, count = 0;
    std::vector<int> runs;  // (position in patch, length) pairs
  };
  accrete::distribution d_;
  int me_ = 0, np_ = 1;
  std::vector<std::int64_t> lld_;
  std::vector<int> pad_;  // per process: elements from its window's base to its first element
  double* base_ = nullptr;
  std::int64_t* ctr_ = nullptr;
  MPI_Win win_ = MPI_WIN_NULL, cwin_ = MPI_WIN_NULL;
  std::map<std::vector<std::int64_t>, MPI_Datatype> types_;
  std::vector<side> rows_, cols_;
  std::vector<int> touched_;
};

// ---- Global Arrays -----------------------------------------------------------------------
#ifdef ACCRETE_BENCH_GA
class ga_array {
 public:
  static constexpr const char* name = "ga";
  ga_array(dist_kind k, std::int64_t n, std::int64_t nb) {
    int p = GA_Nnodes();
    const int pr = accrete::square_grid_rows(p), pc = p / pr;
    // Dimensions swapped (see the header comment): GA dim 0 = our columns.
    int dims[2] = {int(n), int(n)};
    g_ = GA_Create_handle();
    GA_Set_data(g_, 2, dims, C_DBL);
    GA_Set_array_name(g_, const_cast<char*>("bench"));
    if (k == dist_kind::block) {
      int grid[2] = {pc, pr};
      // The block starts of accrete's block distribution (columns first).
      std::vector<int> map;
      for (const accrete::axis& a : {accrete::axis::block(n, pc), accrete::axis::block(n, pr)})
        for (int k = 0; k < a.parts(); ++k) map.push_back(int(a.bounds()[std::size_t(k)]));
      GA_Set_irreg_distr(g_, map.data(), grid);
    } else {
      const int b = k == dist_kind::block_cyclic ? int(nb) : 1;
      int block[2] = {b, b}, grid[2] = {pc, pr};
      GA_Set_block_cyclic_proc_grid(g_, block, grid);
    }
    if (!GA_Allocate(g_)) GA_Error(const_cast<char*>("bench: GA_Allocate failed"), 0);
    int one[1] = {1};
    c_ = NGA_Create(C_LONG, 1, one, const_cast<char*>("counter"), nullptr);
    zero();
    reset_counter();
  }
  ~ga_array() {
    GA_Destroy(g_);
    GA_Destroy(c_);
  }
  ga_array(const ga_array&) = delete;
  ga_array& operator=(const ga_array&) = delete;

  void get(const accrete::patch& p, double* buf, std::int64_t ld) {
    with_bounds(p, ld, [&](int* lo, int* hi, int* l) { NGA_Get(g_, lo, hi, buf, l); });
  }
  void put(const accrete::patch& p, const double* buf, std::int64_t ld) {
    with_bounds(p, ld, [&](int* lo, int* hi, int* l) { NGA_Put(g_, lo, hi, const_cast<double*>(buf), l); });
  }
  void acc(const accrete::patch& p, const double* buf, std::int64_t ld) {
    double one = 1;
    with_bounds(p, ld, [&](int* lo, int* hi, int* l) { NGA_Acc(g_, lo, hi, const_cast<double*>(buf), l, &one); });
  }
  // GA's put and acc are complete at the target when they return (ARMCI-MPI
  // flushes); GA_Fence would order them again.
  void flush() {}
  void sync() { GA_Sync(); }
  void zero() { GA_Zero(g_); }
  std::int64_t next_task() {
    int at[1] = {0};
    return NGA_Read_inc(c_, at, 1);
  }
  void reset_counter() { GA_Zero(c_); }

 private:
  // GA's inclusive bounds of a (non-empty) patch, dimensions swapped.
  template <class F>
  static void with_bounds(const accrete::patch& p, std::int64_t ld, F&& f) {
    if (p.empty()) return;
    int lo[2] = {int(p.col_lo), int(p.row_lo)}, hi[2] = {int(p.col_hi - 1), int(p.row_hi - 1)}, l[1] = {int(ld)};
    f(lo, hi, l);
  }
  int g_ = 0, c_ = 0;
};
#endif

/// MPI_Init_thread, the accrete runtime and (when built with it) GA, torn
/// down in reverse order.
class session {
 public:
  session(int& argc, char**& argv) {
    int provided = 0;
    // The progress thread (ACCRETE_PROGRESS_THREAD=1) needs MPI_THREAD_MULTIPLE.
    MPI_Init_thread(&argc, &argv, std::getenv("ACCRETE_PROGRESS_THREAD") ? MPI_THREAD_MULTIPLE : MPI_THREAD_SERIALIZED,
                    &provided);
    rt_ = std::make_unique<accrete::runtime>();
#ifdef ACCRETE_BENCH_GA
    GA_Initialize();
#endif
  }
  ~session() {
#ifdef ACCRETE_BENCH_GA
    GA_Terminate();
#endif
    rt_.reset();
    MPI_Finalize();
  }
  static bool have_ga() {
#ifdef ACCRETE_BENCH_GA
    return true;
#else
    return false;
#endif
  }

 private:
  std::unique_ptr<accrete::runtime> rt_;
};

/// The command line of the workload benchmarks: --preset tiny|small|paper
/// (each naming a matrix size n and a tile edge t), --reps R, --json FILE.
struct preset_cli {
  std::string preset = "small", json;
  int reps = 3;
  std::int64_t n = 0, t = 0;
  int me = 0, np = 1;  // world rank and size
};
/// `sizes` holds {n, t} for tiny, small and paper. Prints a usage line and
/// returns false on anything else.
inline bool parse_preset_cli(int argc, char** argv, const char* prog, const std::int64_t (&sizes)[3][2],
                             preset_cli& c) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has = i + 1 < argc;
    if (a == "--preset" && has)
      c.preset = argv[++i];
    else if (a == "--reps" && has)
      c.reps = std::atoi(argv[++i]);
    else if (a == "--json" && has)
      c.json = argv[++i];
    else
      c.preset = "";
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &c.me);
  MPI_Comm_size(MPI_COMM_WORLD, &c.np);
  const char* names[3] = {"tiny", "small", "paper"};
  for (int k = 0; k < 3; ++k)
    if (c.preset == names[k] && c.reps >= 1) {
      c.n = sizes[k][0];
      c.t = sizes[k][1];
      return true;
    }
  std::fprintf(stderr, "usage: %s [--preset tiny|small|paper] [--reps R >= 1] [--json FILE]\n", prog);
  return false;
}

/// "openmpi" or "mpich", from the library version string.
inline std::string mpi_name() {
  char v[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(v, &len);
  const std::string s(v, std::size_t(len));
  if (s.find("Open MPI") != std::string::npos) return "openmpi";
  if (s.find("MPICH") != std::string::npos) return "mpich";
  return "other";
}

}  // namespace bench
