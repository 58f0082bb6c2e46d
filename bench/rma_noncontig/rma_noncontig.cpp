// bench_rma_noncontig: strided and irregular transfers — accrete
// (automatic, and with the MPI method forced to derived datatypes or to
// batched contiguous operations) against the equivalent MPI derived-datatype
// MPI_Put/MPI_Get + MPI_Win_flush on the same window (accrete's segment
// window), P = 2.
//
// Rank 0 issues every operation against rank 1's segment; rank 1 waits in
// accrete::barrier() (which polls MPI and backs off). One measurement = one
// operation then wait for its completion, repeated for about --target-ms;
// --reps repetitions, implementations interleaved; the median in microseconds
// per operation is reported. Each shape is verified first (put, then get back
// through each implementation, compared with the source).
//
// Run node-local (default) or with ACCRETE_NODE_SIZE=1 (MPI path).
//   bench_rma_noncontig [--reps N] [--target-ms X] [--json PATH]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <mpi.h>

#include "harness.hpp"
#include "accrete/accrete.hpp"
#include "accrete/rma_irregular.hpp"
#include "accrete/rma_strided.hpp"

using bench::median;
using bench::now;

namespace {

using clk = std::chrono::steady_clock;
namespace ad = accrete::detail;

// A shape: either a strided section (ext/strides in doubles, 1-3 dims) or
// an irregular list of fragments (remote offsets in doubles, all of `frag` doubles).
struct shape {
  std::string name;
  bool irregular = false;
  std::vector<std::size_t> ext;
  std::vector<std::ptrdiff_t> rstr;  // remote strides (doubles); local side is compact
  std::size_t frags = 0, frag = 0;
  std::size_t elems() const {
    if (irregular) return frags * frag;
    std::size_t n = 1;
    for (auto e : ext) n *= e;
    return n;
  }
};

std::vector<shape> shapes() {
  std::vector<shape> s;
  // Faces of an n^3 cube of doubles (k fastest): x-face rows are 8n bytes,
  // z-face has 8-byte runs.
  for (std::size_t n : {16, 64, 128}) {
    const std::ptrdiff_t N = std::ptrdiff_t(n);
    s.push_back({"xface" + std::to_string(n), false, {n, n}, {N, 1}});  // within a plane: contiguous rows of n
    s.push_back({"yface" + std::to_string(n), false, {n, n}, {N * N, 1}});
    s.push_back({"zface" + std::to_string(n), false, {n, n}, {N * N, N}});
  }
  s.push_back({"subcube32", false, {32, 32, 32}, {128 * 128, 128, 1}});
  s.push_back({"column4096", false, {4096}, {16}});
  for (auto [k, l] : {std::pair<std::size_t, std::size_t>{64, 1}, {1024, 1}, {256, 16}, {64, 1024}, {4, 16384}})
    s.push_back({"irr" + std::to_string(k) + "x" + std::to_string(l), true, {}, {}, k, l});
  return s;
}

// Where each shape's elements live in the remote region (offsets in doubles).
std::vector<std::size_t> remote_offsets(const shape& s) {
  std::vector<std::size_t> off;
  if (s.irregular) {
    // Fragments at shuffled, non-adjacent slots.
    std::vector<std::size_t> slot(s.frags);
    std::iota(slot.begin(), slot.end(), 0);
    std::shuffle(slot.begin(), slot.end(), std::mt19937(42));
    for (std::size_t i = 0; i < s.frags; ++i) off.push_back(slot[i] * (s.frag + 3));
    return off;
  }
  std::vector<std::size_t> idx(s.ext.size(), 0);
  for (std::size_t n = 0; n < s.elems(); ++n) {
    std::size_t o = 0;
    for (std::size_t d = 0; d < idx.size(); ++d) o += idx[d] * std::size_t(s.rstr[d]);
    off.push_back(o);
    for (std::size_t d = idx.size(); d-- > 0;)
      if (++idx[d] < s.ext[d])
        break;
      else
        idx[d] = 0;
  }
  return off;
}

MPI_Datatype remote_type(const shape& s) {
  MPI_Datatype t;
  if (s.irregular) {
    auto off = remote_offsets(s);
    std::vector<int> len(s.frags, int(s.frag * sizeof(double)));
    std::vector<MPI_Aint> d(s.frags);
    for (std::size_t i = 0; i < s.frags; ++i) d[i] = MPI_Aint(off[i] * sizeof(double));
    MPI_Type_create_hindexed(int(s.frags), len.data(), d.data(), MPI_BYTE, &t);
  } else {
    MPI_Type_dup(MPI_DOUBLE, &t);
    for (std::size_t d = s.ext.size(); d-- > 0;) {
      MPI_Datatype o;
      MPI_Type_create_hvector(int(s.ext[d]), 1, MPI_Aint(s.rstr[d] * sizeof(double)), t, &o);
      MPI_Type_free(&t);
      t = o;
    }
  }
  MPI_Type_commit(&t);
  return t;
}

struct options {
  int reps = 7;
  double target_ms = 20;
  std::string json;
};

}  // namespace

