// bench_atomics: a flood of non-fetching remote atomic adds, accrete's
// atomic_domain against plain MPI in the same run.
//
// P = 2 (run with ACCRETE_NODE_SIZE=1 so the target is "remote"). Rank 0
// adds 1 to one int64 in rank 1's memory, `--ops` times per repetition;
// rank 1 sits in accrete::barrier() (which polls MPI) meanwhile. After each
// repetition rank 0 reads the counter back and checks it exactly.
//
// Implementations (interleaved, order rotated per repetition; median of
// --reps repetitions, in million operations per second):
//   accrete_wait_each  ad.add(p, 1).wait() per operation: one MPI_Accumulate
//                      and one MPI_Win_flush per operation (what every
//                      accrete atomic cost while operations were flushed at
//                      issue)
//   accrete_flood      ad.add(p, 1, promise) for all, then one wait
//   upcxx_flood        the same written against <upcxx/upcxx.hpp>:
//                      ad.add(p, 1, relaxed, operation_cx::as_promise(pr))
//   mpi_flush_each     MPI_Accumulate + MPI_Win_flush(1) per operation, on
//                      a window the benchmark makes (MPI_Win_allocate,
//                      lock_all)
//   mpi_flood          MPI_Accumulate for all, then one MPI_Win_flush: the
//                      plain-MPI best case for this pattern
//
// Usage: bench_atomics [--ops N] [--reps R] [--json PATH]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <mpi.h>

#include "harness.hpp"
#include <upcxx/upcxx.hpp>

namespace {

struct impl {
  const char* name;
  std::function<void(long)> run;  // rank 0: `ops` adds of 1, complete on return
  std::function<std::int64_t()> read;  // rank 0: the counter's value now
  std::function<void()> reset;         // rank 0: set the counter to 0
  std::vector<double> mops;
};

}  // namespace

