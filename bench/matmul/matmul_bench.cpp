// One-sided matrix multiply (../shared/bench/matmul.md; seed 003 §V-B2,
// Fig. 8): C = op(A) op(B) with a shared counter handing out tile triples;
// each task gets two tiles, runs DGEMM, accumulates into C. accrete's
// dist_array, plain MPI RMA and Global Arrays run the same algorithm in one
// run, interleaved, against the DGEMM bound measured in the same run.
//
//   bench_matmul [--preset tiny|small|paper] [--reps R] [--json FILE]
#include <cblas.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "array_peers.hpp"
#include "harness.hpp"

namespace {

double a_value(std::int64_t i, std::int64_t j) { return double((3 * i + 5 * j) % 8) * 0.25 - 1; }
double b_value(std::int64_t i, std::int64_t j) { return double((7 * i + 2 * j) % 8) * 0.25 - 1; }

using params = bench::preset_cli;

struct outcome {
  double seconds = 0;
  bool ok = true;
};

// The serial answers for one op, computed once: C = op(A) op(B) column-major
// (tiny and small only), and the sum of C = sum_k colsum(op A)_k rowsum(op B)_k.
struct reference {
  std::vector<double> c;
  double sum = 0;
};
reference serial_reference(std::int64_t n, bool ta, bool tb) {
  reference r;
  for (std::int64_t k = 0; k < n; ++k) {
    double ca = 0, rb = 0;  // column k of op(A), row k of op(B)
    for (std::int64_t i = 0; i < n; ++i) {
      ca += ta ? a_value(k, i) : a_value(i, k);
      rb += tb ? b_value(i, k) : b_value(k, i);
    }
    r.sum += ca * rb;
  }
  if (n > 1024) return r;
  std::vector<double> a(std::size_t(n * n)), b(a.size());
  r.c.resize(a.size());
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) {
      a[std::size_t(j * n + i)] = a_value(i, j);
      b[std::size_t(j * n + i)] = b_value(i, j);
    }
  cblas_dgemm(CblasColMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(n), int(n), int(n),
              1.0, a.data(), int(n), b.data(), int(n), 0.0, r.c.data(), int(n));
  return r;
}

// Fills A and B (untimed), runs the timed multiply, verifies C.
template <class A>
outcome run_once(const params& p, bench::dist_kind d, bool ta, bool tb, const reference& ref) {
  const std::int64_t n = p.n, t = p.t, nt = n / t;
  const int me = p.me, np = p.np;
  A a(d, n, 64), b(d, n, 64), c(d, n, 64);
  auto tile = [&](std::int64_t bi, std::int64_t bj) { return accrete::patch{bi * t, bi * t + t, bj * t, bj * t + t}; };
  std::vector<double> x(std::size_t(t * t)), y(std::size_t(t * t)), z(std::size_t(t * t));
  for (std::int64_t q = me; q < nt * nt; q += np) {
    const std::int64_t bi = q / nt, bj = q % nt;
    for (std::int64_t j = 0; j < t; ++j)
      for (std::int64_t i = 0; i < t; ++i) {
        x[std::size_t(j * t + i)] = a_value(bi * t + i, bj * t + j);
        y[std::size_t(j * t + i)] = b_value(bi * t + i, bj * t + j);
      }
    a.put(tile(bi, bj), x.data(), t);
    b.put(tile(bi, bj), y.data(), t);
  }
  a.sync();
  b.sync();
  c.zero();
  c.reset_counter();

  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = bench::now();
  for (std::int64_t q = c.next_task(); q < nt * nt * nt; q = c.next_task()) {
    const std::int64_t bi = q / (nt * nt), bj = (q / nt) % nt, bk = q % nt;
    a.get(ta ? tile(bk, bi) : tile(bi, bk), x.data(), t);
    b.get(tb ? tile(bj, bk) : tile(bk, bj), y.data(), t);
    cblas_dgemm(CblasColMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(t), int(t),
                int(t), 1.0, x.data(), int(t), y.data(), int(t), 0.0, z.data(), int(t));
    c.acc(tile(bi, bj), z.data(), t);
  }
  c.sync();
  outcome o;
  o.seconds = bench::reduce(bench::now() - t0, MPI_MAX);

  // Every element against the serial product when it was computed (tiny,
  // small); otherwise the sum of C against sum_k colsum(op A)_k rowsum(op B)_k.
  long bad = 0;
  double sum = 0;
  for (std::int64_t q = me; q < nt * nt; q += np) {
    const std::int64_t bi = q / nt, bj = q % nt;
    c.get(tile(bi, bj), z.data(), t);
    for (std::int64_t j = 0; j < t; ++j)
      for (std::int64_t i = 0; i < t; ++i) {
        const double v = z[std::size_t(j * t + i)];
        sum += v;
        if (!ref.c.empty() && v != ref.c[std::size_t((bj * t + j) * n + bi * t + i)]) ++bad;
      }
  }
  sum = bench::reduce(sum, MPI_SUM);
  bad = long(bench::reduce(double(bad), MPI_SUM));
  const double expect = ref.sum;
  o.ok = bad == 0 && sum == expect;
  if (!o.ok && me == 0)
    std::fprintf(stderr, "matmul %s: %ld wrong elements, sum %.17g expected %.17g\n", A::name, bad, sum, expect);
  return o;
}

