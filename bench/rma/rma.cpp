// bench_rma: latency and flood bandwidth of accrete's contiguous rput/rget,
// against raw MPI RMA on an equivalent window and against memcpy.
//
// P = 2. Rank 0 issues every operation against memory of rank 1; rank 1 sits
// in accrete::barrier() (which polls MPI and backs off) while rank 0 measures
// a point, then both leave the barrier and go on to the next point.
//
// Per point (size, op, kind) and per implementation: calibrate an iteration
// count so that one repetition takes about --target-ms, then take --reps
// repetitions (implementations interleaved, order rotated per repetition) and
// report the median.
//   lat: one operation, then wait for its completion; repeated.  -> us per op
//   bw:  a flood of N operations in flight, then one wait for all. -> GB/s
//
// Implementations:
//   accrete   rput/rget: future-returning bulk forms (lat) or promise<>
//             overloads + finalize().wait() (bw)
//   upcxx     the same written against <upcxx/upcxx.hpp> (rma_upcxx.cpp):
//             upcxx::rput/rget(...).wait() (lat); operation_cx::as_promise
//             on one upcxx::promise<> + finalize().wait() (bw)
//   mpi       MPI_Put/MPI_Get + MPI_Win_flush(1) on a window the benchmark
//             creates itself with the same flavour accrete uses for this
//             layout: MPI_Win_allocate_shared on MPI_COMM_WORLD when the
//             target is node-local, MPI_Win_allocate otherwise; passive
//             target, MPI_Win_lock_all(MPI_MODE_NOCHECK), same info keys.
//   mpi_alt   (node-local mode only) the same on an MPI_Win_allocate window
//   memcpy    within rank 0 between private buffers (the physical bound)
//   direct    (node-local mode only, diagnostic) memcpy to/from the very
//             addresses accrete uses in rank 1's segment: accrete minus this
//             is accrete's software overhead
//
// Usage: bench_rma [--json PATH] [--reps N] [--target-ms X] [--min-size B]
//                  [--max-size B] [--quick] [--idle barrier|spin]
//   --idle spin: rank 1 spins on accrete::progress() (no backoff) instead of
//   sitting in accrete::barrier(), for MPIs whose RMA needs target progress
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <mpi.h>
#include <unistd.h>

#include "harness.hpp"
#include "accrete/accrete.hpp"
#include "rma_upcxx.hpp"

using bench::median;
using bench::now;

namespace {

using clk = std::chrono::steady_clock;
using gptr = accrete::global_ptr<std::byte>;

constexpr std::size_t kRegion = std::size_t{4} << 20;  // footprint of every buffer
constexpr std::size_t kFloodBytes = std::size_t{16} << 20;

struct options {
  int reps = 7;
  double target_ms = 8.0;  // one repetition
  double min_ms = 1.0;     // calibration run at least this long
  std::size_t min_size = 8, max_size = kRegion;
  std::string json;
  bool spin = false;  // rank 1 idles in a progress spin instead of accrete::barrier
};

enum class op_t { put, get };
enum class kind_t { lat, bw };
const char* name(op_t o) { return o == op_t::put ? "put" : "get"; }
const char* name(kind_t k) { return k == kind_t::lat ? "lat" : "bw"; }

// Operations in one flood, and distinct slots they cycle through (each
// buffer's footprint stays <= kRegion).
std::size_t flood_ops(std::size_t n) { return std::clamp<std::size_t>(kFloodBytes / n, 4, 256); }
std::size_t flood_slots(std::size_t n) { return std::max<std::size_t>(1, std::min(flood_ops(n), kRegion / n)); }

inline void clobber() { asm volatile("" ::: "memory"); }

[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "bench_rma: %s\n", msg.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

struct buffers {
  std::byte* src = nullptr;      // rank 0: origin of puts
  std::byte* dst = nullptr;      // rank 0: destination of gets
  std::byte* mtarget = nullptr;  // rank 0: memcpy's stand-in for the target
  gptr target;                   // rank 1's segment
  MPI_Win win = MPI_WIN_NULL;    // equivalent window (target region on rank 1)
  MPI_Win win_alt = MPI_WIN_NULL;
};

std::byte* alloc_private(std::size_t bytes) {
  void* p = std::aligned_alloc(4096, bytes);
  if (!p) die("out of memory");
  std::memset(p, 0, bytes);  // first touch outside the timed regions
  return static_cast<std::byte*>(p);
}

MPI_Win make_window(bool shared, std::size_t bytes) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "alloc_shared_noncontig", "true");  // as accrete does
  MPI_Info_set(info, "same_disp_unit", "true");
  void* base = nullptr;
  MPI_Win w;
  int rc = shared ? MPI_Win_allocate_shared(MPI_Aint(bytes), 1, info, MPI_COMM_WORLD, &base, &w)
                  : MPI_Win_allocate(MPI_Aint(bytes), 1, info, MPI_COMM_WORLD, &base, &w);
  MPI_Info_free(&info);
  if (rc != MPI_SUCCESS) die(shared ? "MPI_Win_allocate_shared failed" : "MPI_Win_allocate failed");
  if (bytes) std::memset(base, 0, bytes);
  MPI_Win_lock_all(MPI_MODE_NOCHECK, w);
  return w;
}

