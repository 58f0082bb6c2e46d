#pragma once
// Explicit finite-difference solver of unsteady 3D heat conduction, with four
// halo-exchange variants that must produce bit-identical fields:
//   1 sendrecv   MPI_Sendrecv of derived-datatype faces, dimension by dimension
//   2 mpi_rget   plain MPI-3 RMA: per direction a barrier, then MPI_Rget of both
//                neighbour faces + MPI_Waitall (the DART-MPI paper's baseline)
//   3 acc_get    the same structure on accrete: barrier, blocking rget_strided
//   4 acc_put    accrete non-blocking rput_strided of the own faces into the
//                neighbours' halos, each with a remote completion that tells
//                the neighbour its halo has arrived; no global synchronisation
//
// Grid: nx*ny*nz interior points, Px*Py*Pz processes (MPI_Dims_create), one
// halo layer. Fixed temperatures on the six outer faces (stored in the halo
// cells of the boundary processes and never overwritten), zero inside at
// t = 0; u' = u + alpha * (sum of 6 neighbours - 6u), alpha <= 1/6.
//
// Two buffers alternate (step s reads buffer s%2 and writes (s+1)%2), which is
// what lets variant 4 run without barriers: a neighbour can only be one step
// ahead, and it then writes into the buffer we are not reading.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <mpi.h>

#include "accrete/accrete.hpp"
#include "accrete/rma_strided.hpp"

namespace heat3d {

struct config {
  int nx = 96, ny = 96, nz = 96;
  int steps = 100;
  double alpha = 0.15;
  int check_every = 0;  // > 0: all-reduce the max change every this many steps
  // Measurement aid: an untimed MPI_Barrier between the compute and the halo
  // exchange of every step, so that the halo time is the exchange alone and
  // not also the wait for the slowest neighbour's compute (OS jitter on an
  // oversubscribed machine otherwise dominates it).
  bool sync_before_exchange = false;
};

inline const char* variant_name(int v) {
  static const char* n[] = {"sendrecv", "mpi_rget", "acc_get", "acc_put"};
  return n[v];
}

struct timings {
  double compute = 0, halo = 0;
  double max_change = 0;  // last convergence check (0 if none)
};

// Block sizes of one process along one axis (the remainder goes to the first).
inline int block_len(int n, int p, int c) { return n / p + (c < n % p ? 1 : 0); }

class solver {
 public:
  explicit solver(const config& cfg) : cfg_(cfg) {
    comm_ = accrete::world().mpi_comm();
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    dims_ = {0, 0, 0};
    MPI_Dims_create(size_, 3, dims_.data());
    coords_ = coords_of(rank_);
    const std::array<int, 3> n{cfg.nx, cfg.ny, cfg.nz};
    for (int d = 0; d < 3; ++d) {
      if (n[d] < dims_[d]) throw std::invalid_argument("heat3d: grid smaller than the process grid");
      for (int s = 0; s < 2; ++s) {
        auto c = coords_;
        c[d] += s ? 1 : -1;
        nbr_[d][s] = (c[d] < 0 || c[d] >= dims_[d]) ? -1 : rank_of(c);
      }
    }
    l_ = local_dims(coords_);
    cells_ = std::size_t(l_[0] + 2) * (l_[1] + 2) * (l_[2] + 2);
    setup_types();
    setup_window();
    setup_accrete();
  }
  ~solver() {
    accrete::barrier();
    MPI_Win_unlock_all(win_);
    MPI_Win_free(&win_);
    for (auto& t : face_type_) MPI_Type_free(&t);
    for (auto& per_dim : nbr_type_)
      for (auto& t : per_dim)
        if (t != MPI_DATATYPE_NULL) MPI_Type_free(&t);
    accrete::delete_array(seg_[0]);
    accrete::delete_array(seg_[1]);
  }

  const std::array<int, 3>& dims() const { return dims_; }
  const std::array<int, 3>& local() const { return l_; }
  std::size_t cells() const { return cells_; }

