// bench_extend_add: one bottom-up extend-add pass over the multi-process
// fronts of a nested-dissection tree (see extend_add.hpp), done with accrete
// RPCs, MPI_Alltoallv and MPI point-to-point in the same run, each checked
// entry by entry against the reference.
//
//   mpiexec -n P bench_extend_add [--n 24,32,40] [--leaf 64] [--nb 32] [--reps 15]
//                                 [--chunk 16384] [--json out.json]
//
// accrete is run twice: with RPCs of about --chunk entries (several per
// target, pipelined) and with one RPC per target (--chunk 0, as in the
// UPC++ paper). upcxx_rpc is the chunked RPC form written against
// <upcxx/upcxx.hpp> (upcxx::rpc_ff, upcxx::make_view); its time over
// accrete_rpc's is the UPC++ layer's cost ("upcxx-x").
//
// Timed: barrier, clock, the pass over every front whose team has more than
// one process (packing, communication, unpacking, and the direct add of the
// part that stays local), clock; the maximum over processes. Fronts owned
// by a single process are assembled once, untimed: their extend-add is the
// same code for every variant and involves no communication. Reps interleave
// the variants, in an order shuffled per rep, so drifting machine load and
// the previous variant's footprint hit all of them alike.
#include <algorithm>
#include <array>
#include <numeric>
#include <random>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "harness.hpp"
#include "accrete/accrete.hpp"
#include "extend_add.hpp"

using namespace accrete;
namespace ea = extend_add;

using bench::median;
using bench::now;
using bench::reduce;

namespace {

std::vector<int> parse_list(const char* s) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(std::atoi(item.c_str()));
  return out;
}

struct options {
  std::vector<int> ns{24, 32, 40};
  int leaf = 64, nb = 32, reps = 15;
  long chunk = 16384;
  std::string json;
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    auto arg = [&](const char* name) { return std::strcmp(argv[i], name) == 0 && i + 1 < argc; };
    if (arg("--n"))
      o.ns = parse_list(argv[++i]);
    else if (arg("--leaf"))
      o.leaf = std::atoi(argv[++i]);
    else if (arg("--nb"))
      o.nb = std::atoi(argv[++i]);
    else if (arg("--reps"))
      o.reps = std::max(1, std::atoi(argv[++i]));
    else if (arg("--chunk"))
      o.chunk = std::atol(argv[++i]);
    else if (arg("--json"))
      o.json = argv[++i];
    else {
      if (rank_me() == 0) std::fprintf(stderr, "bench_extend_add: unknown argument %s\n", argv[i]);
      std::exit(2);
    }
  }
  return o;
}

struct row {
  int n = 0;
  int root = 0, biggest = 0, dist_fronts = 0;
  double mb = 0, local_s = 0;
  std::vector<std::vector<double>> t;  // per variant, per rep
  std::vector<ea::profile> prof;       // per variant: mean per rep, max over processes
  bool ok = true;
};

constexpr int nvar = 6;
const ea::variant variants[nvar] = {ea::variant::rpc, ea::variant::rpc, ea::variant::alltoallv, ea::variant::p2p,
                                    ea::variant::put, ea::variant::upcxx_rpc};
const char* const names[nvar] = {"accrete_rpc", "accrete_rpc_1msg", "mpi_alltoallv", "mpi_p2p", "accrete_put",
                                 "upcxx_rpc"};

// upcxx_rpc's time over accrete_rpc's: the median of the per-rep ratios
// (the two ran within one rep, milliseconds apart).
double upcxx_slowdown(const row& r) { return bench::median_ratio(r.t[5], r.t[0]); }