// One implementation of one point: runs `iters` repetitions of its unit of
// work (one blocking op, or one flood).
using runner = std::function<void(std::size_t)>;

runner make_accrete(const buffers& b, op_t op, kind_t kind, std::size_t n) {
  std::byte* src = b.src;
  std::byte* dst = b.dst;
  gptr t = b.target;
  if (kind == kind_t::lat) {
    if (op == op_t::put)
      return [=](std::size_t iters) {
        for (std::size_t i = 0; i < iters; ++i) accrete::rput(src, t, n).wait();
      };
    return [=](std::size_t iters) {
      for (std::size_t i = 0; i < iters; ++i) accrete::rget(t, dst, n).wait();
    };
  }
  std::size_t N = flood_ops(n), S = flood_slots(n);
  if (op == op_t::put)
    return [=](std::size_t iters) {
      for (std::size_t it = 0; it < iters; ++it) {
        accrete::promise<> p;
        for (std::size_t i = 0; i < N; ++i) {
          std::size_t off = (i % S) * n;
          accrete::rput(src + off, t + std::ptrdiff_t(off), n, p);
        }
        p.finalize().wait();
      }
    };
  return [=](std::size_t iters) {
    for (std::size_t it = 0; it < iters; ++it) {
      accrete::promise<> p;
      for (std::size_t i = 0; i < N; ++i) {
        std::size_t off = (i % S) * n;
        accrete::rget(t + std::ptrdiff_t(off), dst + off, n, p);
      }
      p.finalize().wait();
    }
  };
}

runner make_upcxx(const buffers& b, op_t op, kind_t kind, std::size_t n) {
  std::byte* src = b.src;
  std::byte* dst = b.dst;
  gptr t = b.target;
  if (kind == kind_t::lat) {
    if (op == op_t::put) return [=](std::size_t iters) { rma_upcxx::put_lat(src, t, n, iters); };
    return [=](std::size_t iters) { rma_upcxx::get_lat(t, dst, n, iters); };
  }
  std::size_t N = flood_ops(n), S = flood_slots(n);
  if (op == op_t::put) return [=](std::size_t iters) { rma_upcxx::put_flood(src, t, n, N, S, iters); };
  return [=](std::size_t iters) { rma_upcxx::get_flood(t, dst, n, N, S, iters); };
}

runner make_mpi(const buffers& b, MPI_Win w, op_t op, kind_t kind, std::size_t n) {
  std::byte* src = b.src;
  std::byte* dst = b.dst;
  int c = int(n);
  if (kind == kind_t::lat) {
    if (op == op_t::put)
      return [=](std::size_t iters) {
        for (std::size_t i = 0; i < iters; ++i) {
          MPI_Put(src, c, MPI_BYTE, 1, 0, c, MPI_BYTE, w);
          MPI_Win_flush(1, w);
        }
      };
    return [=](std::size_t iters) {
      for (std::size_t i = 0; i < iters; ++i) {
        MPI_Get(dst, c, MPI_BYTE, 1, 0, c, MPI_BYTE, w);
        MPI_Win_flush(1, w);
      }
    };
  }
  std::size_t N = flood_ops(n), S = flood_slots(n);
  if (op == op_t::put)
    return [=](std::size_t iters) {
      for (std::size_t it = 0; it < iters; ++it) {
        for (std::size_t i = 0; i < N; ++i) {
          std::size_t off = (i % S) * n;
          MPI_Put(src + off, c, MPI_BYTE, 1, MPI_Aint(off), c, MPI_BYTE, w);
        }
        MPI_Win_flush(1, w);
      }
    };
  return [=](std::size_t iters) {
    for (std::size_t it = 0; it < iters; ++it) {
      for (std::size_t i = 0; i < N; ++i) {
        std::size_t off = (i % S) * n;
        MPI_Get(dst + off, c, MPI_BYTE, 1, MPI_Aint(off), c, MPI_BYTE, w);
      }
      MPI_Win_flush(1, w);
    }
  };
}