  /// Runs `cfg.steps` steps with variant v (0..3) from the initial state;
  /// returns this process's times. The final field is in final_field(v).
  timings run(int v) {
    double* buf[2];
    buffers(v, buf);
    init_field(buf[0]);
    init_field(buf[1]);
    // Reset before the barrier: a neighbour that leaves it first may signal
    // us while we are still inside it (the barrier runs handlers).
    signals_[0] = signals_[1] = 0;
    accrete::barrier();
    timings t;
    using clk = std::chrono::steady_clock;
    for (int s = 0; s < cfg_.steps; ++s) {
      double* cur = buf[s % 2];
      double* nxt = buf[(s + 1) % 2];
      auto t0 = clk::now();
      double change = kernel(cur, nxt, cfg_.check_every > 0 && (s + 1) % cfg_.check_every == 0);
      auto t1 = clk::now();
      t.compute += std::chrono::duration<double>(t1 - t0).count();
      if (cfg_.sync_before_exchange) {
        MPI_Barrier(comm_);
        t1 = clk::now();
      }
      exchange(v, (s + 1) % 2, nxt);
      auto t2 = clk::now();
      t.halo += std::chrono::duration<double>(t2 - t1).count();
      if (cfg_.check_every > 0 && (s + 1) % cfg_.check_every == 0)
        MPI_Allreduce(&change, &t.max_change, 1, MPI_DOUBLE, MPI_MAX, comm_);
    }
    // Variant 4 has no trailing synchronisation; make sure every signal for
    // this run has been consumed before the next run reuses the counters.
    accrete::barrier();
    return t;
  }

  /// The field of the last run of variant v (after cfg.steps steps).
  const double* final_field(int v) {
    double* buf[2];
    buffers(v, buf);
    return buf[cfg_.steps % 2];
  }

  /// Sum of the interior values over all processes (for reporting).
  double checksum(const double* u) const {
    double s = 0;
    for (int i = 1; i <= l_[0]; ++i)
      for (int j = 1; j <= l_[1]; ++j)
        for (int k = 1; k <= l_[2]; ++k) s += u[idx(i, j, k)];
    double g = 0;
    MPI_Allreduce(&s, &g, 1, MPI_DOUBLE, MPI_SUM, comm_);
    return g;
  }

  /// True on every process iff the interiors of a and b are bit-identical everywhere.
  bool identical(const double* a, const double* b) const {
    int same = 1;
    for (int i = 1; i <= l_[0] && same; ++i)
      for (int j = 1; j <= l_[1] && same; ++j)
        if (std::memcmp(a + idx(i, j, 1), b + idx(i, j, 1), sizeof(double) * l_[2]) != 0) same = 0;
    int all = 0;
    MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_MIN, comm_);
    return all == 1;
  }

 private:
  // ---- geometry ------------------------------------------------------------
  std::array<int, 3> coords_of(int r) const {
    return {r / (dims_[1] * dims_[2]), (r / dims_[2]) % dims_[1], r % dims_[2]};
  }
  int rank_of(const std::array<int, 3>& c) const { return (c[0] * dims_[1] + c[1]) * dims_[2] + c[2]; }
  std::array<int, 3> local_dims(const std::array<int, 3>& c) const {
    return {block_len(cfg_.nx, dims_[0], c[0]), block_len(cfg_.ny, dims_[1], c[1]), block_len(cfg_.nz, dims_[2], c[2])};
  }
  // Element strides of a block with interior l (k fastest).
  static std::array<std::ptrdiff_t, 3> strides(const std::array<int, 3>& l) {
    return {std::ptrdiff_t(l[1] + 2) * (l[2] + 2), l[2] + 2, 1};
  }
  std::size_t idx(int i, int j, int k) const {
    auto s = strides(l_);
    return std::size_t(i * s[0] + j * s[1] + k);
  }

  // A face normal to dimension d at layer `layer` of a block with interior l:
  // element offset of its first interior point, the two extents and strides
  // (in the order of the remaining dimensions).
  struct face {
    std::ptrdiff_t offset;
    std::array<std::size_t, 2> ext;
    std::array<std::ptrdiff_t, 2> str;
  };
  static face face_of(const std::array<int, 3>& l, int d, int layer) {
    auto s = strides(l);
    face f{};
    std::array<int, 3> at{1, 1, 1};
    at[d] = layer;
    f.offset = at[0] * s[0] + at[1] * s[1] + at[2] * s[2];
    for (int e = 0, o = 0; e < 3; ++e)
      if (e != d) {
        f.ext[o] = std::size_t(l[e]);
        f.str[o] = s[e];
        ++o;
      }
    return f;
  }
  static std::array<std::ptrdiff_t, 2> bytes(std::array<std::ptrdiff_t, 2> s) {
    return {s[0] * std::ptrdiff_t(sizeof(double)), s[1] * std::ptrdiff_t(sizeof(double))};
  }

  void init_field(double* u) const {
    // Fixed outer-face temperatures; everything else starts at zero.
    static const double face_t[3][2] = {{1.0, 0.0}, {0.5, 0.0}, {0.25, 0.75}};
    std::fill(u, u + cells_, 0.0);
    for (int d = 0; d < 3; ++d)
      for (int s = 0; s < 2; ++s) {
        if (nbr_[d][s] >= 0) continue;
        face f = face_of(l_, d, s ? l_[d] + 1 : 0);
        for (std::size_t a = 0; a < f.ext[0]; ++a)
          for (std::size_t b = 0; b < f.ext[1]; ++b)
            u[f.offset + std::ptrdiff_t(a) * f.str[0] + std::ptrdiff_t(b) * f.str[1]] = face_t[d][s];
      }
  }

