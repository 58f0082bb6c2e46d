// Patch put/get/acc latency and bandwidth: square patches from 1x1 to
// 1024x1024 of a block-distributed 2048 x 2048 array of doubles, every
// process targeting the next rank's part at once. accrete's dist_array,
// plain MPI RMA (derived datatypes under lock_all) and Global Arrays run
// interleaved in one run; a strided memcpy of the same patch is the
// node-local bound. Run it node-local and with ACCRETE_NODE_SIZE=1 (every
// process its own node: accrete's MPI path; the peers are unaffected).
//
//   bench_array_rma [--reps R] [--sizes 1,4,...] [--json FILE]
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "array_peers.hpp"
#include "harness.hpp"

namespace {

constexpr std::int64_t n = 2048;
enum class op { put, get, acc };
const char* name_of(op o) { return o == op::put ? "put" : o == op::get ? "get" : "acc"; }

// Iterations so that one measurement moves ~64 MiB (at least 20, at most 2000).
int iterations(std::int64_t s) {
  return int(std::max<std::int64_t>(20, std::min<std::int64_t>(2000, (std::int64_t(8) << 20) / (s * s))));
}

// Seconds per completed operation (put and acc include the flush that
// makes them visible at the target), max over processes.
template <class A>
double time_op(A& a, op o, const accrete::patch& p, std::vector<double>& buf) {
  const int it = iterations(p.rows());
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = bench::now();
  for (int k = 0; k < it; ++k) {
    if (o == op::get) {
      a.get(p, buf.data(), p.rows());
    } else {
      if (o == op::put)
        a.put(p, buf.data(), p.rows());
      else
        a.acc(p, buf.data(), p.rows());
      a.flush();
    }
  }
  const double t = (bench::now() - t0) / it;
  return bench::reduce(t, MPI_MAX);
}

// The same patch copied between two buffers with the array's leading dimension.
double time_memcpy(std::int64_t s, std::vector<double>& src, std::vector<double>& dst) {
  const int it = iterations(s);
  const double t0 = bench::now();
  for (int k = 0; k < it; ++k)
    for (std::int64_t j = 0; j < s; ++j)
      std::memcpy(dst.data() + j * n, src.data() + j * n, std::size_t(s) * sizeof(double));
  return bench::reduce((bench::now() - t0) / it, MPI_MAX);
}

struct cell {
  std::string impl;
  op o;
  std::int64_t s;
  std::vector<double> secs;
};

}  // namespace

int main(int argc, char** argv) {
  bench::session session(argc, argv);
  int reps = 3;
  std::vector<std::int64_t> sizes = {1, 4, 16, 64, 256, 1024};
  std::string json_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has = i + 1 < argc;
    if (a == "--reps" && has) {
      reps = std::atoi(argv[++i]);
    } else if (a == "--json" && has) {
      json_path = argv[++i];
    } else if (a == "--sizes" && has) {
      sizes.clear();
      for (std::string s = argv[++i]; !s.empty();) {
        const auto c = s.find(',');
        sizes.push_back(std::atoll(s.substr(0, c).c_str()));
        s = c == std::string::npos ? "" : s.substr(c + 1);
      }
    } else {
      std::fprintf(stderr, "usage: bench_array_rma [--reps R] [--sizes 1,4,..] [--json FILE]\n");
      return 2;
    }
  }
  int me = 0, np = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  const auto d = bench::make_distribution(bench::dist_kind::block, n, 64);
  const accrete::patch part = d.owned((me + 1) % np);
  for (std::int64_t s : sizes)
    if (s < 1 || s > part.rows() || s > part.cols()) {
      if (me == 0) std::fprintf(stderr, "bench_array_rma: size %lld does not fit in one part\n", (long long)s);
      return 2;
    }

  bench::accrete_array acc_a(bench::dist_kind::block, n, 64);
  bench::mpi_array mpi_a(bench::dist_kind::block, n, 64);
#ifdef ACCRETE_BENCH_GA
  bench::ga_array ga_a(bench::dist_kind::block, n, 64);