// memcpy between src/dst and `target` (the private stand-in, or, for the
// "direct" series, the very addresses accrete copies to in rank 1's segment).
runner make_memcpy(const buffers& b, std::byte* target, op_t op, kind_t kind, std::size_t n) {
  // put: src -> target; get: target -> dst.
  std::byte* from = op == op_t::put ? b.src : target;
  std::byte* to = op == op_t::put ? target : b.dst;
  if (kind == kind_t::lat)
    return [=](std::size_t iters) {
      for (std::size_t i = 0; i < iters; ++i) {
        std::memcpy(to, from, n);
        clobber();
      }
    };
  std::size_t N = flood_ops(n), S = flood_slots(n);
  return [=](std::size_t iters) {
    for (std::size_t it = 0; it < iters; ++it) {
      for (std::size_t i = 0; i < N; ++i) {
        std::size_t off = (i % S) * n;
        std::memcpy(to + off, from + off, n);
      }
      clobber();
    }
  };
}

double time_run(const runner& r, std::size_t iters) {
  auto t0 = clk::now();
  r(iters);
  return std::chrono::duration<double>(clk::now() - t0).count();
}

// Iterations for one repetition of about target_ms.
std::size_t calibrate(const runner& r, const options& o) {
  std::size_t it = 1;
  for (;;) {
    double t = time_run(r, it);
    if (t * 1e3 >= o.min_ms || it >= (std::size_t{1} << 40)) {
      t = std::min(t, time_run(r, it));  // a second look: one hiccup must not shrink the count
      double want = double(it) * o.target_ms / std::max(t * 1e3, 1e-6);
      return std::max<std::size_t>(1, std::size_t(std::ceil(want)));
    }
    double grow = t > 0 ? std::clamp(o.min_ms / (t * 1e3) * 1.2, 2.0, 64.0) : 64.0;
    it = std::size_t(std::ceil(double(it) * grow));
  }
}

struct series {
  std::string impl;
  std::size_t iters = 0;
  std::vector<double> reps;  // us/op (lat) or GB/s (bw)
  double med = 0;
};

struct point {
  std::size_t size;
  op_t op;
  kind_t kind;
  std::vector<series> s;  // accrete, mpi, [mpi_alt], memcpy
  const series* find(const std::string& n) const {
    for (auto& x : s)
      if (x.impl == n) return &x;
    return nullptr;
  }
};

void check(bool ok, const std::string& what, std::size_t n) {
  if (!ok) die("verification failed: " + what + " at " + std::to_string(n) + " bytes");
}

// Round-trips a pattern through the target with accrete and with MPI.
void verify(const buffers& b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) b.src[i] = std::byte((i * 7 + n) & 0xff);
  std::memset(b.dst, 0, n);
  accrete::rput(b.src, b.target, n).wait();
  accrete::rget(b.target, b.dst, n).wait();
  check(std::memcmp(b.src, b.dst, n) == 0, "accrete rput/rget", n);
  for (std::size_t i = 0; i < n; ++i) b.src[i] = std::byte((i * 13 + n + 1) & 0xff);
  std::memset(b.dst, 0, n);
  rma_upcxx::put_lat(b.src, b.target, n, 1);
  rma_upcxx::get_flood(b.target, b.dst, n, 1, 1, 1);
  check(std::memcmp(b.src, b.dst, n) == 0, "upcxx rput/rget", n);
  std::memset(b.dst, 0, n);
  rma_upcxx::get_lat(b.target, b.dst, n, 1);
  check(std::memcmp(b.src, b.dst, n) == 0, "upcxx rget", n);
  for (MPI_Win w : {b.win, b.win_alt}) {
    if (w == MPI_WIN_NULL) continue;
    std::memset(b.dst, 0, n);
    MPI_Put(b.src, int(n), MPI_BYTE, 1, 0, int(n), MPI_BYTE, w);
    MPI_Win_flush(1, w);
    MPI_Get(b.dst, int(n), MPI_BYTE, 1, 0, int(n), MPI_BYTE, w);
    MPI_Win_flush(1, w);
    check(std::memcmp(b.src, b.dst, n) == 0, "MPI put/get", n);
  }
}

