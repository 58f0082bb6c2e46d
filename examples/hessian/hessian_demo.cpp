// The main demo: Gauss-Newton Hessian assembly as in global seismic
// inversion (French et al., IPDPS 2015), on the shared "hessian" workload.
//
// Every process produces its updates H[ix, ix] += B_u (and the gradient
// g[ix] += B_u * 1) asynchronously into convergent_matrix objects; after
// commit() the damped Gauss-Newton system (H + lambda I) dm = g is solved in
// place with ScaLAPACK's Cholesky (psposv) and the residual is checked.
//
//   ./x demo                       # small preset, 2 processes
//   NP=4 ./x demo --preset tiny --strategy alltoall
//   ./x demo --complex             # a Hermitian complex<float> Hessian, pcposv
// Options: --preset tiny|small|paper|large, --N, --U, --k, --lambda,
//          --strategy packets|alltoall, --complex, --no-solve
//
// --complex: frequency-domain inversions have complex Hessians. Each update
// becomes B + i S, where S(a, b) = sign(ix[b] - ix[a]) B(a, b) / 2, so the
// upper triangle (what fill_lower mirrors, conjugated, and what Cholesky
// reads) is that of a Hermitian matrix with a real diagonal.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "accrete/accrete.hpp"
#include "accrete/matrix/convergent_matrix.hpp"
#include "accrete/matrix/linalg.hpp"
#include "accrete/matrix/scalapack.hpp"
#include "hessian_workload.hpp"

namespace hw = bench::hessian;
using namespace accrete;

namespace {
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double max_over(double v) {
  double m;
  MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, world().mpi_comm());
  return m;
}
double sum_over(double v) {
  double m;
  MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_SUM, world().mpi_comm());
  return m;
}

[[noreturn]] void usage(const char* bad) {
  if (rank_me() == 0)
    std::fprintf(stderr,
                 "hessian_demo: bad argument '%s'\n"
                 "usage: hessian_demo [--preset tiny|small|paper|large] [--N n] [--U u] [--k k] [--lambda x]\n"
                 "                    [--strategy packets|alltoall] [--complex] [--no-solve]\n",
                 bad);
  MPI_Abort(world().mpi_comm(), 2);
  std::abort();
}
}  // namespace

