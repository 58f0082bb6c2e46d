// bench_hessian: the shared "hessian" workload (shared/bench/hessian-workload.md)
// on accrete's convergent_matrix (every strategy) and on the plain-MPI
// baselines of mpi_baselines.hpp, in one run, with two yardsticks:
//  - the physical bound: compute-only time plus the bytes the assembly must
//    move (12 per element: read the update, read-modify-write the target)
//    at the STREAM-like bandwidth measured in the same run by all P
//    processes at once;
//  - the local-apply reference (same adds into one private array; not a
//    bound: a real assembly can beat it slightly).
// Repetitions are interleaved (rep 1 of every implementation, then rep 2,
// ...). All implementations must produce the identical checksum.
//
//   mpiexec -n P bench_hessian [--preset paper] [--k 0] [--U U] [--reps 3] [--json out.json]
//                              [--only name,name] [--no-baselines] [--rounds R]
//
// --rounds R: R rounds of the workload per repetition, each ended by its own
// assembly (accrete: one matrix for all rounds, reopen + commit per round;
// the baselines: one call per round into the same storage, as a user
// would); T is then the time per round.
//
// --U U: U updates per process instead of the preset's (strong scaling:
// fixed U x P).
//
// --straggle F: the last process generates each update F times (a process
// that computes F times longer between updates; values unchanged), in
// every implementation. --thread-ab: adds accrete_packets_thread, the
// default strategy with the progress thread (the runtime is restarted with
// init_options::progress_thread around each of its repetitions; MPI is
// initialised with MPI_THREAD_MULTIPLE). "peak buf" is the largest
// buffered + in-flight bytes of any process (assembly_stats::peak_buffered).
// --coalesce BYTES, --buffer-cap BYTES: convergent_matrix_options'
// coalesce_bytes and buffer_cap for the accrete implementations.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <sys/resource.h>

#include "harness.hpp"
#include "accrete/accrete.hpp"
#include "accrete/matrix/convergent_matrix.hpp"
#include "hessian_workload.hpp"
#include "mpi_baselines.hpp"

namespace hw = bench::hessian;
using namespace accrete;

using bench::median;
using bench::now;
using bench::reduce;

namespace {

// Peak resident set size since the last reset_peak_rss() (Linux: writing 5
// to clear_refs resets VmHWM), maximum over processes, MiB.
void reset_peak_rss() {
  if (FILE* f = std::fopen("/proc/self/clear_refs", "w")) {
    std::fputs("5", f);
    std::fclose(f);
  }
}
double peak_rss_mib() {
  double kib = 0;
  if (FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f))
      if (std::strncmp(line, "VmHWM:", 6) == 0) kib = std::atof(line + 6);
    std::fclose(f);
  }
  if (kib == 0) {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    kib = double(u.ru_maxrss);
  }
  return reduce(kib / 1024.0, MPI_MAX);
}

struct sample {
  double T = 0, bin = 0, move = 0, apply = 0, wait = 0, gen = 0;
  double bytes = 0, checksum = 0;
  double peak_buffered = -1;  // accrete only
};

struct result {
  std::string name;
  std::vector<sample> reps;
  double rss = 0;
};

// Runs the workload R times on one convergent_matrix with the given
// options (strategy, reproducible, atomic_updates), each round ended by
// commit() (and reopened before the next); T and the phase times are per
// round, the checksum that of one round.
sample run_accrete(const hw::params& prm, const process_grid& grid, const convergent_matrix_options& o, int R) {
  convergent_matrix<float> H(prm.N, prm.N, grid, hw::MB, hw::NB, o);
  hw::update up;
  double gen = 0;
  barrier();
  const double t0 = now();
  for (int r = 0; r < R; ++r) {
    if (r > 0) H.reopen();  // (the last round's values stay put for the checksum)
    for (std::int64_t u = 0; u < prm.U; ++u) {
      const double tg = now();
      hw::make_update(prm, rank_me(), u, up);
      gen += now() - tg;
      H.update(up.B.data(), prm.n(), up.ix, up.ix);
    }
    H.commit();
  }
  sample res;
  res.T = reduce(now() - t0, MPI_MAX) / R;
  const auto st = H.stats();
  res.gen = reduce(gen, MPI_MAX) / R;
  res.bin = reduce(st.t_bin, MPI_MAX) / R;
  res.move = reduce(st.t_move, MPI_MAX) / R;
  res.apply = reduce(st.t_apply, MPI_MAX) / R;
  res.wait = reduce(st.t_wait, MPI_MAX) / R;
  res.bytes = reduce(double(st.bytes_sent), MPI_SUM) / R;
  res.peak_buffered = reduce(double(st.peak_buffered), MPI_MAX);
  res.checksum = reduce(hw::local_sum(H.local(), H.lld(), H.local_rows(), H.local_cols()), MPI_SUM) / R;
  return res;
}