point measure(const buffers& b, std::size_t n, op_t op, kind_t kind, const options& o) {
  point p{n, op, kind, {}};
  std::vector<runner> rs;
  rs.push_back(make_accrete(b, op, kind, n));
  p.s.push_back(series{"accrete", 0, {}, 0});
  rs.push_back(make_upcxx(b, op, kind, n));
  p.s.push_back(series{"upcxx", 0, {}, 0});
  rs.push_back(make_mpi(b, b.win, op, kind, n));
  p.s.push_back(series{"mpi", 0, {}, 0});
  if (b.win_alt != MPI_WIN_NULL) {
    rs.push_back(make_mpi(b, b.win_alt, op, kind, n));
    p.s.push_back(series{"mpi_alt", 0, {}, 0});
  }
  rs.push_back(make_memcpy(b, b.mtarget, op, kind, n));
  p.s.push_back(series{"memcpy", 0, {}, 0});
  if (b.target.is_local()) {
    rs.push_back(make_memcpy(b, b.target.local(), op, kind, n));
    p.s.push_back(series{"direct", 0, {}, 0});
  }
  for (std::size_t k = 0; k < rs.size(); ++k) p.s[k].iters = calibrate(rs[k], o);
  const double unit_bytes = double(n) * double(kind == kind_t::bw ? flood_ops(n) : 1);
  for (int r = 0; r < o.reps; ++r) {
    for (std::size_t j = 0; j < rs.size(); ++j) {
      std::size_t k = (j + std::size_t(r)) % rs.size();
      double t = time_run(rs[k], p.s[k].iters);
      double per_unit = t / double(p.s[k].iters);
      p.s[k].reps.push_back(kind == kind_t::lat ? per_unit * 1e6 : unit_bytes / per_unit / 1e9);
    }
  }
  for (auto& x : p.s) x.med = median(x.reps);
  return p;
}

std::string human(std::size_t n) {
  char buf[32];
  if (n >= (std::size_t{1} << 20) && n % (std::size_t{1} << 20) == 0)
    std::snprintf(buf, sizeof buf, "%zuM", n >> 20);
  else if (n >= 1024 && n % 1024 == 0)
    std::snprintf(buf, sizeof buf, "%zuK", n >> 10);
  else
    std::snprintf(buf, sizeof buf, "%zu", n);
  return buf;
}

std::string library_version() {
  char v[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(v, &len);
  std::string s(v, std::size_t(len));
  auto nl = s.find_first_of("\n\r");
  if (nl != std::string::npos) s.resize(nl);
  while (!s.empty() && (s.back() == ' ' || s.back() == ',')) s.pop_back();
  return s;
}

std::string flavor(const std::string& v) {
  if (v.find("Open MPI") != std::string::npos) return "openmpi";
  if (v.find("MPICH") != std::string::npos) return "mpich";
  return "mpi";
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\')
      o += '\\', o += c;
    else if (static_cast<unsigned char>(c) < 0x20)
      o += ' ';
    else
      o += c;
  }
  return o;
}

// ratio of the displayed metric (accrete / other)
double ratio(const point& p, const char* other) {
  const series* a = p.find("accrete");
  const series* b = p.find(other);
  return (a && b && b->med > 0) ? a->med / b->med : 0.0;
}

// upcxx's time over accrete's for the same work (> 1: the UPC++ layer is
// slower): the median over repetitions of the ratio within a repetition,
// whose two runs are milliseconds apart, so machine drift cancels.
double upcxx_slowdown(const point& p) {
  const series* a = p.find("accrete");
  const series* u = p.find("upcxx");
  if (!a || !u || a->reps.size() != u->reps.size()) return 0.0;
  return p.kind == kind_t::lat ? bench::median_ratio(u->reps, a->reps) : bench::median_ratio(a->reps, u->reps);
}

