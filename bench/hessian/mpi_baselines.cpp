// Plain-MPI baselines for the "hessian" workload; see mpi_baselines.hpp.
#include "mpi_baselines.hpp"

#include "harness.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <climits>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include <sched.h>

namespace bench::hessian {
namespace {

// ---------------------------------------------------------------------------
// Where the elements of one update go.
//
// Rows of B that share an owning grid row and map to consecutive local rows
// form a run; ix is ascending and Lr-aligned, so runs are long (>= Lr when Lr
// divides MB) and every per-owner copy or add is a handful of contiguous
// memcpy-like loops instead of an element-wise scatter.
// ---------------------------------------------------------------------------
struct row_run {
  int32_t i0;   // first row of B
  int32_t len;  // number of rows
  int32_t l0;   // first local row in the owner's storage
};
struct col_ref {
  int32_t j;   // column of B
  int32_t lc;  // local column in the owner's storage
};

struct pattern {
  std::vector<std::vector<row_run>> runs;  // per grid row
  std::vector<std::vector<col_ref>> cols;  // per grid column
  std::vector<int64_t> nrows;              // per grid row: rows of B it owns

  void build(const std::vector<int64_t>& ix, int Pr, int Pc) {
    runs.resize(static_cast<std::size_t>(Pr));
    cols.resize(static_cast<std::size_t>(Pc));
    nrows.assign(static_cast<std::size_t>(Pr), 0);
    for (auto& r : runs) r.clear();
    for (auto& c : cols) c.clear();
    const auto n = static_cast<int32_t>(ix.size());
    for (int32_t i = 0; i < n; ++i) {
      const int64_t g = ix[static_cast<std::size_t>(i)];
      const auto tr = static_cast<std::size_t>(owner_row(g, Pr));
      const auto lr = static_cast<int32_t>(local_row(g, Pr));
      auto& rr = runs[tr];
      if (!rr.empty() && rr.back().i0 + rr.back().len == i && rr.back().l0 + rr.back().len == lr)
        ++rr.back().len;
      else
        rr.push_back({i, 1, lr});
      ++nrows[tr];
      cols[static_cast<std::size_t>(owner_col(g, Pc))].push_back({i, static_cast<int32_t>(local_col(g, Pc))});
    }
  }