  double kernel(const double* __restrict u, double* __restrict out, bool track) const {
    const auto s = strides(l_);
    const std::ptrdiff_t sx = s[0], sy = s[1];
    const double a = cfg_.alpha;
    double change = 0;
    for (int i = 1; i <= l_[0]; ++i)
      for (int j = 1; j <= l_[1]; ++j) {
        const std::ptrdiff_t row = i * sx + j * sy;
        for (int k = 1; k <= l_[2]; ++k) {
          const std::ptrdiff_t c = row + k;
          const double uc = u[c];
          out[c] = uc + a * (((u[c - sx] + u[c + sx]) + (u[c - sy] + u[c + sy]) + (u[c - 1] + u[c + 1])) - 6.0 * uc);
        }
        if (track)
          for (int k = 1; k <= l_[2]; ++k) change = std::max(change, std::fabs(out[row + k] - u[row + k]));
      }
    return change;
  }

  // ---- variant storage -------------------------------------------------------
  void buffers(int v, double* buf[2]) {
    if (v == 0) {
      buf[0] = plain_[0].data();
      buf[1] = plain_[1].data();
    } else if (v == 1) {
      buf[0] = win_base_;
      buf[1] = win_base_ + cells_;
    } else {
      buf[0] = seg_[0].local();
      buf[1] = seg_[1].local();
    }
  }

  MPI_Datatype make_face_type(const face& f) const {
    MPI_Datatype row, plane;
    MPI_Type_create_hvector(int(f.ext[1]), 1, MPI_Aint(f.str[1] * sizeof(double)), MPI_DOUBLE, &row);
    MPI_Type_create_hvector(int(f.ext[0]), 1, MPI_Aint(f.str[0] * sizeof(double)), row, &plane);
    MPI_Type_free(&row);
    MPI_Type_commit(&plane);
    return plane;
  }

  void setup_types() {
    plain_[0].assign(cells_, 0.0);
    plain_[1].assign(cells_, 0.0);
    for (int d = 0; d < 3; ++d) {
      // Faces normal to d all share one layout within a block.
      face_type_[d] = make_face_type(face_of(l_, d, 0));
      for (int s = 0; s < 2; ++s) {
        nbr_type_[d][s] = MPI_DATATYPE_NULL;
        if (nbr_[d][s] < 0) continue;
        auto nl = local_dims(coords_of(nbr_[d][s]));
        nbr_l_[d][s] = nl;
        nbr_type_[d][s] = make_face_type(face_of(nl, d, 0));
      }
    }
  }