// Goal checks: accrete no more than 10% slower than MPI; upcxx no more
// than 5% slower than accrete; node-local
// bandwidth >= 0.8x memcpy from 64 KiB.
bool misses_mpi(const point& p) {
  double r = ratio(p, "mpi");
  return p.kind == kind_t::lat ? r > 1.10 : r < 1.0 / 1.10;
}
bool misses_upcxx(const point& p) { return upcxx_slowdown(p) > 1.05; }
bool misses_memcpy(const point& p, bool local) {
  return local && p.kind == kind_t::bw && p.size >= (std::size_t{64} << 10) && ratio(p, "memcpy") < 0.8;
}

void print_table(const std::vector<point>& pts, kind_t kind, bool local, bool alt, const char* path) {
  bool lat = kind == kind_t::lat;
  std::printf("\n%s (%s; median of reps)\n", lat ? "Blocking round-trip latency" : "Flood bandwidth",
              lat ? "us per op, lower is better" : "GB/s = 1e9 B/s, higher is better");
  std::printf("%-6s %-4s %-10s %10s %10s %10s", "size", "op", "path", "accrete", "upcxx", "MPI");
  if (alt) std::printf(" %10s", "MPI(alloc)");
  std::printf(" %10s", "memcpy");
  if (local) std::printf(" %10s", "direct");
  std::printf(" %9s %11s %9s  %s\n", "acc/MPI", "acc/memcpy", "upcxx-x", "flags");
  for (const auto& p : pts) {
    if (p.kind != kind) continue;
    std::printf("%-6s %-4s %-10s %10.3f %10.3f %10.3f", human(p.size).c_str(), name(p.op), path,
                p.find("accrete")->med, p.find("upcxx")->med, p.find("mpi")->med);
    if (alt) std::printf(" %10.3f", p.find("mpi_alt")->med);
    std::string flags;
    if (misses_mpi(p)) flags += " >10%-vs-MPI";
    if (misses_memcpy(p, local)) flags += " <0.8x-memcpy";
    if (misses_upcxx(p)) flags += " upcxx>1.05x";
    std::printf(" %10.3f", p.find("memcpy")->med);
    if (local) std::printf(" %10.3f", p.find("direct")->med);
    std::printf(" %9.2f %11.2f %9.3f %s\n", ratio(p, "mpi"), ratio(p, "memcpy"), upcxx_slowdown(p), flags.c_str());
  }
}