  // Elements of the update owned by grid position (tr, tc).
  int64_t elements(int tr, int tc) const {
    return nrows[static_cast<std::size_t>(tr)] * static_cast<int64_t>(cols[static_cast<std::size_t>(tc)].size());
  }
};

// Copies the (tr, tc) part of B, column by column, runs in order, to out;
// returns the end of what was written.
template <class Out>
Out* pack_part(const pattern& pat, int tr, int tc, const float* B, int64_t n, Out* out) {
  static_assert(sizeof(Out) == sizeof(float));
  for (const col_ref& c : pat.cols[static_cast<std::size_t>(tc)]) {
    const float* src = B + static_cast<int64_t>(c.j) * n;
    for (const row_run& r : pat.runs[static_cast<std::size_t>(tr)]) {
      std::memcpy(out, src + r.i0, static_cast<std::size_t>(r.len) * sizeof(float));
      out += r.len;
    }
  }
  return out;
}

// Software prefetch (for writing) of the lines a column's runs cover,
// `prefetch_columns` columns ahead: the same technique as accrete's
// kernels (src/assembly/kernels.hpp), so that the baselines and the
// local-apply reference are not slowed by misses accrete avoids.
constexpr std::size_t prefetch_columns = 4;
void prefetch_lines(const float* first, int32_t len) {
  const auto e = reinterpret_cast<std::uintptr_t>(first + len);
  for (auto a = reinterpret_cast<std::uintptr_t>(first) & ~std::uintptr_t(63); a < e; a += 64)
    __builtin_prefetch(reinterpret_cast<const void*>(a), 1, 3);
}

// The adds of one target column, one call per column and built for AVX2
// as well (GCC picks the build when the program loads): the same technique
// as accrete's kernels (src/assembly/simd.hpp), for the same reason: the
// fewer instructions a run costs, the more of the runs' misses the core
// keeps in flight.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define BASELINE_CLONES __attribute__((target_clones("avx2", "default"), noinline))
#else
#define BASELINE_CLONES
#endif
// col[r.l0 + x] += src[r.i0 + x] for each run r.
BASELINE_CLONES void add_column(float* __restrict col, const float* __restrict src, const row_run* runs,
                                std::size_t nruns) {
  for (std::size_t k = 0; k < nruns; ++k) {
    const float* s = src + runs[k].i0;
    float* d = col + runs[k].l0;
    for (int32_t x = 0; x < runs[k].len; ++x) d[x] += s[x];
  }
}
// col[l0 + x] += the next values of w, for the (l0, len) pairs of runs;
// returns the end of the values read.
BASELINE_CLONES const int32_t* add_column_words(float* __restrict col, const int32_t* runs, int32_t nruns,
                                                const int32_t* __restrict w) {
  for (int32_t r = 0; r < nruns; ++r) {
    float* d = col + runs[2 * r];
    const int32_t len = runs[2 * r + 1];
    for (int32_t x = 0; x < len; ++x) d[x] += std::bit_cast<float>(w[x]);
    w += len;
  }
  return w;
}

// Adds the (tr, tc) part of B straight into dst (the owner's storage layout).
void add_part(const pattern& pat, int tr, int tc, const float* B, int64_t n, float* dst, int64_t ld) {
  const auto& cols = pat.cols[static_cast<std::size_t>(tc)];
  const auto& runs = pat.runs[static_cast<std::size_t>(tr)];
  for (std::size_t k = 0; k < cols.size(); ++k) {
    const col_ref& c = cols[k];
    if (k + prefetch_columns < cols.size()) {
      const float* ahead = dst + static_cast<int64_t>(cols[k + prefetch_columns].lc) * ld;
      for (const row_run& r : runs) prefetch_lines(ahead + r.l0, r.len);
    }
    add_column(dst + static_cast<int64_t>(c.lc) * ld, B + static_cast<int64_t>(c.j) * n, runs.data(), runs.size());
  }
}

struct comm_ranks {
  int P, rank;
};

// Validates the arguments every baseline takes; returns comm's size and rank.
comm_ranks check_args(const params& prm, MPI_Comm comm, int64_t ld, int64_t local_rows, int64_t local_cols) {
  prm.validate();
  int P = 0, rank = 0;
  MPI_Comm_size(comm, &P);
  MPI_Comm_rank(comm, &rank);
  const local_layout L = make_layout(prm, P, rank);
  if (local_rows != L.rows || local_cols != L.cols || ld < std::max<int64_t>(1, local_rows))
    throw std::invalid_argument("hessian baseline: local dimensions do not match the block-cyclic layout");
  // Local indices and per-message element counts are carried in 32 bits.
  if (prm.N >= INT32_MAX || prm.n() * prm.n() >= INT_MAX)
    throw std::invalid_argument("hessian baseline: N or n*n too large for 32-bit local indices");
  return {P, rank};
}

struct phase_clock {
  double t = MPI_Wtime();
  double lap() {
    const double now = MPI_Wtime();
    const double d = now - t;
    t = now;
    return d;
  }
};

// The timed loop of the baselines that add in place: after a barrier,
// generate each update, find its runs, and hand it to apply(pat, up).
// Returns the start time.
template <class Apply>
double run_updates(const params& prm, MPI_Comm comm, int rank, int Pr, int Pc, baseline_timing& t, Apply&& apply) {
  update up;
  pattern pat;
  MPI_Barrier(comm);
  const double t0 = MPI_Wtime();
  phase_clock clk;
  for (int64_t u = 0; u < prm.U; ++u) {
    make_update(prm, rank, u, up);
    t.gen += clk.lap();
    pat.build(up.ix, Pr, Pc);
    t.bin += clk.lap();
    apply(pat, up);
    t.apply += clk.lap();
  }
  return t0;
}

// Reduces the per-rank timings (max) and bytes (sum) and computes the checksum.
baseline_timing finish(baseline_timing mine, double my_sum, MPI_Comm comm) {
  double in[6] = {mine.total, mine.gen, mine.bin, mine.comm, mine.apply, mine.setup};
  double out[6];
  MPI_Allreduce(in, out, 6, MPI_DOUBLE, MPI_MAX, comm);
  baseline_timing r;
  r.total = out[0], r.gen = out[1], r.bin = out[2], r.comm = out[3], r.apply = out[4], r.setup = out[5];
  unsigned long long b = mine.bytes, bsum = 0;
  MPI_Allreduce(&b, &bsum, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm);
  r.bytes = bsum;
  MPI_Allreduce(&my_sum, &r.checksum, 1, MPI_DOUBLE, MPI_SUM, comm);
  return r;
}

}  // namespace

// ---------------------------------------------------------------------------
// (a) MPI_Accumulate with one indexed target datatype per (update, owner)
// ---------------------------------------------------------------------------
baseline_timing baseline_accumulate(const params& prm, MPI_Comm comm, float* local, int64_t ld, int64_t local_rows,
                                    int64_t local_cols, accumulate_sync sync) {
  const auto [P, rank] = check_args(prm, comm, ld, local_rows, local_cols);
  const auto [Pr, Pc] = grid_shape(P);
  const int64_t n = prm.n();
  const auto local_elems = static_cast<std::size_t>(ld * local_cols);
  baseline_timing t;

  // --- setup (untimed) -----------------------------------------------------
  double ts = MPI_Wtime();
  float* win_base = nullptr;
  MPI_Win win;
  // Disp unit = sizeof(float): target datatypes are in float elements anyway,
  // and target_disp stays 0.
  MPI_Info info;
  MPI_Info_create(&info);
  // Only MPI_SUM on MPI_FLOAT is ever used: lets the implementation pick the
  // fastest accumulate path.
  MPI_Info_set(info, "accumulate_ops", "same_op");
  MPI_Info_set(info, "accumulate_ordering", "none");
  MPI_Win_allocate(static_cast<MPI_Aint>(local_elems * sizeof(float)), sizeof(float), info, comm, &win_base, &win);
  MPI_Info_free(&info);
  if (local_elems) std::memcpy(win_base, local, local_elems * sizeof(float));
  // A target's column stride is its own ld, which its caller may have padded
  // beyond numroc rows: exchange them once.
  std::vector<int64_t> lds(static_cast<std::size_t>(P));
  MPI_Allgather(&ld, 1, MPI_INT64_T, lds.data(), 1, MPI_INT64_T, comm);
  t.setup += MPI_Wtime() - ts;

  update up;
  pattern pat;
  std::vector<float> pack[2];
  pack[0].resize(static_cast<std::size_t>(n * n));
  pack[1].resize(static_cast<std::size_t>(n * n));
  std::vector<int> blen, bdisp;
  std::vector<MPI_Aint> cdisp;
  struct op {
    int target;
    int64_t offset;  // in the packed buffer
    int count;
    MPI_Datatype type;
  };
  std::vector<op> ops;

  MPI_Barrier(comm);
  const double t0 = MPI_Wtime();
  phase_clock clk;
  // MPI_MODE_NOCHECK: no rank ever locks exclusively, so lock_all needs no
  // handshake.
  MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
  t.comm += clk.lap();
  for (int64_t u = 0; u < prm.U; ++u) {
    make_update(prm, rank, u, up);
    t.gen += clk.lap();

    // Pack every owner's part and describe its positions in the owner's
    // storage. buf was last used by update u-2, which the flush of iteration
    // u-1 completed, so packing overlaps the transfer of update u-1.
    pat.build(up.ix, Pr, Pc);
    float* const buf = pack[static_cast<std::size_t>(u % 2)].data();
    float* out = buf;
    ops.clear();
    for (int tr = 0; tr < Pr; ++tr) {
      const auto& runs = pat.runs[static_cast<std::size_t>(tr)];
      if (runs.empty()) continue;
      // One column of the target part: the runs, at the target's local rows
      // (numroc rows are the same along a grid row, so one type serves every
      // target in it).
      blen.resize(runs.size());
      bdisp.resize(runs.size());
      for (std::size_t x = 0; x < runs.size(); ++x) blen[x] = runs[x].len, bdisp[x] = runs[x].l0;
      MPI_Datatype coltype;
      MPI_Type_indexed(static_cast<int>(runs.size()), blen.data(), bdisp.data(), MPI_FLOAT, &coltype);
      for (int tc = 0; tc < Pc; ++tc) {
        const auto& cols = pat.cols[static_cast<std::size_t>(tc)];
        if (cols.empty()) continue;
        const int target = tr * Pc + tc;
        const auto tld = static_cast<MPI_Aint>(lds[static_cast<std::size_t>(target)]);
        cdisp.resize(cols.size());
        for (std::size_t x = 0; x < cols.size(); ++x)
          cdisp[x] = static_cast<MPI_Aint>(cols[x].lc) * tld * static_cast<MPI_Aint>(sizeof(float));
        MPI_Datatype ttype;
        MPI_Type_create_hindexed_block(static_cast<int>(cols.size()), 1, cdisp.data(), coltype, &ttype);
        MPI_Type_commit(&ttype);
        float* end = pack_part(pat, tr, tc, up.B.data(), n, out);
        ops.push_back({target, out - buf, static_cast<int>(end - out), ttype});
        out = end;
      }
      // Types built from coltype keep what they need of it.
      MPI_Type_free(&coltype);
    }
    t.bin += clk.lap();

    // Update u-1 must be locally complete before its buffer is packed again
    // in iteration u+1; completing it here, just before issuing u, gave it the
    // whole generation and packing of u to progress.
    if (sync == accumulate_sync::flush_local_double_buffer) MPI_Win_flush_local_all(win);
    for (op& o : ops) {
      MPI_Accumulate(buf + o.offset, o.count, MPI_FLOAT, o.target, 0, 1, o.type, MPI_SUM, win);
      // Freeing a datatype in use by a pending operation is allowed.
      MPI_Type_free(&o.type);
      if (o.target != rank) t.bytes += static_cast<uint64_t>(o.count) * sizeof(float);
    }
    if (sync == accumulate_sync::flush_all_per_update) MPI_Win_flush_all(win);
    t.comm += clk.lap();
  }
  MPI_Win_unlock_all(win);
  // Unlock only completes this rank's operations; the matrix is complete once
  // every rank's are.
  MPI_Barrier(comm);
  t.comm += clk.lap();
  t.total = MPI_Wtime() - t0;

  ts = MPI_Wtime();
  if (local_elems) std::memcpy(local, win_base, local_elems * sizeof(float));
  MPI_Win_free(&win);
  t.setup += MPI_Wtime() - ts;
  return finish(t, local_sum(local, ld, local_rows, local_cols), comm);
}

// ---------------------------------------------------------------------------
// (b) Bin per owner, one MPI_Alltoall of counts + one MPI_Alltoallv
// ---------------------------------------------------------------------------
//
// Wire format, a stream of 32-bit words per (update, owner) segment:
//   nruns, ncols, nruns x (l0, len), ncols x lc, ncols * sum(len) values
// in the owner's local indices, values column by column then run by run.
// The headers cost (2 + 2*nruns + ncols) words against ncols*rows values,
// i.e. < 1% at the presets, versus 200% for (row, col, value) triples.
//
// 64-bit safety: MPI-3 counts and displacements are int. The buffers are
// exchanged in units of UNIT words (a contiguous datatype); each per-owner
// region is padded to a whole number of units and the true word counts are
// exchanged as int64 in the MPI_Alltoall, so the limit is 2^31 units (8 TiB)
// per rank instead of 2^31 words.
namespace {
constexpr int64_t UNIT = 256;  // words per exchanged unit (1 KiB)

// A growable word buffer that does not value-initialise (std::vector's
// resize would write every word before the packing writes it again).
struct raw_words {
  std::unique_ptr<int32_t[]> p;
  std::size_t cap = 0;
  void reserve(std::size_t n) {
    if (n <= cap) return;
    p.reset(new int32_t[n]);  // default-initialised: untouched
    cap = n;
  }
  int32_t* data() { return p.get(); }
};

int64_t segment_words(const pattern& pat, int tr, int tc) {
  const auto nruns = static_cast<int64_t>(pat.runs[static_cast<std::size_t>(tr)].size());
  const auto ncols = static_cast<int64_t>(pat.cols[static_cast<std::size_t>(tc)].size());
  if (nruns == 0 || ncols == 0) return 0;
  return 2 + 2 * nruns + ncols + pat.elements(tr, tc);
}

int32_t* write_segment(const pattern& pat, int tr, int tc, const float* B, int64_t n, int32_t* w) {
  const auto& runs = pat.runs[static_cast<std::size_t>(tr)];
  const auto& cols = pat.cols[static_cast<std::size_t>(tc)];
  if (runs.empty() || cols.empty()) return w;
  *w++ = static_cast<int32_t>(runs.size());
  *w++ = static_cast<int32_t>(cols.size());
  for (const row_run& r : runs) *w++ = r.l0, *w++ = r.len;
  for (const col_ref& c : cols) *w++ = c.lc;
  return pack_part(pat, tr, tc, B, n, w);
}

// Adds every segment in [w, end) (they are self-delimiting) into local.
void apply_segments(const int32_t* w, const int32_t* end, float* local, int64_t ld) {
  while (w < end) {
    const int32_t nruns = *w++;
    const int32_t ncols = *w++;
    const int32_t* runs = w;
    w += 2 * static_cast<int64_t>(nruns);
    const int32_t* cols = w;
    w += ncols;
    for (int32_t c = 0; c < ncols; ++c) {
      float* col = local + static_cast<int64_t>(cols[c]) * ld;
      if (c + static_cast<int32_t>(prefetch_columns) < ncols) {
        const float* ahead = local + static_cast<int64_t>(cols[c + static_cast<int32_t>(prefetch_columns)]) * ld;
        for (int32_t r = 0; r < nruns; ++r) prefetch_lines(ahead + runs[2 * r], runs[2 * r + 1]);
      }
      w = add_column_words(col, runs, nruns, w);
    }
  }
}
}  // namespace

baseline_timing baseline_alltoallv(const params& prm, MPI_Comm comm, float* local, int64_t ld, int64_t local_rows,
                                   int64_t local_cols) {
  const auto [P, rank] = check_args(prm, comm, ld, local_rows, local_cols);
  const auto [Pr, Pc] = grid_shape(P);
  const int myrow = rank / Pc, mycol = rank % Pc;
  const int64_t n = prm.n();
  const auto Pz = static_cast<std::size_t>(P);
  baseline_timing t;

  update up;
  pattern pat;
  std::vector<int64_t> send_words(Pz, 0), recv_words(Pz, 0);
  std::vector<int> scount(Pz), sdispl(Pz), rcount(Pz), rdispl(Pz);
  // Exchange buffers persist across calls and grow without zero-filling, as
  // a program that assembles repeatedly would keep them (a first call still
  // pays the page faults of first touch).
  static raw_words sendbuf, recvbuf;
  MPI_Datatype unit;
  MPI_Type_contiguous(static_cast<int>(UNIT), MPI_INT32_T, &unit);
  MPI_Type_commit(&unit);

  MPI_Barrier(comm);
  const double t0 = MPI_Wtime();
  phase_clock clk;

  // Sizing pass: the index sets alone (cheap) give every segment's exact
  // size, so each update is packed once, straight into its final place in one
  // send buffer.
  for (int64_t u = 0; u < prm.U; ++u) {
    make_indices(prm, rank, u, up.ix);
    pat.build(up.ix, Pr, Pc);
    for (int tr = 0; tr < Pr; ++tr)
      for (int tc = 0; tc < Pc; ++tc)
        if (tr * Pc + tc != rank) send_words[static_cast<std::size_t>(tr * Pc + tc)] += segment_words(pat, tr, tc);
  }
  std::vector<int64_t> soff(Pz + 1, 0);  // in units
  for (std::size_t q = 0; q < Pz; ++q) soff[q + 1] = soff[q] + (send_words[q] + UNIT - 1) / UNIT;
  if (soff[Pz] > INT_MAX) throw std::runtime_error("hessian alltoallv: send buffer exceeds 2^31 units");
  sendbuf.reserve(static_cast<std::size_t>(soff[Pz] * UNIT));
  std::vector<int32_t*> cursor(Pz);
  for (std::size_t q = 0; q < Pz; ++q) cursor[q] = sendbuf.data() + soff[q] * UNIT;
  t.bin += clk.lap();

  for (int64_t u = 0; u < prm.U; ++u) {
    make_update(prm, rank, u, up);
    t.gen += clk.lap();
    pat.build(up.ix, Pr, Pc);
    for (int tr = 0; tr < Pr; ++tr)
      for (int tc = 0; tc < Pc; ++tc) {
        const auto q = static_cast<std::size_t>(tr * Pc + tc);
        if (static_cast<int>(q) != rank) cursor[q] = write_segment(pat, tr, tc, up.B.data(), n, cursor[q]);
      }
    t.bin += clk.lap();
    // Our own part needs no message: add it now, while B is in cache.
    add_part(pat, myrow, mycol, up.B.data(), n, local, ld);
    t.apply += clk.lap();
  }

  MPI_Alltoall(send_words.data(), 1, MPI_INT64_T, recv_words.data(), 1, MPI_INT64_T, comm);
  std::vector<int64_t> roff(Pz + 1, 0);
  for (std::size_t q = 0; q < Pz; ++q) roff[q + 1] = roff[q] + (recv_words[q] + UNIT - 1) / UNIT;
  if (roff[Pz] > INT_MAX) throw std::runtime_error("hessian alltoallv: receive buffer exceeds 2^31 units");
  for (std::size_t q = 0; q < Pz; ++q) {
    scount[q] = static_cast<int>(soff[q + 1] - soff[q]);
    sdispl[q] = static_cast<int>(soff[q]);
    rcount[q] = static_cast<int>(roff[q + 1] - roff[q]);
    rdispl[q] = static_cast<int>(roff[q]);
    if (static_cast<int>(q) != rank) t.bytes += static_cast<uint64_t>(send_words[q]) * 4;
  }
  recvbuf.reserve(static_cast<std::size_t>(roff[Pz] * UNIT));
  t.comm += clk.lap();
  MPI_Alltoallv(sendbuf.data(), scount.data(), sdispl.data(), unit, recvbuf.data(), rcount.data(), rdispl.data(), unit,
                comm);
  t.comm += clk.lap();
  for (std::size_t q = 0; q < Pz; ++q) {
    const int32_t* w = recvbuf.data() + roff[q] * UNIT;
    apply_segments(w, w + recv_words[q], local, ld);
  }
  t.apply += clk.lap();
  t.total = MPI_Wtime() - t0;

  MPI_Type_free(&unit);
  return finish(t, local_sum(local, ld, local_rows, local_cols), comm);
}

// ---------------------------------------------------------------------------
// (c) Local-apply reference: apply own updates locally, no communication
// ---------------------------------------------------------------------------
baseline_timing local_apply_reference(const params& prm, MPI_Comm comm) {
  prm.validate();
  int P = 0, rank = 0;
  MPI_Comm_size(comm, &P);
  MPI_Comm_rank(comm, &rank);
  const auto [Pr, Pc] = grid_shape(P);
  const int64_t n = prm.n();
  baseline_timing t;

  // Grid position (0, 0) has the largest numroc dimensions, so every
  // element's owner-local position fits. Touched before the clock, like the
  // real local matrices.
  const int64_t rows = numroc(prm.N, MB, 0, 0, Pr), cols = numroc(prm.N, NB, 0, 0, Pc);
  const int64_t ld = std::max<int64_t>(1, rows);
  line_vector<float> priv(static_cast<std::size_t>(ld * cols), 0.0f);
  const double t0 = run_updates(prm, comm, rank, Pr, Pc, t, [&](const pattern& pat, const update& up) {
    // Every owner's part, at the owner's local positions, into our array:
    // the same adds the owners perform together, without moving any data.
    for (int tr = 0; tr < Pr; ++tr)
      for (int tc = 0; tc < Pc; ++tc) add_part(pat, tr, tc, up.B.data(), n, priv.data(), ld);
  });
  t.total = MPI_Wtime() - t0;
  return finish(t, local_sum(priv.data(), ld, rows, cols), comm);
}

// ---------------------------------------------------------------------------
// (d) MPI-3 shared memory on one node: direct adds under stripe locks
// ---------------------------------------------------------------------------
namespace {
constexpr int64_t SHM_LOCKS = 64;
constexpr int64_t SHM_HEADER = 64 * SHM_LOCKS;  // one cache line per lock

void spin_lock(uint32_t* w) {
  std::atomic_ref<uint32_t> a(*w);
  for (unsigned spins = 0;; ++spins) {
    if (a.load(std::memory_order_relaxed) == 0 && a.exchange(1, std::memory_order_acquire) == 0) return;
    if (spins > 64) sched_yield();  // oversubscribed: let the holder run
  }
}
void spin_unlock(uint32_t* w) { std::atomic_ref<uint32_t>(*w).store(0, std::memory_order_release); }
}  // namespace

baseline_timing baseline_shared_memory(const params& prm, MPI_Comm comm, float* local, int64_t ld, int64_t local_rows,
                                       int64_t local_cols) {
  const auto [P, rank] = check_args(prm, comm, ld, local_rows, local_cols);
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int node_n = 0;
  MPI_Comm_size(node, &node_n);
  if (node_n != P) {
    MPI_Comm_free(&node);
    throw std::runtime_error("hessian shared-memory baseline: the ranks do not share one node");
  }
  const auto [Pr, Pc] = grid_shape(P);
  const int64_t n = prm.n();
  baseline_timing t;
  double ts = MPI_Wtime();
  // Every rank's part: lock words, then ld x local_cols floats.
  // The floats start on the first cache line after the locks, wherever the
  // MPI placed the window (Open MPI 4.1: 8 bytes past a page), as accrete's
  // slices do; 64 bytes more leave room for that.
  const auto bytes = static_cast<MPI_Aint>(SHM_HEADER + 64 + ld * local_cols * int64_t(sizeof(float)));
  auto data_of = [](std::byte* b) {
    const auto a = (reinterpret_cast<std::uintptr_t>(b) + SHM_HEADER + 63) & ~std::uintptr_t(63);
    return reinterpret_cast<float*>(a);
  };
  std::byte* mine = nullptr;
  MPI_Win win;
  std::vector<std::byte*> base(static_cast<std::size_t>(P));
  std::vector<int64_t> lds(static_cast<std::size_t>(P));
  MPI_Allgather(&ld, 1, MPI_INT64_T, lds.data(), 1, MPI_INT64_T, node);
#ifdef ACCRETE_SMPI
  // SMPI 3.32 lays slices out by the first rank's size and answers
  // MPI_Win_shared_query with the first slice (accrete's allocate_shared in
  // src/backend/mpi/windows.cpp): equal sizes, and the bases exchanged.
  MPI_Aint most = 0;
  MPI_Allreduce(&bytes, &most, 1, MPI_AINT, MPI_MAX, node);
  MPI_Win_allocate_shared(most, 1, MPI_INFO_NULL, node, &mine, &win);
  MPI_Allgather(&mine, sizeof mine, MPI_BYTE, base.data(), sizeof mine, MPI_BYTE, node);
#else
  MPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, node, &mine, &win);
  for (int q = 0; q < P; ++q) {
    MPI_Aint sz;
    int du;
    MPI_Win_shared_query(win, q, &sz, &du, &base[static_cast<std::size_t>(q)]);
  }
#endif
  std::memset(mine, 0, static_cast<std::size_t>(bytes));
  MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
  MPI_Win_sync(win);
  t.setup += MPI_Wtime() - ts;