int main(int argc, char** argv) {
  accrete::runtime rt;
  options opt;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--reps")
      opt.reps = std::max(3, std::atoi(argv[i + 1]));
    else if (a == "--target-ms")
      opt.target_ms = std::atof(argv[i + 1]);
    else if (a == "--json")
      opt.json = argv[i + 1];
  }
  const int me = accrete::rank_me();
  if (accrete::rank_n() != 2) {
    if (me == 0) std::fprintf(stderr, "bench_rma_noncontig: run on exactly 2 processes\n");
    return 2;
  }
  constexpr std::size_t region = std::size_t(128) * 128 * 128 + 16;  // doubles
  auto mine = accrete::new_array<double>(region);
  accrete::global_ptr<double> peer;
  {
    std::vector<accrete::global_ptr<double>> all(2);
    MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, accrete::world().mpi_comm());
    peer = all[1 - me];
  }
  const bool local = peer.is_local();
  // The plain-MPI baseline's own window over a region like `mine`, made as
  // accrete makes its segment window: shared memory when the peer is
  // node-local, else MPI_Win_allocate (also under ACCRETE_NODE_SIZE=1).
  // Displacement unit 1, locked for the run.
  MPI_Win win = MPI_WIN_NULL;
  {
    void* base = nullptr;
    const MPI_Aint bytes = MPI_Aint(region * sizeof(double));
    if (local)
      MPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    else
      MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
  }
  struct row {
    std::string shape, op, impl;
    double us;
  };
  std::vector<row> rows;
  int verified = 1;
  if (me == 0) {
    std::vector<double> src(region), dst(region);
    for (std::size_t i = 0; i < region; ++i) src[i] = double(i) + 0.5;
    for (const auto& s : shapes()) {
      auto roff = remote_offsets(s);
      const std::size_t n = s.elems();
      MPI_Datatype rt = remote_type(s);
      // accrete argument lists, built once (the caller's data structure).
      std::vector<std::ptrdiff_t> lstr(s.ext.size()), rstr_b(s.ext.size());
      for (std::size_t d = s.ext.size(), acc = 1; d-- > 0;) {
        lstr[d] = std::ptrdiff_t(acc * sizeof(double));
        acc *= s.ext[d];
        rstr_b[d] = s.rstr[d] * std::ptrdiff_t(sizeof(double));
      }
      std::vector<std::pair<const double*, std::size_t>> lsrc{{src.data(), n}};
      std::vector<std::pair<double*, std::size_t>> ldst{{dst.data(), n}};
      std::vector<std::pair<accrete::global_ptr<double>, std::size_t>> rfr;
      if (s.irregular)
        for (std::size_t i = 0; i < s.frags; ++i) rfr.push_back({peer + std::ptrdiff_t(roff[i]), s.frag});
      auto acc_put = [&] {
        if (s.irregular)
          accrete::rput_irregular(lsrc.begin(), lsrc.end(), rfr.begin(), rfr.end()).wait();
        else
          accrete::rput_strided<double>(src.data(), lstr, peer, rstr_b, s.ext).wait();
      };
      auto acc_get = [&] {
        if (s.irregular)
          accrete::rget_irregular(rfr.begin(), rfr.end(), ldst.begin(), ldst.end()).wait();
        else
          accrete::rget_strided<double>(peer, rstr_b, dst.data(), lstr, s.ext).wait();
      };
      auto mpi_put = [&] {
        MPI_Put(src.data(), int(n), MPI_DOUBLE, 1, 0, 1, rt, win);
        MPI_Win_flush(1, win);
      };
      auto mpi_get = [&] {
        MPI_Get(dst.data(), int(n), MPI_DOUBLE, 1, 0, 1, rt, win);
        MPI_Win_flush(1, win);
      };
      struct impl {
        std::string name;
        ad::noncontig_method m;
        bool mpi;
      };
      std::vector<impl> impls{{"accrete", ad::noncontig_method::automatic, false}};
      if (!local) {
        impls.push_back({"acc_datatype", ad::noncontig_method::datatype, false});
        impls.push_back({"acc_batched", ad::noncontig_method::batched, false});
        // Irregular transfers have no message path (forced, they choose as auto).
        if (!s.irregular) impls.push_back({"acc_message", ad::noncontig_method::message, false});
      }
      impls.push_back({"mpi_dtype", ad::noncontig_method::automatic, true});
      for (int op = 0; op < 2; ++op) {
        // Verify: every implementation's put followed by its get returns the source.
        for (auto& im : impls) {
          ad::set_noncontig_method(im.m);
          std::fill(dst.begin(), dst.end(), -1.0);
          if (im.mpi)
            mpi_put(), mpi_get();
          else
            acc_put(), acc_get();
          if (!std::equal(src.begin(), src.begin() + std::ptrdiff_t(n), dst.begin())) {
            verified = 0;
            std::fprintf(stderr, "bench_rma_noncontig: %s %s round trip differs\n", s.name.c_str(), im.name.c_str());
          }
        }
        std::vector<std::vector<double>> t(impls.size());
        std::vector<long> iters(impls.size(), 1);
        for (std::size_t i = 0; i < impls.size(); ++i) {  // calibrate
          ad::set_noncontig_method(impls[i].m);
          auto f = impls[i].mpi ? (op ? std::function<void()>(mpi_get) : mpi_put)
                                : (op ? std::function<void()>(acc_get) : acc_put);
          for (;;) {
            auto t0 = clk::now();
            for (long k = 0; k < iters[i]; ++k) f();
            double ms = std::chrono::duration<double, std::milli>(clk::now() - t0).count();
            if (ms > opt.target_ms / 4 || iters[i] > (1 << 22)) {
              iters[i] = std::max(1L, long(double(iters[i]) * opt.target_ms / std::max(ms, 1e-3)));
              break;
            }
            iters[i] *= 4;
          }
        }
        for (int r = 0; r < opt.reps; ++r)
          for (std::size_t q = 0; q < impls.size(); ++q) {
            std::size_t i = (q + std::size_t(r)) % impls.size();
            ad::set_noncontig_method(impls[i].m);
            auto f = impls[i].mpi ? (op ? std::function<void()>(mpi_get) : mpi_put)
                                  : (op ? std::function<void()>(acc_get) : acc_put);
            auto t0 = clk::now();
            for (long k = 0; k < iters[i]; ++k) f();
            t[i].push_back(std::chrono::duration<double, std::micro>(clk::now() - t0).count() / double(iters[i]));
          }
        for (std::size_t i = 0; i < impls.size(); ++i)
          rows.push_back({s.name, op ? "get" : "put", impls[i].name, median(t[i])});
      }
      ad::set_noncontig_method(ad::noncontig_method::automatic);
      MPI_Type_free(&rt);
    }
  }
  accrete::barrier();
  if (me == 0) {
    std::printf("bench_rma_noncontig: P=2, %s path, MPI %s, %d reps, us per operation (op + wait), median\n",
                local ? "node-local" : "MPI (remote)", ACCRETE_BENCH_MPI, opt.reps);
    std::printf("%-13s %-4s %10s %13s %12s %12s %10s %9s\n", "shape", "op", "accrete", "acc_datatype", "acc_batched",
                "acc_message", "mpi_dtype", "acc/mpi");
    for (std::size_t i = 0; i < rows.size();) {
      std::size_t j = i;
      double v[5] = {-1, -1, -1, -1, -1};
      for (; j < rows.size() && rows[j].shape == rows[i].shape && rows[j].op == rows[i].op; ++j) {
        const auto& im = rows[j].impl;
        v[im == "accrete"        ? 0
          : im == "acc_datatype" ? 1
          : im == "acc_batched"  ? 2
          : im == "acc_message"  ? 3
                                 : 4] = rows[j].us;
      }
      auto cell = [](double x) { return x < 0 ? std::string("-") : std::to_string(x).substr(0, 8); };
      std::printf("%-13s %-4s %10s %13s %12s %12s %10s %8.2fx\n", rows[i].shape.c_str(), rows[i].op.c_str(),
                  cell(v[0]).c_str(), cell(v[1]).c_str(), cell(v[2]).c_str(), cell(v[3]).c_str(), cell(v[4]).c_str(),
                  v[0] / v[4]);
      i = j;
    }
    std::printf("verification: %s\n", verified ? "all round trips exact" : "FAILED");
    if (!opt.json.empty()) {
      if (FILE* f = std::fopen(opt.json.c_str(), "w")) {
        std::fprintf(
            f, "{\"bench\":\"rma_noncontig\",\"mpi\":\"%s\",\"path\":\"%s\",\"reps\":%d,\"verified\":%s,\"rows\":[",
            ACCRETE_BENCH_MPI, local ? "node-local" : "mpi", opt.reps, verified ? "true" : "false");
        for (std::size_t i = 0; i < rows.size(); ++i)
          std::fprintf(f, "%s{\"shape\":\"%s\",\"op\":\"%s\",\"impl\":\"%s\",\"us\":%.4g}", i ? "," : "",
                       rows[i].shape.c_str(), rows[i].op.c_str(), rows[i].impl.c_str(), rows[i].us);
        std::fprintf(f, "]}\n");
        std::fclose(f);
      }
    }
  }
  accrete::barrier();
  MPI_Win_unlock_all(win);
  MPI_Win_free(&win);
  accrete::delete_array(mine);
  return verified ? 0 : 1;
}