sample from_baseline(const hw::baseline_timing& b) {
  sample r;
  r.T = b.total;
  r.gen = b.gen;
  r.bin = b.bin;
  r.move = b.comm;
  r.apply = b.apply;
  r.bytes = double(b.bytes);
  r.checksum = b.checksum;
  return r;
}

// Generation only: the compute a process must do anyway (k > 0 runs a real
// syrk per update); the yardstick for overlap of communication.
sample run_compute_only(const hw::params& prm) {
  hw::update up;
  barrier();
  const double t0 = now();
  double sink = 0;
  for (std::int64_t u = 0; u < prm.U; ++u) {
    hw::make_update(prm, rank_me(), u, up);
    sink += up.B[0];
  }
  sample r;
  r.T = reduce(now() - t0, MPI_MAX);
  r.gen = r.T;
  r.checksum = sink;  // not a matrix checksum; keeps the work observable
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  bool thread_ab = false;
  for (int a = 1; a < argc; ++a) thread_ab = thread_ab || std::strcmp(argv[a], "--thread-ab") == 0;
  // MPI outlives the runtime, which --thread-ab restarts; declared first,
  // it is finalised last (after the grid and the runtime).
  struct mpi_session {
    mpi_session(int& argc, char**& argv, int level) {
      int provided = 0;
      MPI_Init_thread(&argc, &argv, level, &provided);
    }
    ~mpi_session() { MPI_Finalize(); }
  } mpi(argc, argv, thread_ab ? MPI_THREAD_MULTIPLE : MPI_THREAD_SERIALIZED);
  std::optional<runtime> rt(std::in_place);
  std::string preset = "small", json, only;
  int reps = 3;
  int k = -1;
  long long U = -1;
  int rounds = 0;
  int straggle = 1;
  long long coalesce = 0, buffer_cap = 0;
  bool baselines = true;
  for (int a = 1; a < argc; ++a) {
    std::string s = argv[a];
    auto val = [&]() -> std::string {
      if (a + 1 >= argc) {
        std::fprintf(stderr, "bench_hessian: %s needs a value\n", s.c_str());
        std::exit(2);
      }
      return argv[++a];
    };
    if (s == "--preset")
      preset = val();
    else if (s == "--reps")
      reps = std::stoi(val());
    else if (s == "--k")
      k = std::stoi(val());
    else if (s == "--U")
      U = std::stoll(val());
    else if (s == "--json")
      json = val();
    else if (s == "--only")
      only = val();
    else if (s == "--no-baselines")
      baselines = false;
    else if (s == "--rounds")
      rounds = std::stoi(val());
    else if (s == "--straggle")
      straggle = std::stoi(val());
    else if (s == "--coalesce")
      coalesce = std::stoll(val());
    else if (s == "--buffer-cap")
      buffer_cap = std::stoll(val());
    else if (s == "--thread-ab")
      continue;
    else {
      if (rank_me() == 0)
        std::fprintf(stderr,
                     "bench_hessian: unknown argument %s\nusage: bench_hessian [--preset tiny|small|large|paper] "
                     "[--reps R] [--k K] [--U U] [--rounds R] [--straggle F] [--coalesce BYTES] "
                     "[--buffer-cap BYTES] [--thread-ab] [--no-baselines] [--only NAME[,NAME...]] [--json PATH]\n",
                     s.c_str());
      return 2;
    }
  }
  // A misspelt name in --only would silently leave its column out.
  static const char* const known[] = {
      "accrete_packets",        "accrete_alltoall", "accrete_packets_repro", "accrete_packets_atomic",
      "accrete_packets_thread", "mpi_accumulate",   "mpi_alltoallv",         "mpi_shared_memory",
      "local_apply_ref",        "compute_only"};
  for (std::size_t b = 0; b < only.size();) {
    const std::size_t e = std::min(only.find(',', b), only.size());
    const std::string n = only.substr(b, e - b);
    if (std::none_of(std::begin(known), std::end(known), [&](const char* x) { return n == x; })) {
      if (rank_me() == 0) {
        std::fprintf(stderr, "bench_hessian: --only: no implementation named '%s'; the names are", n.c_str());
        for (const char* x : known) std::fprintf(stderr, " %s", x);
        std::fprintf(stderr, "\n");
      }
      return 2;
    }
    b = e + 1;
  }
  hw::params prm = hw::preset(preset);
  if (k >= 0) prm.k = k;
  if (U >= 0) prm.U = U;
  prm.straggle = straggle;
  prm.straggler = rank_n() - 1;
  prm.validate();
  const int P = rank_n(), me = rank_me();
  const auto [pr, pc] = hw::grid_shape(P);
  // On MPI_COMM_WORLD, not world(): the grid must outlive a runtime restart.
  process_grid grid(MPI_COMM_WORLD, pr, pc);
  const auto lay = hw::make_layout(prm, P, me);
  auto wanted = [&](const std::string& n) {
    return only.empty() || ("," + only + ",").find("," + n + ",") != std::string::npos;
  };

  struct impl {
    std::string name;
    std::function<sample()> run;
  };
  std::vector<impl> impls;
  if (rounds < 0 || coalesce < 0 || buffer_cap < 0) {
    if (rank_me() == 0) std::fprintf(stderr, "bench_hessian: --rounds, --coalesce and --buffer-cap must be positive\n");
    return 2;
  }
  auto accrete_run = [&](update_strategy st, bool repro, bool atomic) {
    convergent_matrix_options o;
    o.strategy = st;
    o.reproducible = repro;
    o.atomic_updates = atomic;
    if (coalesce > 0) o.coalesce_bytes = std::size_t(coalesce);
    if (buffer_cap > 0) o.buffer_cap = std::size_t(buffer_cap);
    return [&, o] { return run_accrete(prm, grid, o, std::max(rounds, 1)); };
  };
  impls.push_back({"accrete_packets", accrete_run(update_strategy::packets, false, false)});
  impls.push_back({"accrete_alltoall", accrete_run(update_strategy::alltoall, false, false)});
  impls.push_back({"accrete_packets_repro", accrete_run(update_strategy::packets, true, false)});
  impls.push_back({"accrete_packets_atomic", accrete_run(update_strategy::packets, false, true)});
  if (thread_ab)
    impls.push_back({"accrete_packets_thread", [&] {
                       auto run = accrete_run(update_strategy::packets, false, false);
                       rt.reset();
                       init_options with_thread;
                       with_thread.progress_thread = true;
                       rt.emplace(with_thread);
                       const sample r = run();
                       rt.reset();
                       rt.emplace();
                       return r;
                     }});
  bench::line_vector<float> mat;  // the baselines' local matrix, aligned as accrete's storage
  // Rounds: one call per round into the same storage, zeroed once; T is
  // per round, the checksum that of one round.
  auto baseline = [&](auto fn) {
    mat.assign(std::size_t(std::max<std::int64_t>(lay.ld, 1) * lay.cols), 0.0f);
    if (!rounds) return from_baseline(fn());
    sample sum;
    for (int r = 0; r < rounds; ++r) {
      const sample one = from_baseline(fn());
      sum.T += one.T / rounds;
      sum.gen += one.gen / rounds;
      sum.bin += one.bin / rounds;
      sum.move += one.move / rounds;
      sum.apply += one.apply / rounds;
      sum.bytes = one.bytes;
      sum.checksum = one.checksum / (r + 1);
    }
    return sum;
  };
  if (baselines) {
    impls.push_back({"mpi_accumulate", [&] {
                       return baseline([&] {
                         return hw::baseline_accumulate(prm, MPI_COMM_WORLD, mat.data(), lay.ld, lay.rows, lay.cols);
                       });
                     }});
    impls.push_back({"mpi_alltoallv", [&] {
                       return baseline([&] {
                         return hw::baseline_alltoallv(prm, MPI_COMM_WORLD, mat.data(), lay.ld, lay.rows, lay.cols);
                       });
                     }});
  }
  // One node, and not split into pretend nodes: the MPI-3 shared-memory
  // program a skilled MPI programmer would write there.
  const char* ns_env = std::getenv("ACCRETE_NODE_SIZE");
  if (baselines && detail::world_on_one_node() && !ns_env) {
    impls.push_back({"mpi_shared_memory", [&] {
                       return baseline([&] {
                         return hw::baseline_shared_memory(prm, MPI_COMM_WORLD, mat.data(), lay.ld, lay.rows, lay.cols);
                       });
                     }});
  }
  impls.push_back({"local_apply_ref", [&] { return from_baseline(hw::local_apply_reference(prm, MPI_COMM_WORLD)); }});
  impls.push_back({"compute_only", [&] { return run_compute_only(prm); }});

#ifdef ACCRETE_SMPI
  // Simulated processes run one at a time on the host, so a STREAM run
  // measures the host's bandwidth P times over (and its 256 MiB per process
  // exhausts the host's memory at P ~ 96): SMPI models no memory
  // contention, and no physical bound is reported.
  const double stream_bw = 0;
#else
  const double stream_bw = hw::stream_add_bandwidth(MPI_COMM_WORLD);
#endif
  std::vector<result> results;
  for (auto& im : impls)
    if (wanted(im.name)) results.push_back(result{im.name, {}, 0});
  for (int rep = 0; rep < reps; ++rep)
    for (auto& r : results) {
      auto& im = *std::find_if(impls.begin(), impls.end(), [&](const impl& x) { return x.name == r.name; });
      reset_peak_rss();
      r.reps.push_back(im.run());
      r.rss = std::max(r.rss, peak_rss_mib());
    }

  const double expected = hw::expected_checksum(prm, P);
  const double elems = double(P) * double(prm.U) * double(prm.n()) * double(prm.n());
  auto median_T = [&](const std::string& name) {
    for (auto& r : results)
      if (r.name == name) {
        std::vector<double> t;
        for (auto& x : r.reps) t.push_back(x.T);
        return median(t);
      }
    return 0.0;
  };
  const double ref_T = median_T("local_apply_ref"), compute_T = median_T("compute_only");
  // Needs compute_only in the run: generation is part of every T.
  const double phys_T = compute_T > 0 && stream_bw > 0 ? compute_T + 12.0 * elems / stream_bw : 0.0;
  bool all_ok = true;
  std::ostringstream js;
  if (me == 0) {
    char mpiv[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(mpiv, &len);
    std::string mv(mpiv, std::size_t(std::min(len, 40)));
    for (char& ch : mv)  // keep the JSON string free of control characters
      if (static_cast<unsigned char>(ch) < 0x20) ch = ' ';
    const char* ns = std::getenv("ACCRETE_NODE_SIZE");
    std::printf("hessian workload: preset %s, N %lld, n %lld, U %lld, k %d, P %d (%dx%d), node size %s, %s\n",
                preset.c_str(), (long long)prm.N, (long long)prm.n(), (long long)prm.U, prm.k, P, pr, pc,
                ns ? ns : "real", mv.c_str());
    double load = 0;
    if (FILE* f = std::fopen("/proc/loadavg", "r")) {
      if (std::fscanf(f, "%lf", &load) != 1) load = 0;
      std::fclose(f);
    }
    std::printf("median of %d interleaved repetitions; times are the maximum over processes; load average %.2f\n", reps,
                load);
    if (rounds)
      std::printf(
          "rounds mode: %d rounds per repetition, each ended by its own assembly; T and phases per round "
          "(local_apply_ref and compute_only: one round)\n",
          rounds);
    if (stream_bw > 0 && phys_T > 0)
      std::printf(
          "stream add (d += s, all %d processes at once): %.2f GB/s aggregate; physical bound = compute-only "
          "%.4f s + 12 B x %.3g elements / that = %.4f s\n",
          P, stream_bw / 1e9, compute_T, elems, phys_T);
    else if (stream_bw > 0)
      std::printf(
          "stream add (d += s, all %d processes at once): %.2f GB/s aggregate; no physical bound "
          "(compute_only was not run; T/phys and its ratios print 0)\n",
          P, stream_bw / 1e9);
    else
      std::printf(
          "simulated (SMPI): times are simulated seconds; no physical bound (memory contention is not "
          "modelled); RSS is the whole simulation's\n");
    if (straggle > 1) std::printf("straggler: process %d generates each update %d times\n", P - 1, straggle);
    std::printf("%-22s %9s %10s %8s %8s %8s %8s %8s %8s %9s %9s %8s %8s %s\n", "implementation", "T [s]", "updates/s",
                "GB/s", "bin", "move", "apply", "wait", "B/elem", "RSS MiB", "peak buf", "T/phys", "T/ref", "checksum");
    js << "{\"workload\":\"hessian\",\"preset\":\"" << preset << "\",\"N\":" << prm.N << ",\"n\":" << prm.n()
       << ",\"U\":" << prm.U << ",\"k\":" << prm.k << ",\"straggle\":" << straggle << ",\"rounds\":" << rounds
       << ",\"P\":" << P << ",\"grid\":[" << pr << "," << pc << "],\"node_size\":\"" << (ns ? ns : "real")
       << "\",\"mpi\":\"" << mv << "\",\"reps\":" << reps << ",\"expected_checksum\":" << expected
       << ",\"loadavg_at_end\":" << load << ",\"stream_add_GBps\":" << stream_bw / 1e9
       << ",\"physical_bound_T\":" << phys_T << ",\"local_apply_ref_T\":" << ref_T << ",\"results\":[";
  }
  bool first = true;
  for (auto& r : results) {
    std::vector<double> T, bin, mv, ap, wt, pb;
    bool ok = true;
    for (auto& s : r.reps) {
      T.push_back(s.T);
      bin.push_back(s.bin);
      mv.push_back(s.move);
      ap.push_back(s.apply);
      wt.push_back(s.wait);
      pb.push_back(s.peak_buffered);
      if (r.name != "compute_only") {
        const bool same = prm.k == 0 ? s.checksum == expected
                                     : std::abs(s.checksum - expected) <= 1e-5 * std::max(1.0, std::abs(expected));
        ok = ok && same;
      }
    }
    all_ok = all_ok && ok;
    const double t = median(T), bytes = r.reps.empty() ? 0 : r.reps[0].bytes;
    if (me == 0) {
      const double peak = median(pb);
      char peak_s[32] = "-";
      if (peak >= 0) std::snprintf(peak_s, sizeof peak_s, "%.1fM", peak / (1 << 20));
      std::printf("%-22s %9.4f %10.1f %8.2f %8.3f %8.3f %8.3f %8.3f %8.2f %9.0f %9s %8.2f %8.2f %s\n", r.name.c_str(),
                  t, double(P) * double(prm.U) / t, elems * 4 / t / 1e9, median(bin), median(mv), median(ap),
                  median(wt), bytes / elems, r.rss, peak_s, phys_T > 0 ? t / phys_T : 0.0, ref_T > 0 ? t / ref_T : 0.0,
                  r.name == "compute_only" ? "-" : (ok ? "ok" : "MISMATCH"));
      js << (first ? "" : ",") << "{\"name\":\"" << r.name << "\",\"T\":" << t
         << ",\"updates_per_s\":" << double(P) * double(prm.U) / t << ",\"GBps\":" << elems * 4 / t / 1e9
         << ",\"bin\":" << median(bin) << ",\"move\":" << median(mv) << ",\"apply\":" << median(ap)
         << ",\"wait\":" << median(wt) << ",\"bytes_per_element\":" << bytes / elems << ",\"peak_rss_mib\":" << r.rss
         << ",\"peak_buffered_bytes\":" << median(pb)
         << ",\"ratio_to_physical_bound\":" << (phys_T > 0 ? t / phys_T : 0.0)
         << ",\"ratio_to_local_apply_ref\":" << (ref_T > 0 ? t / ref_T : 0.0)
         << ",\"checksum_ok\":" << (ok ? "true" : "false") << ",\"T_reps\":[";
      for (std::size_t i = 0; i < T.size(); ++i) js << (i ? "," : "") << T[i];
      js << "],\"checksums\":[";
      for (std::size_t i = 0; i < r.reps.size(); ++i) js << (i ? "," : "") << r.reps[i].checksum;
      js << "]}";
      first = false;
    }
  }
  if (me == 0) {
    // The ratios the benchmark's goals name (bench/hessian/README.md).
    const double pk = median_T("accrete_packets"), acc = median_T("mpi_accumulate"), a2a = median_T("mpi_alltoallv"),
                 shm = median_T("mpi_shared_memory");
    double best = 0;
    for (double b : {acc, a2a, shm})
      if (b > 0) best = best > 0 ? std::min(best, b) : b;
    auto ratio = [](double a, double b) { return a > 0 && b > 0 ? a / b : 0.0; };
    js << "],\"summary\":{\"packets_over_physical_bound\":" << ratio(pk, phys_T)
       << ",\"packets_over_local_apply_ref\":" << ratio(pk, ref_T)
       << ",\"best_mpi_baseline_over_packets\":" << ratio(best, pk)
       << ",\"mpi_accumulate_over_packets\":" << ratio(acc, pk) << ",\"mpi_alltoallv_over_packets\":" << ratio(a2a, pk)
       << ",\"mpi_shared_memory_over_packets\":" << ratio(shm, pk)
       << ",\"packets_repro_over_packets\":" << ratio(median_T("accrete_packets_repro"), pk)
       << ",\"packets_atomic_over_packets\":" << ratio(median_T("accrete_packets_atomic"), pk)
       << ",\"packets_thread_over_packets\":" << ratio(median_T("accrete_packets_thread"), pk)
       << ",\"best_mpi_baseline_over_packets_thread\":" << ratio(best, median_T("accrete_packets_thread")) << "}}\n";
    if (pk > 0)
      std::printf(
          "summary: packets / physical bound %.2f, / local-apply ref %.2f; best MPI baseline / packets %.2f%s\n",
          ratio(pk, phys_T), ratio(pk, ref_T), ratio(best, pk),
          shm > 0 ? (", shared-memory baseline / packets " + std::to_string(ratio(shm, pk))).c_str() : "");
    if (pk > 0 && median_T("accrete_packets_repro") > 0)
      std::printf("summary: reproducible packets / packets %.2f\n", ratio(median_T("accrete_packets_repro"), pk));
    if (pk > 0 && median_T("accrete_packets_thread") > 0)
      std::printf(
          "summary: packets with progress thread / without %.2f; best MPI baseline / packets with thread %.2f\n",
          ratio(median_T("accrete_packets_thread"), pk), ratio(best, median_T("accrete_packets_thread")));
    if (pk > 0 && median_T("accrete_packets_atomic") > 0)
      std::printf("summary: atomic-update packets / packets %.2f\n", ratio(median_T("accrete_packets_atomic"), pk));
    std::printf("RSS: peak resident set per process while that implementation ran (max over processes and reps)\n");
    if (!json.empty()) {
      FILE* f = std::fopen(json.c_str(), "w");
      if (f) {
        std::fputs(js.str().c_str(), f);
        std::fclose(f);
        std::printf("wrote %s\n", json.c_str());
      }
    }
    if (!all_ok) std::printf("CHECKSUM MISMATCH\n");
  }
  rt.reset();  // accrete::finalize; only MPI_Finalize is left after the line below
  int bad = all_ok ? 0 : 1, any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  // tests/multihost/hosts.sh reads this line, as from the test programs
  // (tests/test_main.cpp): MPICH over UCX's TCP transport can fail to return
  // from MPI_Finalize, and the agreed result then stands.
  if (me == 0) {
    std::printf("accrete tests: every rank finished accrete::finalize; result: %s\n", any ? "fail" : "pass");
    std::fflush(stdout);
  }
  return any;
}