void write_json(const std::string& file, const std::vector<point>& pts, const options& o, const std::string& ver,
                const std::string& mode, bool local, const char* win_name, bool alt, double seconds) {
  FILE* f = std::fopen(file.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "bench_rma: cannot write %s\n", file.c_str());
    return;
  }
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  const char* ns = std::getenv("ACCRETE_NODE_SIZE");
  std::fprintf(f, "{\n  \"benchmark\": \"bench_rma\",\n  \"mpi_library\": \"%s\",\n", json_escape(ver).c_str());
  std::fprintf(f, "  \"mode\": \"%s\",\n  \"accrete_path\": \"%s\",\n  \"is_local\": %s,\n", mode.c_str(),
               local ? "node-local" : "mpi", local ? "true" : "false");
  std::fprintf(f, "  \"accrete_node_size_env\": %s,\n", ns ? ("\"" + json_escape(ns) + "\"").c_str() : "null");
  std::fprintf(f, "  \"host\": \"%s\",\n  \"processes\": 2,\n  \"online_cpus\": %ld,\n", json_escape(host).c_str(),
               sysconf(_SC_NPROCESSORS_ONLN));
  std::fprintf(f, "  \"mpi_window\": \"%s\",\n  \"mpi_alt_window\": %s,\n", win_name,
               alt ? "\"MPI_Win_allocate\"" : "null");
  std::fprintf(f, "  \"rank1_idle\": \"%s\",\n", o.spin ? "progress spin" : "accrete::barrier");
  std::fprintf(f, "  \"reps\": %d,\n  \"target_ms_per_rep\": %g,\n  \"wall_seconds\": %.2f,\n", o.reps, o.target_ms,
               seconds);
  std::fprintf(f, "  \"units\": {\"lat\": \"us per op (median)\", \"bw\": \"GB/s, 1e9 B/s (median)\"},\n");
  std::fprintf(f, "  \"results\": [\n");
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const auto& p = pts[i];
    std::fprintf(f, "    {\"size\": %zu, \"op\": \"%s\", \"kind\": \"%s\", \"ops_per_flood\": %zu,\n", p.size,
                 name(p.op), name(p.kind), p.kind == kind_t::bw ? flood_ops(p.size) : std::size_t{1});
    for (const auto& s : p.s) {
      std::fprintf(f, "     \"%s\": {\"median\": %.6g, \"iters\": %zu, \"reps\": [", s.impl.c_str(), s.med, s.iters);
      for (std::size_t r = 0; r < s.reps.size(); ++r) std::fprintf(f, "%s%.6g", r ? ", " : "", s.reps[r]);
      std::fprintf(f, "]},\n");
    }
    std::fprintf(f,
                 "     \"ratio_accrete_mpi\": %.4f, \"ratio_accrete_memcpy\": %.4f, \"upcxx_slowdown\": %.4f, "
                 "\"misses_mpi_goal\": %s, \"misses_memcpy_goal\": %s, \"misses_upcxx_goal\": %s}%s\n",
                 ratio(p, "mpi"), ratio(p, "memcpy"), upcxx_slowdown(p), misses_mpi(p) ? "true" : "false",
                 misses_memcpy(p, local) ? "true" : "false", misses_upcxx(p) ? "true" : "false",
                 i + 1 < pts.size() ? "," : "");
  }
  double worst = 0;
  std::size_t upcxx_misses = 0;
  std::vector<double> slow;
  for (const auto& p : pts) {
    worst = std::max(worst, upcxx_slowdown(p));
    slow.push_back(upcxx_slowdown(p));
    upcxx_misses += misses_upcxx(p);
  }
  std::fprintf(f,
               "  ],\n  \"summary\": {\"upcxx_slowdown_max\": %.4f, \"upcxx_slowdown_median\": %.4f, "
               "\"upcxx_cells_over_1_05\": %zu, \"cells\": %zu}\n}\n",
               worst, median(slow), upcxx_misses, pts.size());
  std::fclose(f);
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) die("missing value after " + a);
      return argv[++i];
    };
    if (a == "--json")
      o.json = next();
    else if (a == "--reps")
      o.reps = std::max(1, std::atoi(next().c_str()));
    else if (a == "--target-ms")
      o.target_ms = std::max(0.1, std::atof(next().c_str()));
    else if (a == "--min-size")
      o.min_size = std::size_t(std::atoll(next().c_str()));
    else if (a == "--max-size")
      o.max_size = std::min(kRegion, std::size_t(std::atoll(next().c_str())));
    else if (a == "--quick")
      o.reps = 5, o.target_ms = 3.0;
    else if (a == "--idle") {
      std::string v = next();
      if (v == "spin")
        o.spin = true;
      else if (v == "barrier")
        o.spin = false;
      else
        die("--idle takes barrier or spin, not '" + v + "'");
    } else if (a == "-h" || a == "--help") {
      std::printf(
          "usage: bench_rma [--json PATH] [--reps N] [--target-ms X] [--min-size B] [--max-size B] [--quick] [--idle "
          "barrier|spin]\n");
      std::exit(0);
    } else
      die("unknown argument '" + a + "'");
  }
  o.min_size = std::max<std::size_t>(1, o.min_size);
  return o;
}

// Where rank 1 waits while rank 0 measures one point. Rank 0 always calls
// accrete::barrier(); both forms are an MPI_Ibarrier on the world team.
void idle(const options& o) {
  if (!o.spin || accrete::rank_me() == 0) {
    accrete::barrier();
    return;
  }
  MPI_Request r;
  MPI_Ibarrier(accrete::world().mpi_comm(), &r);
  for (int done = 0;;) {
    MPI_Test(&r, &done, MPI_STATUS_IGNORE);
    if (done) break;
    accrete::progress();
  }
}

}  // namespace