template <class T>
int run(const hw::params& prm, const convergent_matrix_options& opt, const std::string& strategy, double lambda,
        bool solve) {
  constexpr bool cplx = !std::is_floating_point_v<T>;
  const int P = rank_n(), me = rank_me();
  const auto [pr, pc] = hw::grid_shape(P);
  process_grid grid(world().mpi_comm(), pr, pc);
  const std::int64_t N = prm.N, n = prm.n();

  convergent_matrix<T> H(N, N, grid, hw::MB, hw::NB, opt);
  convergent_matrix<T> g(N, 1, grid, hw::MB, hw::NB, opt);  // the gradient, an N x 1 column

  // ---- assembly -----------------------------------------------------------
  hw::update up;
  std::vector<T> gu(static_cast<std::size_t>(n)), Bc;
  double imag_sent = 0;  // --complex: the imaginary parts this process submits, for the checksum
  const std::int64_t zero[1] = {0};
  double t_gen = 0;
  barrier();
  const double t0 = now();
  for (std::int64_t u = 0; u < prm.U; ++u) {
    const double tg = now();
    hw::make_update(prm, me, u, up);
    const T* B = nullptr;
    if constexpr (cplx) {
      Bc.resize(up.B.size());
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t i = 0; i < n; ++i) {
          const float b = up.B[static_cast<std::size_t>(i + j * n)];
          const std::int64_t d = up.ix[static_cast<std::size_t>(j)] - up.ix[static_cast<std::size_t>(i)];
          const float im = d > 0 ? b / 2 : d < 0 ? -b / 2 : 0.0f;
          Bc[static_cast<std::size_t>(i + j * n)] = T(b, im);
          imag_sent += im;
        }
      B = Bc.data();
    } else {
      B = up.B.data();
    }
    for (std::int64_t i = 0; i < n; ++i) {  // g_u = B_u * 1 (a residual of ones)
      T s = 0;
      for (std::int64_t j = 0; j < n; ++j) s += B[static_cast<std::size_t>(i + j * n)];
      gu[static_cast<std::size_t>(i)] = s;
    }
    t_gen += now() - tg;
    H.update(B, n, up.ix, up.ix);
    g.update(gu.data(), n, up.ix, zero);
  }
  H.commit();
  g.commit();
  const double t_asm = max_over(now() - t0);
  const auto st = H.stats();

  // ---- verification: checksum of H against the workload's definition --------
  // (--complex: real parts against it, imaginary parts against what was submitted.)
  double re = 0, im = 0;
  for (std::int64_t c = 0; c < H.local_cols(); ++c)
    for (std::int64_t r = 0; r < H.local_rows(); ++r) {
      const T x = H.local()[r + c * H.lld()];
      re += double(std::real(x));
      im += double(std::imag(x));
    }
  const double checksum = sum_over(re), expected = hw::expected_checksum(prm, P);
  const double imag_sum = sum_over(im), imag_expected = sum_over(imag_sent);
  auto close = [&](double got, double want) {
    return prm.k == 0 ? got == want : std::abs(got - want) <= 1e-5 * std::max(1.0, std::abs(expected));
  };
  const bool sum_ok = close(checksum, expected) && close(imag_sum, imag_expected);

  if (me == 0) {
    const double elems = double(P) * double(prm.U) * double(n) * double(n);
    std::printf("accrete Hessian assembly (convergent_matrix<%s>, strategy %s)\n", cplx ? "complex<float>" : "float",
                strategy.c_str());
    std::printf("  N = %lld, update n = %lld (Lr %lld x Ll %lld), U = %lld per process, k = %d\n", (long long)N,
                (long long)n, (long long)prm.Lr, (long long)prm.Ll, (long long)prm.U, prm.k);
    std::printf("  P = %d processes on a %d x %d grid, blocks %lld x %lld; matrix %.1f MiB\n", P, pr, pc,
                (long long)hw::MB, (long long)hw::NB, double(N) * double(N) * sizeof(T) / (1 << 20));
    std::printf("  assembly time T = %.3f s (max over processes, incl. generation %.3f s on rank 0)\n", t_asm, t_gen);
    std::printf("  %.1f updates/s, %.2f GB/s applied\n", double(P) * double(prm.U) / t_asm,
                elems * sizeof(T) / t_asm / 1e9);
  }
  const double b = max_over(st.t_bin), mv = max_over(st.t_move), ap = max_over(st.t_apply), wt = max_over(st.t_wait);
  if (me == 0) {
    std::printf(
        "  time breakdown (max over processes): binning %.3f s, moving %.3f s, applying %.3f s, "
        "waiting %.3f s\n",
        b, mv, ap, wt);
    if constexpr (cplx)
      std::printf("  checksum %.6f%+.6fi, expected %.6f%+.6fi: %s\n", checksum, imag_sum, expected, imag_expected,
                  sum_ok ? "OK" : "MISMATCH");
    else
      std::printf("  checksum %.6f, expected %.6f: %s\n", checksum, expected, sum_ok ? "OK" : "MISMATCH");
  }
  int rc = sum_ok ? 0 : 1;

  // ---- damped Gauss-Newton step with ScaLAPACK ---------------------------------
  if (solve) {
    // The Hessian is used through its upper triangle (as Cholesky does);
    // mirror it to get the symmetric (complex: Hermitian) matrix the
    // residual is checked against.
    H.fill_lower();
    // Gershgorin: lambda above the largest absolute row sum makes H + lambda I
    // positive definite for any symmetric or Hermitian H, so the Cholesky step is defined.
    if (lambda < 0) lambda = 1.0001 * linalg::norm('1', H) + 1.0;
    linalg::add_to_diagonal(H, T(float(lambda)));
    // Keep A = H + lambda I and g for the residual: the solve overwrites H
    // with its Cholesky factor and g with the step dm. (The Python example,
    // python/examples/hessian.py, makes the same calls.)
    convergent_matrix<T> A(N, N, grid, hw::MB, hw::NB, opt), r(N, 1, grid, hw::MB, hw::NB, opt);
    std::copy(H.local(), H.local() + H.lld() * H.local_cols(), A.local());
    std::copy(g.local(), g.local() + g.lld() * g.local_cols(), r.local());
    const double gnorm = linalg::norm('F', g);
    int info = 0;
    barrier();
    const double ts = now();
    try {
      linalg::posv(H, g);  // ScaLAPACK psposv (complex: pcposv) in place
    } catch (const accrete::error& e) {
      info = -1;
      if (me == 0) std::fprintf(stderr, "%s\n", e.what());
    }
    const double t_solve = max_over(now() - ts);
    linalg::gemm('N', 'N', T(-1), A, g, T(1), r);  // r = g - A dm
    const double rnorm = linalg::norm('F', r), xnorm = linalg::norm('F', g), anorm = linalg::norm('F', A);
    const double rel = double(rnorm) / (double(anorm) * double(xnorm) + double(gnorm));
    const bool solve_ok = info == 0 && rel < 1e-5;
    if (me == 0) {
      std::printf("damped Gauss-Newton step (H + lambda I) dm = g, lambda = %.6g, ScaLAPACK %s\n", lambda,
                  cplx ? "pcposv" : "psposv");
      std::printf("  solve time %.3f s, info = %d, |dm| = %.6g, |g| = %.6g\n", t_solve, info, xnorm, gnorm);
      std::printf("  relative residual |g - (H + lambda I) dm| / (|A| |dm| + |g|) = %.3e: %s\n", rel,
                  solve_ok ? "OK" : "FAILED");
    }
    if (!solve_ok) rc = 1;
  }
  return rc;
}

int main(int argc, char** argv) {
  runtime rt;
  hw::params prm = hw::preset("small");
  convergent_matrix_options opt;
  std::string strategy = "packets";
  double lambda = -1;
  bool solve = true, complex = false;
  for (int a = 1; a < argc; ++a) {
    std::string s = argv[a];
    auto val = [&]() -> std::string { return a + 1 < argc ? argv[++a] : (usage(argv[a]), ""); };
    if (s == "--preset") {
      try {
        prm = hw::preset(val());
      } catch (const std::exception&) {
        usage(argv[a]);
      }
    } else if (s == "--N")
      prm.N = std::stoll(val());
    else if (s == "--U")
      prm.U = std::stoll(val());
    else if (s == "--k")
      prm.k = std::stoi(val());
    else if (s == "--lambda")
      lambda = std::stod(val());
    else if (s == "--no-solve")
      solve = false;
    else if (s == "--complex")
      complex = true;
    else if (s == "--strategy") {
      strategy = val();
      if (strategy == "packets")
        opt.strategy = update_strategy::packets;
      else if (strategy == "alltoall")
        opt.strategy = update_strategy::alltoall;
      else
        usage(strategy.c_str());
    } else
      usage(argv[a]);
  }
  prm.validate();
  return complex ? run<std::complex<float>>(prm, opt, strategy, lambda, solve)
                 : run<float>(prm, opt, strategy, lambda, solve);
}
