// bench_par_flood: rput floods from one thread and from two threads of one
// process (the PAR thread mode, each thread through its own persona),
// against the same with plain MPI, in one run.
//
// P = 2; run with ACCRETE_NODE_SIZE=1 so that the target is reached through
// MPI (the bench starts accrete in the par thread mode itself). Rank 0
// floods rank 1's memory; rank 1 sits in accrete::barrier() meanwhile.
//
// Per message size and implementation, one repetition is: every flooding
// thread issues --ops puts of that size into its own half of the target
// region, then waits for all of them (accrete: one promise per thread;
// MPI: one MPI_Win_flush(1) per thread). Rate = all puts of the repetition
// / its time. Threads are started once and released together per
// repetition (std::barrier), so thread creation is not timed.
//   accrete_1t   accrete::rput(src, dst, n, promise) on the main thread
//   accrete_2t   the same on two threads at once
//   mpi_1t       MPI_Put + one MPI_Win_flush, main thread, on a window the
//                bench creates (MPI_Win_allocate, lock_all)
//   mpi_2t       the same on two threads at once (MPI_THREAD_MULTIPLE)
// Implementations are interleaved, order rotated per repetition; medians.
// Goal (issue 38): accrete_2t >= 1.3 x accrete_1t, or, where the MPI itself
// serializes threads, accrete_2t / accrete_1t >= mpi_2t / mpi_1t.
//
// Usage: bench_par_flood [--ops N] [--reps R] [--sizes 8,64,1024,16384] [--json PATH]
#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <mpi.h>

#include "harness.hpp"
#include "accrete/accrete.hpp"

namespace {

constexpr std::size_t kRegion = std::size_t{8} << 20;  // target bytes; each thread uses one half

// Two worker threads that run `job(t)` when released, for every repetition.
class crew {
 public:
  crew() : start_(3), done_(3) {
    for (int t = 0; t < 2; ++t)
      threads_.emplace_back([this, t] {
        for (;;) {
          start_.arrive_and_wait();
          if (quit_) return;
          job_(t);
          done_.arrive_and_wait();
        }
      });
  }
  ~crew() {
    quit_ = true;
    start_.arrive_and_wait();
    for (auto& th : threads_) th.join();
  }
  // Runs job on both threads at once; returns when both are done.
  void run(std::function<void(int)> job) {
    job_ = std::move(job);
    start_.arrive_and_wait();
    done_.arrive_and_wait();
  }

 private:
  std::barrier<> start_, done_;
  std::function<void(int)> job_;
  bool quit_ = false;
  std::vector<std::thread> threads_;
};

struct impl {
  std::string name;
  std::function<void()> rep;  // one repetition on rank 0
  int threads;
  std::vector<double> rate;   // million puts per second
};

}  // namespace