// GFLOP/s of one process's t x t x t DGEMM with every process multiplying
// at once (core sharing included), summed over processes: the bound.
double dgemm_bound(std::int64_t t) {
  std::vector<double> x(std::size_t(t * t), 0.5), y(x.size(), 0.25), z(x.size());
  std::vector<double> rates;
  for (int r = 0; r < 5; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = bench::now();
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, int(t), int(t), int(t), 1.0, x.data(), int(t), y.data(),
                int(t), 0.0, z.data(), int(t));
    rates.push_back(2.0 * double(t) * double(t) * double(t) / (bench::now() - t0) / 1e9);
  }
  return bench::reduce(bench::median(rates), MPI_SUM);
}

struct cell {
  std::string impl, op;
  bench::dist_kind dist;
  std::vector<double> secs;
  bool ok = true;
};

}  // namespace

// OpenBLAS reads OPENBLAS_NUM_THREADS when it is loaded, before main; the
// spec's one DGEMM thread per process is set here too (weak: another BLAS
// may be behind libblas.so.3 and then has no such call).
extern "C" void openblas_set_num_threads(int) __attribute__((weak));

int main(int argc, char** argv) {
  if (openblas_set_num_threads) openblas_set_num_threads(1);
  bench::session s(argc, argv);
  params p;
  if (!bench::parse_preset_cli(argc, argv, "bench_matmul", {{256, 64}, {1024, 256}, {4096, 512}}, p)) return 2;
  const int reps = p.reps;
  const int me = p.me, np = p.np;
  const double flops = 2.0 * double(p.n) * double(p.n) * double(p.n);

  std::vector<double> bounds;
  std::vector<cell> cells;
  const char* ops[] = {"NN", "NT", "TN", "TT"};
  for (auto d : {bench::dist_kind::block, bench::dist_kind::block_cyclic, bench::dist_kind::element_cyclic})
    for (const char* op : ops) {
      const bool ta = op[0] == 'T', tb = op[1] == 'T';
      const reference ref = serial_reference(p.n, ta, tb);
      std::vector<std::string> impls = {"accrete", "mpi"};
      // GA runs the two distributions the spec names for it; its
      // element-cyclic patches go element by element (see hf_proxy).
      if (bench::session::have_ga() && d != bench::dist_kind::element_cyclic) impls.push_back("ga");
      const std::size_t first = cells.size();
      for (auto& name : impls) cells.push_back({name, op, d, {}, true});
      for (int r = 0; r < reps; ++r) {
        bounds.push_back(dgemm_bound(p.t));
        for (std::size_t k = 0; k < impls.size(); ++k) {
          cell& c = cells[first + k];
          outcome o;
          if (c.impl == "accrete")
            o = run_once<bench::accrete_array>(p, d, ta, tb, ref);
          else if (c.impl == "mpi")
            o = run_once<bench::mpi_array>(p, d, ta, tb, ref);
#ifdef ACCRETE_BENCH_GA
          else
            o = run_once<bench::ga_array>(p, d, ta, tb, ref);
#endif
          c.secs.push_back(o.seconds);
          c.ok = c.ok && o.ok;
        }
      }
    }

  const double bound = bench::median(bounds);
  bool all_ok = true;
  double min_ga = 1e300, min_mpi = 1e300, min_bound_frac = 1e300;
  if (me == 0) {
    std::printf("matmul %s P=%d preset=%s n=%lld t=%lld reps=%d; DGEMM bound %.2f GFLOP/s (P x one process's "
                "t^3 DGEMM, all at once)\n",
                bench::mpi_name().c_str(), np, p.preset.c_str(), (long long)p.n, (long long)p.t, reps, bound);
    std::printf("%-15s %-3s %-8s %9s %9s %9s %12s %s\n", "distribution", "op", "impl", "T [s]", "GFLOP/s", "of bound",
                "T/T_accrete", "check");
  }
  std::string js = "{\"bench\": \"matmul\", \"mpi\": \"" + bench::mpi_name() + "\", \"P\": " + std::to_string(np) +
                   ", \"preset\": \"" + p.preset + "\", \"n\": " + std::to_string(p.n) +
                   ", \"t\": " + std::to_string(p.t) + ", \"reps\": " + std::to_string(reps) +
                   ", \"dgemm_bound_gflops\": " + std::to_string(bound) + ", \"cells\": [";
  std::string summary;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const cell& c = cells[i];
    const cell* ref = &c;
    for (const cell& o : cells)
      if (o.dist == c.dist && o.op == c.op && o.impl == "accrete") ref = &o;
    const double t = bench::median(c.secs), rate = flops / t / 1e9, ratio = t / bench::median(ref->secs);
    all_ok = all_ok && c.ok;
    if (me == 0)
      std::printf("%-15s %-3s %-8s %9.3f %9.2f %8.1f%% %12.2f %s\n", bench::name_of(c.dist), c.op.c_str(),
                  c.impl.c_str(), t, rate, 100 * rate / bound, ratio, c.ok ? "OK" : "WRONG");
    std::string reps_list = "[";
    for (std::size_t k = 0; k < c.secs.size(); ++k) reps_list += (k ? ", " : "") + bench::num(c.secs[k]);
    js += std::string(i ? ", " : "") + "{\"distribution\": \"" + bench::name_of(c.dist) + "\", \"op\": \"" + c.op +
          "\", \"impl\": \"" + c.impl + "\", \"seconds\": " + bench::num(t) +
          ", \"gflops\": " + std::to_string(rate) + ", \"fraction_of_bound\": " + std::to_string(rate / bound) +
          ", \"over_accrete\": " + std::to_string(ratio) + ", \"reps\": " + reps_list + "]" +
          ", \"verified\": " + (c.ok ? "true" : "false") + "}";
    if (c.impl == "accrete") min_bound_frac = std::min(min_bound_frac, rate / bound);
    if (c.impl == "ga") min_ga = std::min(min_ga, ratio);
    if (c.impl == "mpi") min_mpi = std::min(min_mpi, ratio);
  }
  summary = "\"min_accrete_fraction_of_bound\": " + std::to_string(min_bound_frac) +
            ", \"goal_fraction_of_bound\": 0.85, \"min_mpi_over_accrete\": " + std::to_string(min_mpi);
  if (bench::session::have_ga())
    summary += ", \"min_ga_over_accrete\": " + std::to_string(min_ga) + ", \"goal_ga_over_accrete\": 1.4";
  js += "], \"summary\": {" + summary + ", \"verified\": " + (all_ok ? "true" : "false") + "}}\n";
  if (me == 0) {
    std::printf("summary: accrete >= %.1f%% of the DGEMM bound (goal 85%% at paper, P=2); min T_mpi/T_accrete %.2f",
                100 * min_bound_frac, min_mpi);
    if (bench::session::have_ga()) std::printf(", min T_ga/T_accrete %.2f (goal >= 1.4)", min_ga);
    std::printf("; results %s\n", all_ok ? "verified" : "WRONG");
    bench::write_file(p.json, js);
  }
  return all_ok ? 0 : 1;
}