  const double t0 = run_updates(prm, comm, rank, Pr, Pc, t, [&](const pattern& pat, const update& up) {
    for (int tr = 0; tr < Pr; ++tr)
      for (int tc = 0; tc < Pc; ++tc) {
        const auto q = static_cast<std::size_t>(tr * Pc + tc);
        const auto& cols = pat.cols[static_cast<std::size_t>(tc)];
        const auto& runs = pat.runs[static_cast<std::size_t>(tr)];
        if (cols.empty() || runs.empty()) continue;
        auto* locks = reinterpret_cast<uint32_t*>(base[q]);
        float* data = data_of(base[q]);
        // Consecutive columns of one column block share a lock: take it once.
        for (std::size_t c0 = 0; c0 < cols.size();) {
          const int64_t stripe = (cols[c0].lc / NB) % SHM_LOCKS;
          std::size_t c1 = c0 + 1;
          while (c1 < cols.size() && (cols[c1].lc / NB) % SHM_LOCKS == stripe) ++c1;
          uint32_t* lk = locks + stripe * (64 / sizeof(uint32_t));
          spin_lock(lk);
          for (std::size_t c = c0; c < c1; ++c) {
            if (c + prefetch_columns < cols.size()) {
              const float* ahead = data + static_cast<int64_t>(cols[c + prefetch_columns].lc) * lds[q];
              for (const row_run& r : runs) prefetch_lines(ahead + r.l0, r.len);
            }
            add_column(data + static_cast<int64_t>(cols[c].lc) * lds[q],
                       up.B.data() + static_cast<int64_t>(cols[c].j) * n, runs.data(), runs.size());
          }
          spin_unlock(lk);
          c0 = c1;
        }
        if (static_cast<int>(q) != rank) t.bytes += static_cast<uint64_t>(pat.elements(tr, tc)) * 4;
      }
  });
  phase_clock clk;
  MPI_Win_sync(win);
  MPI_Barrier(comm);
  MPI_Win_sync(win);
  t.comm += clk.lap();
  t.total = MPI_Wtime() - t0;