row run_case(const options& o, int n) {
  row out;
  out.n = n;
  ea::problem pb(n, o.leaf, o.nb);
  const auto& nodes = pb.elimination_tree().nodes();
  out.root = nodes[pb.elimination_tree().root()].size();
  for (const auto& x : nodes) {
    out.biggest = std::max(out.biggest, x.size());
    if (x.tn > 1 && !x.children.empty()) ++out.dist_fronts;
  }
  out.mb = reduce(double(pb.remote_entries_sent()) * 8 / 1e6, MPI_SUM);

  // The single-process fronts are checked by the test, not here (slow).
  pb.reset(pb.local_parents());
  MPI_Barrier(world().mpi_comm());
  double t0 = now();
  pb.run_local();
  out.local_s = reduce(now() - t0, MPI_MAX);
  std::int64_t bad = 0;

  out.t.assign(nvar, {});
  std::vector<ea::profile> sum(nvar);
  for (int rep = -1; rep < o.reps; ++rep) {  // rep -1: warm-up (connections, page faults)
    // A fresh order per rep (the same seed on every process, since each
    // variant is collective): which variant follows which, and so whose
    // traffic and cache footprint it inherits, changes from rep to rep. A
    // rotation would keep every variant behind the same neighbour.
    std::array<int, nvar> order;
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937(unsigned(rep + 2) * 7919u));
    for (const int k : order) {
      pb.set_rpc_chunk(k == 0 || k == 5 ? std::size_t(std::max(0L, o.chunk)) : 0);
      pb.reset(pb.dist_parents());
      pb.prepare(variants[k]);
      pb.prof() = {};
      MPI_Barrier(world().mpi_comm());
      t0 = now();
      pb.run(variants[k]);
      const double dt = reduce(now() - t0, MPI_MAX);
      if (rep >= 0) {
        out.t[k].push_back(dt);
        const ea::profile& q = pb.prof();
        sum[k].pack += q.pack, sum[k].send += q.send, sum[k].direct += q.direct;
        sum[k].wait += q.wait, sum[k].unpack += q.unpack, sum[k].messages += q.messages;
      }
      if (rep == o.reps - 1) bad += ea::count_mismatches(pb, pb.dist_parents());
    }
    // No RPC of this rep may still be in flight when the next rep resets the fronts.
    barrier();
  }
  out.ok = reduce(double(bad), MPI_SUM) == 0;
  for (auto& q : sum) {
    ea::profile m;
    m.pack = reduce(q.pack / o.reps, MPI_MAX), m.send = reduce(q.send / o.reps, MPI_MAX);
    m.direct = reduce(q.direct / o.reps, MPI_MAX), m.wait = reduce(q.wait / o.reps, MPI_MAX);
    m.unpack = reduce(q.unpack / o.reps, MPI_MAX);
    m.messages = long(reduce(double(q.messages) / o.reps, MPI_SUM));
    out.prof.push_back(m);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  runtime rt;
  const options o = parse(argc, argv);
  const int P = rank_n();
  std::vector<row> rows;
  for (int n : o.ns) rows.push_back(run_case(o, n));
  bool all_ok = true;
  if (rank_me() == 0) {
    std::printf("extend-add, P = %d, leaf <= %d, nb = %d, rpc chunk = %ld entries, %d reps (medians, seconds)\n", P,
                o.leaf, o.nb, o.chunk, o.reps);
    std::printf("%4s %5s %8s %4s %8s %7s | %11s %16s %11s %11s %13s %9s | %7s %7s | %7s %7s | %7s %7s | %7s | %s\n",
                "n", "root", "maxfront", "dist", "MB moved", "local", "accrete_rpc", "accrete_rpc_1msg", "accrete_put",
                "upcxx_rpc", "mpi_alltoallv", "mpi_p2p", "rpc/a", "rpc/p", "1msg/a", "1msg/p", "put/a", "put/p",
                "upcxx-x", "check");
    for (const row& r : rows) {
      const double a = median(r.t[0]), a1 = median(r.t[1]), b = median(r.t[2]), c = median(r.t[3]);
      const double pt = median(r.t[4]), u = upcxx_slowdown(r);
      std::printf(
          "%4d %5d %8d %4d %8.1f %7.3f | %11.5f %16.5f %11.5f %11.5f %13.5f %9.5f | %6.2fx %6.2fx | %6.2fx %6.2fx | "
          "%6.2fx %6.2fx | %7.3f | %s\n",
          r.n, r.root, r.biggest, r.dist_fronts, r.mb, r.local_s, a, a1, pt, median(r.t[5]), b, c, b / a, c / a, b / a1, c / a1,
          b / pt, c / pt, u, r.ok ? "exact" : "MISMATCH");
      all_ok = all_ok && r.ok;
    }
    std::printf(
        "\nwhere the time goes (ms per pass, mean over reps, max over processes; rpc: unpack runs inside wait)\n");
    std::printf("%4s %-17s %8s %8s %8s %8s %8s %6s\n", "n", "variant", "pack", "send", "direct", "wait", "unpack",
                "msgs");
    for (const row& r : rows)
      for (int k = 0; k < nvar; ++k) {
        const ea::profile& q = r.prof[k];
        std::printf("%4d %-17s %8.2f %8.2f %8.2f %8.2f %8.2f %6ld\n", r.n, names[k], q.pack * 1e3, q.send * 1e3,
                    q.direct * 1e3, q.wait * 1e3, q.unpack * 1e3, q.messages);
      }
    if (!o.json.empty()) {
      if (FILE* f = std::fopen(o.json.c_str(), "w")) {
        std::fprintf(f, "{\"P\": %d, \"leaf\": %d, \"nb\": %d, \"rpc_chunk\": %ld, \"reps\": %d, \"cases\": [", P,
                     o.leaf, o.nb, o.chunk, o.reps);
        for (std::size_t i = 0; i < rows.size(); ++i) {
          const row& r = rows[i];
          std::fprintf(f, "%s\n  {\"n\": %d, \"root_front\": %d, \"max_front\": %d, \"dist_fronts\": %d, ",
                       i ? "," : "", r.n, r.root, r.biggest, r.dist_fronts);
          std::fprintf(f, "\"mb_moved\": %.3f, \"local_eadd_s\": %.6f, \"exact\": %s, \"variants\": {", r.mb, r.local_s,
                       r.ok ? "true" : "false");
          for (int k = 0; k < nvar; ++k) {
            std::fprintf(f, "%s\"%s\": {\"median_s\": %.6f, \"reps_s\": [", k ? ", " : "", names[k], median(r.t[k]));
            for (std::size_t j = 0; j < r.t[k].size(); ++j) std::fprintf(f, "%s%.6f", j ? ", " : "", r.t[k][j]);
            const ea::profile& q = r.prof[k];
            std::fprintf(f,
                         "], \"profile_ms\": {\"pack\": %.3f, \"send\": %.3f, \"direct\": %.3f, \"wait\": %.3f, "
                         "\"unpack\": %.3f, \"messages\": %ld}}",
                         q.pack * 1e3, q.send * 1e3, q.direct * 1e3, q.wait * 1e3, q.unpack * 1e3, q.messages);
          }
          const double a = median(r.t[0]);
          const double a1 = median(r.t[1]);
          std::fprintf(f,
                       "}, \"speedup_vs_alltoallv\": %.3f, \"speedup_vs_p2p\": %.3f, "
                       "\"speedup_1msg_vs_alltoallv\": %.3f, \"speedup_1msg_vs_p2p\": %.3f, "
                       "\"speedup_put_vs_alltoallv\": %.3f, \"speedup_put_vs_p2p\": %.3f, "
                       "\"upcxx_slowdown\": %.4f}",
                       median(r.t[2]) / a, median(r.t[3]) / a, median(r.t[2]) / a1, median(r.t[3]) / a1,
                       median(r.t[2]) / median(r.t[4]), median(r.t[3]) / median(r.t[4]), upcxx_slowdown(r));
        }
        std::vector<double> slow;
        for (const row& r : rows) slow.push_back(upcxx_slowdown(r));
        std::fprintf(f, "\n], \"summary\": {\"upcxx_slowdown_median\": %.4f, \"upcxx_slowdown_max\": %.4f}}\n",
                     median(slow), *std::max_element(slow.begin(), slow.end()));
        std::fclose(f);
      }
    }
  }
  MPI_Bcast(&all_ok, 1, MPI_CXX_BOOL, 0, world().mpi_comm());
  return all_ok ? 0 : 1;
}