int main(int argc, char** argv) {
  accrete::runtime rt;
  options o = parse(argc, argv);
  const int me = accrete::rank_me();
  if (accrete::rank_n() != 2) {
    if (me == 0) std::fprintf(stderr, "bench_rma: run on exactly 2 processes (got %d)\n", accrete::rank_n());
    return 1;
  }

  // Rank 1 owns the target: 4 MiB in its accrete segment, page aligned.
  buffers b;
  gptr mine;
  if (me == 1) {
    mine = accrete::allocate(kRegion, 4096);
    std::memset(mine.local(), 0, kRegion);
    b.target = mine;
  }
  MPI_Bcast(&b.target, sizeof b.target, MPI_BYTE, 1, accrete::world().mpi_comm());
  const bool local = b.target.is_local();  // the path accrete takes (as seen by rank 0)
  int local_i = local;
  MPI_Bcast(&local_i, 1, MPI_INT, 0, MPI_COMM_WORLD);
  const bool is_local_path = local_i != 0;

  // The equivalent MPI window (rank 1 holds the target region).
  const std::size_t wbytes = me == 1 ? kRegion : 0;
  b.win = make_window(is_local_path, wbytes);
  if (is_local_path) b.win_alt = make_window(false, wbytes);
  const char* win_name = is_local_path ? "MPI_Win_allocate_shared" : "MPI_Win_allocate";
  const bool alt = b.win_alt != MPI_WIN_NULL;

  if (me == 0) {
    b.src = alloc_private(kRegion);
    b.dst = alloc_private(kRegion);
    b.mtarget = alloc_private(kRegion);
  }

  const std::string ver = library_version();
  const std::string mode = flavor(ver) + "-" + (is_local_path ? "node-local" : "mpi");
  const char* path = is_local_path ? "node-local" : "mpi";
  if (o.json.empty()) o.json = "bench_rma_" + mode + ".json";

  std::vector<std::size_t> sizes;
  for (std::size_t n = 8; n <= o.max_size; n *= 2)
    if (n >= o.min_size) sizes.push_back(n);

  accrete::barrier();
  auto t0 = clk::now();
  std::vector<point> pts;
  for (std::size_t n : sizes) {
    if (me == 0) verify(b, n);
    accrete::barrier();
    for (kind_t kind : {kind_t::lat, kind_t::bw})
      for (op_t op : {op_t::put, op_t::get}) {
        if (me == 0) pts.push_back(measure(b, n, op, kind, o));
        idle(o);  // rank 1 idles here (polling MPI) while rank 0 measures
      }
  }
  double secs = std::chrono::duration<double>(clk::now() - t0).count();

  if (me == 0) {
    const char* ns = std::getenv("ACCRETE_NODE_SIZE");
    std::printf("bench_rma: %s\n", ver.c_str());
    std::printf(
        "mode %s: P = 2, rank 0 -> rank 1, ACCRETE_NODE_SIZE=%s, accrete path: %s "
        "(global_ptr::is_local() = %s)\n",
        mode.c_str(), ns ? ns : "(unset)", path, is_local_path ? "true" : "false");
    std::printf("rank 1 idles in %s\n", o.spin ? "a spin on accrete::progress() (--idle spin)" : "accrete::barrier()");
    std::printf("MPI baseline: MPI_Put/MPI_Get + MPI_Win_flush on %s over MPI_COMM_WORLD, lock_all%s\n", win_name,
                alt ? "; MPI(alloc): same on MPI_Win_allocate" : "");
    if (is_local_path) std::printf("direct: memcpy to/from the same segment addresses accrete uses (diagnostic)\n");
    std::printf(
        "memcpy: within rank 0, private buffers. reps %d, ~%.1f ms each; flood = min(256, max(4, 16 MiB/size)) "
        "ops; wall %.1f s\n",
        o.reps, o.target_ms, secs);
    print_table(pts, kind_t::lat, is_local_path, alt, path);
    print_table(pts, kind_t::bw, is_local_path, alt, path);
    std::vector<double> slow;
    std::size_t over = 0;
    for (const auto& p : pts) slow.push_back(upcxx_slowdown(p)), over += misses_upcxx(p);
    std::printf("\nupcxx-x (upcxx time / accrete time for the same work): median %.3f, max %.3f; %zu of %zu cells over 1.05\n",
                median(slow), *std::max_element(slow.begin(), slow.end()), over, slow.size());
    write_json(o.json, pts, o, ver, mode, is_local_path, win_name, alt, secs);
    std::printf("\nwrote %s\n", o.json.c_str());
    std::fflush(stdout);
  }

  accrete::barrier();
  MPI_Win_unlock_all(b.win);
  MPI_Win_free(&b.win);
  if (b.win_alt != MPI_WIN_NULL) {
    MPI_Win_unlock_all(b.win_alt);
    MPI_Win_free(&b.win_alt);
  }
  if (me == 1) accrete::deallocate(mine);
  std::free(b.src);
  std::free(b.dst);
  std::free(b.mtarget);
  return 0;
}