  ts = MPI_Wtime();
  const float* part = data_of(mine);
  for (int64_t c = 0; c < local_cols; ++c)
    for (int64_t r = 0; r < local_rows; ++r) local[c * ld + r] += part[c * ld + r];
  MPI_Win_unlock_all(win);
  MPI_Win_free(&win);
  MPI_Comm_free(&node);
  t.setup += MPI_Wtime() - ts;
  return finish(t, local_sum(local, ld, local_rows, local_cols), comm);
}

double stream_add_bandwidth(MPI_Comm comm, int64_t elements, int reps) {
  int P = 0;
  MPI_Comm_size(comm, &P);
  line_vector<float> s(static_cast<std::size_t>(elements), 1.0f), d(static_cast<std::size_t>(elements), 0.0f);
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    // Barriers on both sides: with more processes than cores, a process
    // that waits for a core after the first barrier reads its clock late,
    // and timing its own loop alone counted the cores' time once per
    // process (MPICH at P = 4 on 2 cores reported up to 141 GB/s where 2
    // processes measure 55-70). The second barrier makes every process's
    // interval reach the last loop's end, so the slowest interval spans
    // the first start to the last end.
    MPI_Barrier(comm);
    const double t0 = MPI_Wtime();
    float* __restrict dp = d.data();
    const float* __restrict sp = s.data();
    for (int64_t i = 0; i < elements; ++i) dp[i] += sp[i];
    MPI_Barrier(comm);
    double mine = MPI_Wtime() - t0, slowest = 0;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
    best = std::min(best, slowest);
  }
  volatile float sink = d[static_cast<std::size_t>(elements / 2)];  // keep the kernel
  (void)sink;
  return double(P) * 12.0 * double(elements) / best;
}

}  // namespace bench::hessian
