// The "hessian" benchmark workload: generation, distribution and verification.
//
// This header implements /work/shared/bench/hessian-workload.md (normative).
// Every implementation measured on this workload (accrete and the plain-MPI
// baselines) uses these functions, so the updates are identical bit for bit.
//
// Header-only. It depends on the C++ standard library and, for k > 0, on a
// Fortran BLAS (`ssyrk_` / `dsyrk_`): link with BLAS::BLAS (or -lopenblas /
// -lblas). It deliberately includes no MPI header, so it can be used by any
// implementation.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

extern "C" {
// Fortran BLAS symmetric rank-k update. The trailing arguments are the hidden
// lengths of the character arguments (gfortran ABI); implementations written
// in C, such as OpenBLAS, simply ignore them.
void ssyrk_(const char* uplo, const char* trans, const int* n, const int* k, const float* alpha, const float* a,
            const int* lda, const float* beta, float* c, const int* ldc, std::size_t uplo_len, std::size_t trans_len);
void dsyrk_(const char* uplo, const char* trans, const int* n, const int* k, const double* alpha, const double* a,
            const int* lda, const double* beta, double* c, const int* ldc, std::size_t uplo_len, std::size_t trans_len);
}

namespace bench::hessian {

// Block-cyclic block sizes (the spec fixes MB = NB = 64).
inline constexpr int64_t MB = 64;
inline constexpr int64_t NB = 64;

// ---------------------------------------------------------------------------
// Parameters
// ---------------------------------------------------------------------------

struct params {
  int64_t N = 0;   // global matrix dimension
  int64_t Lr = 0;  // radial levels per lateral node
  int64_t Ll = 0;  // lateral nodes per update
  int64_t U = 0;   // updates per process
  int k = 0;       // rows of each Jacobian panel (0: closed-form values)
  uint64_t seed = 42;
  // Load imbalance (benchmark knob, not in the spec): process `straggler`
  // generates each update `straggle` times (same values, so results and
  // checksums are unchanged): a process that computes much longer between
  // updates than the others (issue 12, progress thread).
  int straggler = -1;
  int straggle = 1;

  int64_t n() const { return Lr * Ll; }  // update dimension
  int64_t Nl() const { return N / Lr; }  // lateral nodes