  void setup_window() {
    MPI_Win_allocate(MPI_Aint(2 * cells_ * sizeof(double)), sizeof(double), MPI_INFO_NULL, comm_, &win_base_, &win_);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win_);
  }

  void setup_accrete() {
    seg_[0] = accrete::new_array<double>(cells_);
    seg_[1] = accrete::new_array<double>(cells_);
    std::array<accrete::global_ptr<double>, 2> mine{seg_[0], seg_[1]};
    all_seg_.resize(size_);
    MPI_Allgather(mine.data(), sizeof mine, MPI_BYTE, all_seg_.data(), sizeof mine, MPI_BYTE, comm_);
  }

  // ---- halo exchange -----------------------------------------------------------
  // `b` is the index of the buffer just written (u points to it).
  void exchange(int v, int b, double* u) {
    switch (v) {
      case 0:
        return exchange_sendrecv(u);
      case 1:
        return exchange_rget(b, u);
      case 2:
        return exchange_acc_get(b, u);
      default:
        return exchange_acc_put(b, u);
    }
  }

  int peer(int d, int s) const { return nbr_[d][s] < 0 ? MPI_PROC_NULL : nbr_[d][s]; }

  void exchange_sendrecv(double* u) {
    for (int d = 0; d < 3; ++d) {
      const auto lo_in = face_of(l_, d, 1).offset, hi_in = face_of(l_, d, l_[d]).offset;
      const auto lo_halo = face_of(l_, d, 0).offset, hi_halo = face_of(l_, d, l_[d] + 1).offset;
      MPI_Sendrecv(u + hi_in, 1, face_type_[d], peer(d, 1), 10 + d, u + lo_halo, 1, face_type_[d], peer(d, 0), 10 + d,
                   comm_, MPI_STATUS_IGNORE);
      MPI_Sendrecv(u + lo_in, 1, face_type_[d], peer(d, 0), 20 + d, u + hi_halo, 1, face_type_[d], peer(d, 1), 20 + d,
                   comm_, MPI_STATUS_IGNORE);
    }
  }

  // Displacement (in doubles, window unit) of the neighbour's face that
  // borders us: its high interior layer if it is below us, else its first.
  std::ptrdiff_t nbr_face_offset(int d, int s) const {
    const auto& nl = nbr_l_[d][s];
    return face_of(nl, d, s == 0 ? nl[d] : 1).offset;
  }

  void exchange_rget(int b, double* u) {
    MPI_Win_sync(win_);  // our compute stores, before the neighbours read them
    for (int d = 0; d < 3; ++d) {
      MPI_Barrier(comm_);
      MPI_Request req[2];
      int n = 0;
      for (int s = 0; s < 2; ++s) {
        if (nbr_[d][s] < 0) continue;
        const auto halo = face_of(l_, d, s ? l_[d] + 1 : 0).offset;
        MPI_Rget(u + halo, 1, face_type_[d], nbr_[d][s],
                 MPI_Aint(std::ptrdiff_t(b) * std::ptrdiff_t(cells_of(d, s)) + nbr_face_offset(d, s)), 1,
                 nbr_type_[d][s], win_, &req[n++]);
      }
      MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
#ifdef MPICH_VERSION
      // MPICH 4.0.2 on a shared-memory node completes these derived-datatype
      // MPI_Rget requests before all of the data is in place (wrong halos,
      // reproducible at P = 4); a local flush of each target restores it.
      for (int s = 0; s < 2; ++s)
        if (nbr_[d][s] >= 0) MPI_Win_flush_local(nbr_[d][s], win_);
#endif
    }
  }
  std::size_t cells_of(int d, int s) const {
    const auto& nl = nbr_l_[d][s];
    return std::size_t(nl[0] + 2) * (nl[1] + 2) * (nl[2] + 2);
  }

  void exchange_acc_get(int b, double* u) {
    for (int d = 0; d < 3; ++d) {
      accrete::barrier();
      accrete::promise<> p;
      for (int s = 0; s < 2; ++s) {
        if (nbr_[d][s] < 0) continue;
        const face mine = face_of(l_, d, s ? l_[d] + 1 : 0);
        const face theirs = face_of(nbr_l_[d][s], d, s == 0 ? nbr_l_[d][s][d] : 1);
        accrete::rget_strided<2>(all_seg_[nbr_[d][s]][b] + theirs.offset, bytes(theirs.str), u + mine.offset,
                                 bytes(mine.str), mine.ext, p);
      }
      p.finalize().wait();
    }
  }

  static inline int signals_[2] = {0, 0};
  static void halo_arrived(int parity) { ++signals_[parity]; }

  void exchange_acc_put(int b, double* u) {
    accrete::promise<> p;
    int expected = 0;
    for (int d = 0; d < 3; ++d)
      for (int s = 0; s < 2; ++s) {
        if (nbr_[d][s] < 0) continue;
        ++expected;
        // Our boundary layer goes into the neighbour's halo on the facing side.
        const face mine = face_of(l_, d, s ? l_[d] : 1);
        const auto& nl = nbr_l_[d][s];
        const face theirs = face_of(nl, d, s ? 0 : nl[d] + 1);
        accrete::rput_strided<2>(u + mine.offset, bytes(mine.str), all_seg_[nbr_[d][s]][b] + theirs.offset,
                                 bytes(theirs.str), mine.ext, p, accrete::remote_cx::as_rpc(&solver::halo_arrived, b));
      }
    // Our puts must be complete before this buffer is written again (two
    // steps on); the neighbours' signals say our halos are filled. A signal
    // runs after its halo is visible here (remote_cx::as_rpc's semantics:
    // the target fences before running it), so no fence of our own.
    p.finalize().wait();
    unsigned spins = 0;
    while (signals_[b] < expected) {
      accrete::progress();
      if (signals_[b] < expected) accrete::detail::idle_backoff(spins);
    }
    signals_[b] -= expected;
  }

  config cfg_;
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  std::array<int, 3> dims_{}, coords_{}, l_{};
  int nbr_[3][2];
  std::array<int, 3> nbr_l_[3][2]{};
  std::size_t cells_ = 0;
  std::vector<double> plain_[2];
  MPI_Datatype face_type_[3];
  MPI_Datatype nbr_type_[3][2];
  MPI_Win win_ = MPI_WIN_NULL;
  double* win_base_ = nullptr;
  accrete::global_ptr<double> seg_[2];
  std::vector<std::array<accrete::global_ptr<double>, 2>> all_seg_;
};

}  // namespace heat3d