int main(int argc, char** argv) {
  bench::flood_options opt{20000, 7, ""};
  std::vector<std::size_t> sizes = {8, 64, 1024, 16384};
  for (int i = 1; i < argc; ++i) {
    if (opt.take(argc, argv, i))
      continue;
    if (const char* v = bench::option(argc, argv, i, "--sizes")) {
      sizes.clear();
      std::stringstream ss(v);
      for (std::string x; std::getline(ss, x, ',');) sizes.push_back(std::size_t(std::atoll(x.c_str())));
    } else {
      std::fprintf(stderr, "usage: bench_par_flood [--ops N] [--reps R] [--sizes a,b,..] [--json PATH]\n");
      return 2;
    }
  }
  const long ops = opt.ops;
  const int reps = opt.reps;
  const std::string json = opt.json;
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  {
    accrete::init_options o;
    o.threads = accrete::thread_mode::par;
    accrete::runtime rt(o);
    const int me = accrete::rank_me();
    if (accrete::rank_n() != 2) {
      if (me == 0) std::fprintf(stderr, "bench_par_flood: run on 2 processes\n");
      return 1;
    }
    accrete::global_ptr<std::byte> target;
    if (me == 1) target = accrete::allocate(kRegion, 4096);
    MPI_Bcast(&target, sizeof target, MPI_BYTE, 1, MPI_COMM_WORLD);
    const bool remote = !target.is_local();

    void* wbase = nullptr;
    MPI_Win win;
    MPI_Win_allocate(MPI_Aint(me == 1 ? kRegion : 0), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &wbase, &win);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win);

    std::vector<std::byte> src(kRegion, std::byte{1});
    crew workers;
    struct row {
      std::size_t size;
      std::vector<impl> impls;
    };
    std::vector<row> rows;
    for (std::size_t n : sizes) {
      const std::size_t slots = std::max<std::size_t>(1, (kRegion / 2) / n);
      // One thread's flood into half `h` of the target.
      auto accrete_flood = [&, n, slots](int h) {
        accrete::promise<> p;
        for (long i = 0; i < ops; ++i) {
          const std::size_t off = std::size_t(h) * (kRegion / 2) + (std::size_t(i) % slots) * n;
          accrete::rput(src.data() + off, target + std::ptrdiff_t(off), n, p);
        }
        p.finalize().wait();
      };
      auto mpi_flood = [&, n, slots](int h) {
        for (long i = 0; i < ops; ++i) {
          const std::size_t off = std::size_t(h) * (kRegion / 2) + (std::size_t(i) % slots) * n;
          MPI_Put(src.data() + off, int(n), MPI_BYTE, 1, MPI_Aint(off), int(n), MPI_BYTE, win);
        }
        MPI_Win_flush(1, win);
      };
      row r{n, {}};
      r.impls.push_back({"accrete_1t", [=] { accrete_flood(0); }, 1, {}});
      r.impls.push_back({"accrete_2t", [&, accrete_flood] { workers.run(accrete_flood); }, 2, {}});
      r.impls.push_back({"mpi_1t", [=] { mpi_flood(0); }, 1, {}});
      r.impls.push_back({"mpi_2t", [&, mpi_flood] { workers.run(mpi_flood); }, 2, {}});
      if (me == 0)
        for (auto& x : r.impls) x.rep();  // warm-up
      accrete::barrier();
      for (int k = 0; k < reps; ++k) {
        if (me == 0) {
          for (std::size_t j = 0; j < r.impls.size(); ++j) {
            impl& x = r.impls[(j + std::size_t(k)) % r.impls.size()];
            const double t0 = bench::now();
            x.rep();
            const double dt = bench::now() - t0;
            x.rate.push_back(double(ops) * x.threads / dt / 1e6);
          }
        }
        accrete::barrier();  // rank 1 idles (polling) in here
      }
      rows.push_back(std::move(r));
    }

    if (me == 0) {
      char ver[MPI_MAX_LIBRARY_VERSION_STRING];
      int len = 0;
      MPI_Get_library_version(ver, &len);
      std::string v(ver, std::size_t(len));
      v = v.substr(0, v.find_first_of("\n\r,"));
      std::printf("bench_par_flood: %s; P = 2, target %s; %ld puts per thread per repetition; median of %d\n",
                  v.c_str(), remote ? "through MPI (ACCRETE_NODE_SIZE=1)" : "node-local", ops, reps);
      std::printf("million puts per second (all threads together)\n");
      std::printf("%8s %11s %11s %9s %9s %9s %9s %10s\n", "size", "accrete_1t", "accrete_2t", "mpi_1t", "mpi_2t",
                  "acc 2t/1t", "mpi 2t/1t", "2t acc/mpi");
      std::string js = "{\"benchmark\": \"bench_par_flood\", \"mpi_library\": \"" + v + "\", \"target_remote\": " +
                       (remote ? "true" : "false") + ", \"ops_per_thread\": " + std::to_string(ops) +
                       ", \"reps\": " + std::to_string(reps) + ", \"unit\": \"million puts per second\", \"results\": [";
      double worst_speedup = 1e9, worst_relative = 1e9;
      for (std::size_t i = 0; i < rows.size(); ++i) {
        const auto& r = rows[i];
        double m[4];
        for (int k = 0; k < 4; ++k) m[k] = bench::median(r.impls[std::size_t(k)].rate);
        const double acc = m[1] / m[0], mpi = m[3] / m[2];
        worst_speedup = std::min(worst_speedup, acc);
        worst_relative = std::min(worst_relative, acc / mpi);
        std::printf("%8zu %11.3f %11.3f %9.3f %9.3f %9.2f %9.2f %10.2f\n", r.size, m[0], m[1], m[2], m[3], acc, mpi,
                    m[1] / m[3]);
        js += std::string(i ? ", " : "") + "{\"size\": " + std::to_string(r.size);
        for (int k = 0; k < 4; ++k) {
          js += ", \"" + r.impls[std::size_t(k)].name + "\": {\"median\": " + bench::num(m[k]) + ", \"reps\": [";
          for (std::size_t j = 0; j < r.impls[std::size_t(k)].rate.size(); ++j)
            js += (j ? ", " : "") + bench::num(r.impls[std::size_t(k)].rate[j]);
          js += "]}";
        }
        js += ", \"accrete_2t_over_1t\": " + bench::num(acc) + ", \"mpi_2t_over_1t\": " + bench::num(mpi) + "}";
      }
      js += "], \"summary\": {\"min_accrete_2t_over_1t\": " + bench::num(worst_speedup) +
            ", \"min_accrete_speedup_over_mpi_speedup\": " + bench::num(worst_relative) + "}}\n";
      std::printf("min over sizes: accrete 2t/1t %.2f (goal 1.3); accrete speedup / MPI speedup %.2f (goal 1.0)\n",
                  worst_speedup, worst_relative);
      bench::write_file(json, js);
    }
    accrete::barrier();
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    if (me == 1) accrete::deallocate(target);
  }
  MPI_Finalize();
  return 0;
}