  // Throws std::invalid_argument when the parameters cannot describe a workload.
  void validate() const {
    if (N <= 0 || Lr <= 0 || Ll <= 0 || U < 0 || k < 0)
      throw std::invalid_argument("hessian: N, Lr, Ll must be positive and U, k non-negative");
    if (straggle < 1) throw std::invalid_argument("hessian: straggle must be at least 1");
    if (N % Lr != 0) throw std::invalid_argument("hessian: N must be a multiple of Lr");
    // Step 2 draws Ll distinct lateral nodes; it cannot terminate otherwise.
    if (Ll > Nl()) throw std::invalid_argument("hessian: Ll must not exceed N / Lr");
  }
};

inline params preset(std::string_view name) {
  params p;
  if (name == "tiny") {
    p.N = 1024, p.Lr = 4, p.Ll = 16, p.U = 8;
  } else if (name == "small") {
    p.N = 4096, p.Lr = 8, p.Ll = 32, p.U = 32;
  } else if (name == "paper") {
    p.N = 16384, p.Lr = 16, p.Ll = 64, p.U = 64;
  } else if (name == "large") {
    p.N = 32768, p.Lr = 32, p.Ll = 64, p.U = 32;
  } else {
    throw std::invalid_argument("hessian: unknown preset '" + std::string(name) +
                                "' (expected tiny, small, paper or large)");
  }
  return p;
}

// ---------------------------------------------------------------------------
// Random numbers: SplitMix64, exactly as in the spec.
// ---------------------------------------------------------------------------

inline uint64_t splitmix_next(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// ---------------------------------------------------------------------------
// Updates
// ---------------------------------------------------------------------------

template <class T>
struct basic_update {
  std::vector<int64_t> ix;  // n global indices, ascending
  std::vector<T> B;         // n x n, column-major: B[i + j*n] = B[i][j]
};
using update = basic_update<float>;

// Steps 1-3: the index set of update u of process p. Returns the generator
// state after step 2, from which step 5 continues drawing G. Implementations
// that need only the sparsity pattern (e.g. to size buffers) can call this
// alone; it costs O(Ll^2 + n).
inline uint64_t make_indices(const params& prm, int p, int64_t u, std::vector<int64_t>& ix) {
  uint64_t s = prm.seed ^ (static_cast<uint64_t>(p) << 32) ^ static_cast<uint64_t>(u);
  const uint64_t Nl = static_cast<uint64_t>(prm.Nl());
  const auto Ll = static_cast<std::size_t>(prm.Ll);
  // Reuse ix as scratch for the lateral nodes; a linear scan is cheap at these
  // Ll (<= 64 in every preset) and needs no Nl-sized table.
  ix.clear();
  ix.reserve(static_cast<std::size_t>(prm.n()));
  while (ix.size() < Ll) {
    const auto l = static_cast<int64_t>(splitmix_next(s) % Nl);
    if (std::find(ix.begin(), ix.end(), l) == ix.end()) ix.push_back(l);
  }
  std::sort(ix.begin(), ix.end());
  // Expand in place from the back so the lateral nodes are not overwritten
  // before they are read.
  ix.resize(static_cast<std::size_t>(prm.n()));
  for (std::size_t a = Ll; a-- > 0;) {
    const int64_t l = ix[a];
    for (int64_t r = prm.Lr; r-- > 0;)
      ix[a * static_cast<std::size_t>(prm.Lr) + static_cast<std::size_t>(r)] = l * prm.Lr + r;
  }
  return s;
}

namespace detail {
inline void syrk_upper_t(int n, int k, const float* G, float* B) {
  const float one = 1.0f, zero = 0.0f;
  ssyrk_("U", "T", &n, &k, &one, G, &k, &zero, B, &n, 1, 1);
}
inline void syrk_upper_t(int n, int k, const double* G, double* B) {
  const double one = 1.0, zero = 0.0;
  dsyrk_("U", "T", &n, &k, &one, G, &k, &zero, B, &n, 1, 1);
}
}  // namespace detail

// Steps 1-5: update u of process p into out (its buffers are reused).
template <class T = float>
void make_update_once(const params& prm, int p, int64_t u, basic_update<T>& out) {
  static_assert(std::is_floating_point_v<T>);
  uint64_t s = make_indices(prm, p, u, out.ix);
  const int64_t n = prm.n();
  const auto nn = static_cast<std::size_t>(n * n);
  out.B.resize(nn);
  T* B = out.B.data();
  if (prm.k == 0) {
    // (ix[i] + 3 ix[j] + p + u) % 7 == (ix[i] % 7 + (3 ix[j] + p + u) % 7) % 7
    // for non-negative terms, so each entry is a lookup in a 13-entry table
    // indexed by two residues: this produces exactly the spec's values
    // without a division per element.
    T table[13];
    for (int r = 0; r < 13; ++r) table[r] = static_cast<T>(0.25f * static_cast<float>(1 + r % 7));
    thread_local std::vector<unsigned char> ri;
    ri.resize(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      ri[static_cast<std::size_t>(i)] = static_cast<unsigned char>(out.ix[static_cast<std::size_t>(i)] % 7);
    for (int64_t j = 0; j < n; ++j) {
      const int64_t cj = (3 * out.ix[static_cast<std::size_t>(j)] + p + u) % 7;
      const T* t = table + cj;
      T* col = B + j * n;
      for (int64_t i = 0; i < n; ++i) col[i] = t[ri[static_cast<std::size_t>(i)]];
    }
    return;
  }
  // k > 0: G is k x n, drawn column by column (column-major, ld = k).
  thread_local std::vector<T> G;
  G.resize(static_cast<std::size_t>(prm.k) * static_cast<std::size_t>(n));
  for (auto& g : G) {
    const double v = static_cast<double>(splitmix_next(s) >> 11) * 0x1p-53 * 2.0 - 1.0;
    g = static_cast<T>(v);
  }
  detail::syrk_upper_t(static_cast<int>(n), prm.k, G.data(), B);
  // syrk fills only the upper triangle; the update is the full square.
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = j + 1; i < n; ++i) B[i + j * n] = B[j + i * n];
}

template <class T = float>
void make_update(const params& prm, int p, int64_t u, basic_update<T>& out) {
  const int times = p == prm.straggler ? prm.straggle : 1;
  for (int t = 0; t < times; ++t) make_update_once(prm, p, u, out);
}

// Sum of all entries of B, in double.
template <class T>
double update_sum(const basic_update<T>& up) {
  double s = 0.0;
  for (T v : up.B) s += static_cast<double>(v);
  return s;
}

// Sum of the entries of every update of process p (what p contributes to the
// checksum). For k = 0 it is computed in O(n) per update from residue counts,
// which is exact: every entry is a multiple of 0.25 and the total is far below
// 2^53 / 4. Summing these over processes in double is exact for k = 0 too.
inline double local_expected_checksum(const params& prm, int p) {
  double total = 0.0;
  if (prm.k == 0) {
    std::vector<int64_t> ix;
    for (int64_t u = 0; u < prm.U; ++u) {
      make_indices(prm, p, u, ix);
      double ci[7] = {0}, cj[7] = {0};
      for (int64_t g : ix) {
        ci[g % 7] += 1.0;
        cj[(3 * g + p + u) % 7] += 1.0;
      }
      for (int a = 0; a < 7; ++a)
        for (int b = 0; b < 7; ++b) total += ci[a] * cj[b] * 0.25 * (1 + (a + b) % 7);
    }
    return total;
  }
  update up;
  for (int64_t u = 0; u < prm.U; ++u) {
    make_update(prm, p, u, up);
    total += update_sum(up);
  }
  return total;
}

// Sum over all P processes of all their update sums. For k > 0 this
// regenerates P*U updates; at scale prefer local_expected_checksum + a
// sum-reduction.
inline double expected_checksum(const params& prm, int P) {
  double total = 0.0;
  for (int p = 0; p < P; ++p) total += local_expected_checksum(prm, p);
  return total;
}

// ---------------------------------------------------------------------------
// Distribution: 2D block-cyclic, MB = NB = 64, row-major ranks on Pr x Pc.
// ---------------------------------------------------------------------------

// Pr = largest divisor of P not above sqrt(P), Pc = P / Pr.
inline std::pair<int, int> grid_shape(int P) {
  if (P <= 0) throw std::invalid_argument("hessian: P must be positive");
  int pr = 1;
  for (int d = 1; static_cast<int64_t>(d) * d <= P; ++d)
    if (P % d == 0) pr = d;
  return {pr, P / pr};
}

// ScaLAPACK's NUMROC: how many of n rows/cols (block size nb, first block on
// process isrcproc) process iproc of nprocs owns.
inline int64_t numroc(int64_t n, int64_t nb, int iproc, int isrcproc, int nprocs) {
  const int64_t mydist = (nprocs + iproc - isrcproc) % nprocs;
  const int64_t nblocks = n / nb;
  int64_t num = (nblocks / nprocs) * nb;
  const int64_t extra = nblocks % nprocs;
  if (mydist < extra)
    num += nb;
  else if (mydist == extra)
    num += n % nb;
  return num;
}

// Grid coordinate that owns global row/column g (source process 0).
inline int owner(int64_t g, int64_t nb, int nprocs) { return static_cast<int>((g / nb) % nprocs); }
// Local index of global index g in its owner's storage.
inline int64_t global_to_local(int64_t g, int64_t nb, int nprocs) { return (g / (nb * nprocs)) * nb + g % nb; }
// Global index of local index l on grid coordinate iproc.
inline int64_t local_to_global(int64_t l, int64_t nb, int iproc, int nprocs) {
  return (l / nb) * nb * nprocs + static_cast<int64_t>(iproc) * nb + l % nb;
}

inline int owner_row(int64_t a, int Pr) { return owner(a, MB, Pr); }
inline int owner_col(int64_t b, int Pc) { return owner(b, NB, Pc); }
inline int owner_rank(int64_t a, int64_t b, int Pr, int Pc) { return owner_row(a, Pr) * Pc + owner_col(b, Pc); }
inline int64_t local_row(int64_t a, int Pr) { return global_to_local(a, MB, Pr); }
inline int64_t local_col(int64_t b, int Pc) { return global_to_local(b, NB, Pc); }

// Everything a rank needs to know about its share of the N x N matrix.
struct local_layout {
  int P = 1, Pr = 1, Pc = 1;
  int rank = 0, myrow = 0, mycol = 0;
  int64_t rows = 0, cols = 0;  // numroc local dimensions
  int64_t ld = 1;              // column-major leading dimension, max(1, rows)
  std::size_t size() const { return static_cast<std::size_t>(ld) * static_cast<std::size_t>(cols); }
};

inline local_layout make_layout(const params& prm, int P, int rank) {
  local_layout L;
  L.P = P;
  std::tie(L.Pr, L.Pc) = grid_shape(P);
  L.rank = rank;
  L.myrow = rank / L.Pc;
  L.mycol = rank % L.Pc;
  L.rows = numroc(prm.N, MB, L.myrow, 0, L.Pr);
  L.cols = numroc(prm.N, NB, L.mycol, 0, L.Pc);
  L.ld = std::max<int64_t>(1, L.rows);
  return L;
}

// ---------------------------------------------------------------------------
// Verification
// ---------------------------------------------------------------------------

// Sum of the local share (column-major, leading dimension ld), in double.
template <class T>
double local_sum(const T* local, int64_t ld, int64_t rows, int64_t cols) {
  double s = 0.0;
  for (int64_t c = 0; c < cols; ++c)
    for (int64_t r = 0; r < rows; ++r) s += static_cast<double>(local[r + c * ld]);
  return s;
}

// Regenerates every update of every one of the P processes, assembles the
// expected local share of grid position (myrow, mycol) and compares it with
// `local` (column-major, leading dimension ld). Exact for k = 0 (rtol = 0);
// for k > 0 pass a tolerance: an entry mismatches when
// |got - expected| > rtol * max(1, |expected|). Prints the first max_print
// mismatches to stderr and returns the number of mismatching entries.
// Cost: P*U update generations; meant for tiny/small sizes.
template <class T>
int64_t full_check(const params& prm, int P, int myrow, int mycol, const T* local, int64_t ld, double rtol = 0.0,
                   int max_print = 5) {
  const auto [Pr, Pc] = grid_shape(P);
  const int64_t rows = numroc(prm.N, MB, myrow, 0, Pr);
  const int64_t cols = numroc(prm.N, NB, mycol, 0, Pc);
  std::vector<T> expect(static_cast<std::size_t>(std::max<int64_t>(rows, 1) * cols), T(0));
  const int64_t eld = std::max<int64_t>(rows, 1);
  basic_update<T> up;
  std::vector<std::pair<int64_t, int64_t>> mine_r, mine_c;  // (i, local index)
  const int64_t n = prm.n();
  for (int p = 0; p < P; ++p) {
    for (int64_t u = 0; u < prm.U; ++u) {
      make_update(prm, p, u, up);
      mine_r.clear();
      mine_c.clear();
      for (int64_t i = 0; i < n; ++i) {
        const int64_t g = up.ix[static_cast<std::size_t>(i)];
        if (owner_row(g, Pr) == myrow) mine_r.emplace_back(i, local_row(g, Pr));
        if (owner_col(g, Pc) == mycol) mine_c.emplace_back(i, local_col(g, Pc));
      }
      for (auto [j, lc] : mine_c)
        for (auto [i, lr] : mine_r)
          expect[static_cast<std::size_t>(lr + lc * eld)] += up.B[static_cast<std::size_t>(i + j * n)];
    }
  }
  int64_t bad = 0;
  for (int64_t c = 0; c < cols; ++c) {
    for (int64_t r = 0; r < rows; ++r) {
      const double e = static_cast<double>(expect[static_cast<std::size_t>(r + c * eld)]);
      const double g = static_cast<double>(local[r + c * ld]);
      const bool ok = rtol == 0.0 ? g == e : std::fabs(g - e) <= rtol * std::max(1.0, std::fabs(e));
      if (!ok) {
        if (bad < max_print)
          std::fprintf(stderr, "full_check (%d,%d): H[%lld][%lld] = %.9g, expected %.9g\n", myrow, mycol,
                       static_cast<long long>(local_to_global(r, MB, myrow, Pr)),
                       static_cast<long long>(local_to_global(c, NB, mycol, Pc)), g, e);
        ++bad;
      }
    }
  }
  return bad;
}

}  // namespace bench::hessian
