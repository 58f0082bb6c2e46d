// Standalone driver for the plain-MPI hessian baselines (testing aid; the
// benchmark driver proper calls the same functions).
//
//   baseline_main [--preset tiny|small|paper|large] [--k K] [--U U] [--reps R]
//                 [--only accumulate|accumulate-flushall|alltoallv|bound]
//                 [--full-check]            (always on for tiny)
//                 [--ld-pad X]              (odd ranks use ld = rows + X)
#include "mpi_baselines.hpp"  // first: it sets up <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "hessian_workload.hpp"

namespace bh = bench::hessian;

namespace {

struct options {
  std::string preset = "tiny";
  int k = -1;
  int64_t U = -1;
  int reps = 1;
  std::string only;
  bool full_check = false;
  int64_t ld_pad = 0;  // extra leading-dimension padding (tests ld > rows)
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument("missing value after " + a);
      return argv[++i];
    };
    if (a == "--preset")
      o.preset = value();
    else if (a == "--k")
      o.k = std::stoi(value());
    else if (a == "--U")
      o.U = std::stoll(value());
    else if (a == "--reps")
      o.reps = std::stoi(value());
    else if (a == "--only")
      o.only = value();
    else if (a == "--full-check")
      o.full_check = true;
    else if (a == "--ld-pad")
      o.ld_pad = std::stoll(value());
    else
      throw std::invalid_argument("unknown argument " + a);
  }
  return o;
}

int run(int argc, char** argv) {
  const options opt = parse(argc, argv);
  bh::params prm = bh::preset(opt.preset);
  if (opt.k >= 0) prm.k = opt.k;
  if (opt.U >= 0) prm.U = opt.U;
  prm.validate();

  int P = 0, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  bh::local_layout L = bh::make_layout(prm, P, rank);
  L.ld += opt.ld_pad * (rank % 2);  // differs between ranks on purpose
  const bool full = opt.full_check || opt.preset == "tiny";

  // Each rank's own contribution, reduced: scales where expected_checksum(P)
  // (every rank regenerating everything) would not for k > 0.
  const double mine = bh::local_expected_checksum(prm, rank);
  double expected = 0;
  MPI_Allreduce(&mine, &expected, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  if (prm.k == 0 && rank == 0 && expected != bh::expected_checksum(prm, P)) {
    std::fprintf(stderr, "expected_checksum disagrees with the reduced local checksums\n");
    return 1;
  }
  if (rank == 0)
    std::printf("hessian baselines: preset=%s N=%lld n=%lld U=%lld k=%d P=%d grid=%dx%d expected=%.17g\n",
                opt.preset.c_str(), static_cast<long long>(prm.N), static_cast<long long>(prm.n()),
                static_cast<long long>(prm.U), prm.k, P, L.Pr, L.Pc, expected);

  std::vector<float> local(L.size());
  bool ok = true;
  // Best T per baseline over the repetitions (the machine may be shared).
  std::vector<std::pair<std::string, double>> best;
  auto report = [&](const char* name, const bh::baseline_timing& t, bool check_local) {
    auto it = std::find_if(best.begin(), best.end(), [&](const auto& b) { return b.first == name; });
    if (it == best.end())
      best.emplace_back(name, t.total);
    else
      it->second = std::min(it->second, t.total);
    const bool exact = prm.k == 0;
    const bool sum_ok =
        exact ? t.checksum == expected : std::fabs(t.checksum - expected) <= 1e-5 * std::max(1.0, std::fabs(expected));
    long long bad = 0;
    if (check_local && full) {
      const long long mybad = bh::full_check(prm, P, L.myrow, L.mycol, local.data(), L.ld, exact ? 0.0 : 1e-4);
      MPI_Allreduce(&mybad, &bad, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    }
    ok = ok && sum_ok && bad == 0;
    if (rank == 0) {
      const double upd = static_cast<double>(P) * static_cast<double>(prm.U);
      const double nn = static_cast<double>(prm.n()) * static_cast<double>(prm.n());
      std::printf(
          "%-20s T=%.4f s  gen=%.4f bin=%.4f comm=%.4f apply=%.4f setup=%.4f  upd/s=%.1f  GB/s=%.2f"
          "  moved=%.1f MB  checksum %s%s\n",
          name, t.total, t.gen, t.bin, t.comm, t.apply, t.setup, upd / t.total, upd * nn * 4 / t.total / 1e9,
          static_cast<double>(t.bytes) / 1e6, sum_ok ? "ok" : "WRONG",
          check_local && full ? (bad == 0 ? "  full_check ok" : "  full_check FAILED") : "");
      if (!sum_ok) std::printf("  checksum %.17g expected %.17g\n", t.checksum, expected);
    }
  };

  for (int r = 0; r < opt.reps; ++r) {
    if (opt.only.empty() || opt.only == "accumulate") {
      std::fill(local.begin(), local.end(), 0.0f);
      report("accumulate", bh::baseline_accumulate(prm, MPI_COMM_WORLD, local.data(), L.ld, L.rows, L.cols), true);
    }
    if (opt.only == "accumulate-flushall") {
      std::fill(local.begin(), local.end(), 0.0f);
      report("accumulate-flushall",
             bh::baseline_accumulate(prm, MPI_COMM_WORLD, local.data(), L.ld, L.rows, L.cols,
                                     bh::accumulate_sync::flush_all_per_update),
             true);
    }
    if (opt.only.empty() || opt.only == "alltoallv") {
      std::fill(local.begin(), local.end(), 0.0f);
      report("alltoallv", bh::baseline_alltoallv(prm, MPI_COMM_WORLD, local.data(), L.ld, L.rows, L.cols), true);
    }
    if (opt.only.empty() || opt.only == "bound")
      report("local_apply_reference", bh::local_apply_reference(prm, MPI_COMM_WORLD), false);
  }
  if (rank == 0 && opt.reps > 1)
    for (const auto& [name, T] : best) std::printf("best %-20s T=%.4f s\n", name.c_str(), T);
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 0;
  try {
    rc = run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "baseline_main: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Finalize();
  return rc;
}