#endif
  std::vector<double> buf(std::size_t(1024 * 1024), 0.25), src(std::size_t(n * 1024), 0.5), dst(src.size());
  std::vector<cell> cells;
  std::vector<std::vector<double>> mem(sizes.size());
  for (op o : {op::put, op::get, op::acc})
    for (std::int64_t s : sizes)
      for (const char* impl : {"accrete", "mpi", "ga"})
        if (std::string(impl) != "ga" || bench::session::have_ga()) cells.push_back({impl, o, s, {}});
  // Cells of one (op, size) are consecutive, one per implementation. The
  // first of them ran measurably slower (put 512 x 512 over MPI: whichever
  // ran first was 1.1-1.2x the second, in either order), so each
  // repetition starts the group at the next implementation.
  const std::size_t nimpl = bench::session::have_ga() ? 3 : 2;
  for (int r = 0; r < reps; ++r) {
    for (std::size_t k = 0; k < sizes.size(); ++k) mem[k].push_back(time_memcpy(sizes[k], src, dst));
    for (std::size_t i = 0; i < cells.size(); ++i) {
      const std::size_t g = i / nimpl * nimpl;
      cell& c = cells[g + (i - g + std::size_t(r)) % nimpl];
      const accrete::patch p{part.row_lo, part.row_lo + c.s, part.col_lo, part.col_lo + c.s};
      if (c.impl == "accrete")
        c.secs.push_back(time_op(acc_a, c.o, p, buf));
      else if (c.impl == "mpi")
        c.secs.push_back(time_op(mpi_a, c.o, p, buf));
#ifdef ACCRETE_BENCH_GA
      else
        c.secs.push_back(time_op(ga_a, c.o, p, buf));
#endif
    }
  }

  const char* ns = std::getenv("ACCRETE_NODE_SIZE");
  const bool mpi_path = ns && std::atoi(ns) == 1 && np > 1;
  if (me == 0) {
    std::printf("array_rma %s P=%d %s: %lld x %lld block array, each process -> next rank's part; median of %d; "
                "us per completed op, MB/s\n",
                bench::mpi_name().c_str(), np, mpi_path ? "ACCRETE_NODE_SIZE=1 (MPI path)" : "node-local",
                (long long)n, (long long)n, reps);
    std::printf("%-4s %6s %-8s %12s %10s %14s %14s\n", "op", "patch", "impl", "latency [us]", "MB/s",
                "T/T_mpi", "T/T_memcpy");
  }
  std::string js = "{\"bench\": \"array_rma\", \"mpi\": \"" + bench::mpi_name() + "\", \"P\": " + std::to_string(np) +
                   ", \"path\": \"" + (mpi_path ? "mpi" : "node_local") + "\", \"n\": " + std::to_string(n) +
                   ", \"reps\": " + std::to_string(reps) + ", \"cells\": [";
  double worst_vs_mpi = 0, worst_vs_memcpy = 0, worst_vs_memcpy_bw = 0, min_ga = 1e300;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const cell& c = cells[i];
    const cell *m = &c, *a = &c;
    for (const cell& o : cells)
      if (o.o == c.o && o.s == c.s) {
        if (o.impl == "mpi") m = &o;
        if (o.impl == "accrete") a = &o;
      }
    const std::size_t k = std::size_t(std::find(sizes.begin(), sizes.end(), c.s) - sizes.begin());
    const double t = bench::median(c.secs), bytes = double(c.s * c.s) * sizeof(double);
    const double vs_mpi = t / bench::median(m->secs), vs_mem = t / bench::median(mem[k]);
    if (me == 0)
      std::printf("%-4s %6lld %-8s %12.2f %10.1f %14.2f %14.2f\n", name_of(c.o), (long long)c.s, c.impl.c_str(),
                  t * 1e6, bytes / t / 1e6, vs_mpi, vs_mem);
    std::string rl = "[";
    for (std::size_t q = 0; q < c.secs.size(); ++q) rl += (q ? ", " : "") + bench::num(c.secs[q]);
    js += std::string(i ? ", " : "") + "{\"op\": \"" + name_of(c.o) + "\", \"patch\": " + std::to_string(c.s) +
          ", \"impl\": \"" + c.impl + "\", \"seconds\": " + bench::num(t) +
          ", \"mb_per_s\": " + std::to_string(bytes / t / 1e6) + ", \"over_mpi\": " + std::to_string(vs_mpi) +
          ", \"over_memcpy\": " + std::to_string(vs_mem) + ", \"reps\": " + rl + "]}";
    if (c.impl == "accrete") {
      worst_vs_mpi = std::max(worst_vs_mpi, vs_mpi);
      worst_vs_memcpy = std::max(worst_vs_memcpy, vs_mem);
      // From 64 x 64 (32 KiB) bandwidth dominates; below, any completed
      // operation (a fence at least) costs more than copying a few bytes.
      if (c.s >= 64) worst_vs_memcpy_bw = std::max(worst_vs_memcpy_bw, vs_mem);
    }
    if (c.impl == "ga") min_ga = std::min(min_ga, t / bench::median(a->secs));
  }
  js += std::string("], \"summary\": {\"max_accrete_over_mpi\": ") + std::to_string(worst_vs_mpi) +
        ", \"goal_max_accrete_over_mpi\": 1.10, \"max_accrete_over_memcpy\": " + std::to_string(worst_vs_memcpy) +
        ", \"max_accrete_over_memcpy_from_64\": " + std::to_string(worst_vs_memcpy_bw);
  if (bench::session::have_ga()) js += ", \"min_ga_over_accrete\": " + std::to_string(min_ga);
  js += "}}\n";
  if (me == 0) {
    std::printf("summary: accrete at most %.2fx plain MPI RMA (goal <= 1.10 on the MPI path), at most %.2fx a strided "
                "memcpy (%.2fx from 64 x 64)",
                worst_vs_mpi, worst_vs_memcpy, worst_vs_memcpy_bw);
    if (bench::session::have_ga()) std::printf(", GA at least %.2fx accrete", min_ga);
    std::printf("\n");
    bench::write_file(json_path, js);
  }
  return 0;
}