int main(int argc, char** argv) {
  bench::flood_options opt{1000000, 3, ""};
  for (int i = 1; i < argc; ++i) {
    if (!opt.take(argc, argv, i)) {
      std::fprintf(stderr, "usage: bench_atomics [--ops N] [--reps R] [--json PATH]\n");
      return 2;
    }
  }
  const long ops = opt.ops;
  const int reps = opt.reps;
  const std::string json = opt.json;
  upcxx::init();
  const int me = upcxx::rank_me();
  if (upcxx::rank_n() != 2) {
    if (me == 0) std::fprintf(stderr, "bench_atomics: run on 2 processes (got %d)\n", upcxx::rank_n());
    upcxx::finalize();
    return 2;
  }

  // accrete's counter (in rank 1's segment) and its two domains.
  upcxx::global_ptr<std::int64_t> ctr =
      upcxx::broadcast(me == 1 ? upcxx::new_<std::int64_t>(0) : upcxx::global_ptr<std::int64_t>(), 1).wait();
  accrete::atomic_domain<std::int64_t> native;
  upcxx::atomic_domain<std::int64_t> spec({upcxx::atomic_op::add, upcxx::atomic_op::load, upcxx::atomic_op::store});

  // Plain MPI's counter, in a window of its own.
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  std::int64_t* base = nullptr;
  MPI_Win win;
  MPI_Win_allocate(sizeof(std::int64_t), sizeof(std::int64_t), MPI_INFO_NULL, comm, &base, &win);
  *base = 0;
  MPI_Barrier(comm);
  MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
  const std::int64_t one = 1;
  auto mpi_read = [&] {
    std::int64_t v = 0, zero = 0;
    MPI_Fetch_and_op(&zero, &v, MPI_INT64_T, 1, 0, MPI_NO_OP, win);
    MPI_Win_flush(1, win);
    return v;
  };
  auto mpi_reset = [&] {
    std::int64_t zero = 0, old = 0;
    MPI_Fetch_and_op(&zero, &old, MPI_INT64_T, 1, 0, MPI_REPLACE, win);
    MPI_Win_flush(1, win);
  };
  auto acc_read = [&] { return native.load(ctr).wait(); };
  auto acc_reset = [&] { native.store(ctr, 0).wait(); };

  std::vector<impl> impls = {
      {"accrete_wait_each", [&](long n) { for (long i = 0; i < n; ++i) native.add(ctr, 1).wait(); }, acc_read,
       acc_reset, {}},
      {"accrete_flood",
       [&](long n) {
         accrete::promise<> done;
         for (long i = 0; i < n; ++i) native.add(ctr, 1, done);
         done.finalize().wait();
       },
       acc_read, acc_reset, {}},
      {"upcxx_flood",
       [&](long n) {
         upcxx::promise<> done;
         for (long i = 0; i < n; ++i) spec.add(ctr, 1, std::memory_order_relaxed, upcxx::operation_cx::as_promise(done));
         done.finalize().wait();
       },
       acc_read, acc_reset, {}},
      {"mpi_flush_each",
       [&](long n) {
         for (long i = 0; i < n; ++i) {
           MPI_Accumulate(&one, 1, MPI_INT64_T, 1, 0, 1, MPI_INT64_T, MPI_SUM, win);
           MPI_Win_flush(1, win);
         }
       },
       mpi_read, mpi_reset, {}},
      {"mpi_flood",
       [&](long n) {
         for (long i = 0; i < n; ++i) MPI_Accumulate(&one, 1, MPI_INT64_T, 1, 0, 1, MPI_INT64_T, MPI_SUM, win);
         MPI_Win_flush(1, win);
       },
       mpi_read, mpi_reset, {}},
  };

  int bad = 0;
  for (int r = 0; r < reps; ++r)
    for (std::size_t k = 0; k < impls.size(); ++k) {
      impl& im = impls[(k + std::size_t(r)) % impls.size()];
      if (me == 0) im.reset();
      upcxx::barrier();
      if (me == 0) {
        double t0 = bench::now();
        im.run(ops);
        double t = bench::now() - t0;
        im.mops.push_back(double(ops) / t * 1e-6);
        std::int64_t got = im.read();
        if (got != ops) {
          std::fprintf(stderr, "bench_atomics: %s left the counter at %lld, expected %ld\n", im.name, (long long)got,
                       ops);
          ++bad;
        }
      }
      upcxx::barrier();
    }

  if (me == 0) {
    auto med = [&](const char* n) {
      for (auto& im : impls)
        if (std::string(im.name) == n) return bench::median(im.mops);
      return 0.0;
    };
    std::printf("bench_atomics: %ld remote int64 adds per repetition, P = 2, median of %d (Mops/s)\n", ops, reps);
    std::printf("%-20s %12s\n", "implementation", "Mops/s");
    for (auto& im : impls) std::printf("%-20s %12.3f\n", im.name, bench::median(im.mops));
    const double flood_vs_wait = med("accrete_flood") / med("accrete_wait_each");
    const double flood_vs_mpi_each = med("accrete_flood") / med("mpi_flush_each");
    const double flood_vs_mpi_flood = med("accrete_flood") / med("mpi_flood");
    const double upcxx_vs_native = med("upcxx_flood") / med("accrete_flood");
    std::printf("accrete_flood / accrete_wait_each = %.2fx (goal >= 3)\n", flood_vs_wait);
    std::printf("accrete_flood / mpi_flush_each    = %.2fx (goal > 1)\n", flood_vs_mpi_each);
    std::printf("accrete_flood / mpi_flood         = %.2fx\n", flood_vs_mpi_flood);
    std::printf("upcxx_flood / accrete_flood       = %.2fx (goal >= 1/1.05 = 0.95)\n", upcxx_vs_native);
    std::string j = "{\n  \"ops\": " + std::to_string(ops) + ",\n  \"reps\": " + std::to_string(reps) +
                    ",\n  \"unit\": \"million operations per second\",\n  \"results\": {";
    for (std::size_t k = 0; k < impls.size(); ++k) {
      j += std::string(k ? "," : "") + "\n    \"" + impls[k].name + "\": {\"median\": " +
           bench::num(bench::median(impls[k].mops)) + ", \"runs\": [";
      for (std::size_t i = 0; i < impls[k].mops.size(); ++i) j += (i ? ", " : "") + bench::num(impls[k].mops[i]);
      j += "]}";
    }
    j += "\n  },\n  \"summary\": {\n    \"accrete_flood_over_accrete_wait_each\": " + bench::num(flood_vs_wait) +
         ",\n    \"accrete_flood_over_mpi_flush_each\": " + bench::num(flood_vs_mpi_each) +
         ",\n    \"accrete_flood_over_mpi_flood\": " + bench::num(flood_vs_mpi_flood) +
         ",\n    \"upcxx_flood_over_accrete_flood\": " + bench::num(upcxx_vs_native) + "\n  }\n}\n";
    bench::write_file(json, j);
  }

  MPI_Win_unlock_all(win);
  MPI_Win_free(&win);
  MPI_Comm_free(&comm);
  native.destroy();
  spec.destroy();
  int any_bad = 0;
  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  upcxx::barrier();
  if (me == 1) upcxx::delete_(ctr);
  upcxx::finalize();
  return any_bad ? 1 : 0;
}
