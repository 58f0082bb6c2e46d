// The multifrontal extend-add motif (issue 3, motif 2), shared by the
// example, the benchmark and the test.
//
// A geometric nested dissection of an n x n x n 7-point grid gives the
// elimination tree: every node owns a box of the grid; an interior node's
// separator is the middle plane of its box across its longest axis (ties go
// to axis depth % 3, so a cube alternates x, y, z), the two halves are its
// children; a small box is a leaf whose "separator" is the whole box. A
// front's global index set is its separator followed by the boundary of its
// box (the grid points just outside the box's six faces: with a 7-point
// stencil those are exactly the ancestors' separator variables the subtree
// couples to), each part sorted by grid index. A child's contribution block
// (CB) is the square block of its front over its boundary indices; every one
// of those indices is in the parent's front, so the extend-add scatters the
// CB into the parent front by global index.
//
// Subtrees go to teams of consecutive world ranks by proportional mapping
// (a team splits between the two children in proportion to their subtree
// work), and each front is 2D block-cyclic (nb x nb blocks) over its team's
// default process_grid (row-major, as square as the team size allows).
//
// Values: fronts start at front_init(), CBs hold cb_value(); both are small
// multiples of 0.25, so every sum is exact whatever the order of additions,
// and all implementations must agree bit for bit.
//
// The extend-add into a parent p is done one of three ways (the `variant`):
//   rpc        the sender packs, per process of p's team, the CB entries
//              that land there and ships them with accrete::rpc_ff carrying
//              a view; the RPC adds them into the target's local front.
//              The target knows how many entries to expect and waits on a
//              promise counted down by the RPCs.
//   put        accrete one-sided: each target keeps, in its shared segment, a
//              landing zone per sender (allocated and exchanged once, in
//              prepare()). A sender on the same node packs straight into
//              the target's landing zone (the one copy the data needs) and
//              signals with rpc_ff; a sender elsewhere packs locally and
//              rput()s with a remote-completion RPC. The RPC unpacks from
//              the landing zone and counts the same promise down.
//   upcxx_rpc  rpc written against <upcxx/upcxx.hpp>: upcxx::rpc_ff with
//              upcxx::make_view, as a UPC++ program sends it (the UPC++
//              paper's extend-add); everything else as rpc.
//   alltoallv  one MPI_Alltoallv over p's team communicator.
//   p2p        MPI_Irecv from every sender, MPI_Isend to every target,
//              unpack in arrival order (MPI_Waitany).
// All of them use the same precomputed index plan, the same packing order and
// the same direct (unpacked) add for the part that stays on the process, so
// the comparison is about moving the data, not about index arithmetic.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "accrete/accrete.hpp"
#include "upcxx/upcxx.hpp"
#include "accrete/matrix/block_cyclic.hpp"
#include "accrete/matrix/process_grid.hpp"

namespace extend_add {

struct box {
  std::array<int, 3> lo{}, hi{};  // half-open
  long volume() const { return long(hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]); }
};

struct node {
  box b;
  int parent = -1;
  std::vector<int> children;
  int depth = 0;
  std::vector<int> idx;  // separator (sorted) then boundary (sorted), grid indices
  int nsep = 0;
  double work = 0;     // subtree work, for proportional mapping
  int t0 = 0, tn = 1;  // team: world ranks [t0, t0 + tn)
  int pr = 1, pc = 1;  // the team's process grid
  int size() const { return int(idx.size()); }
  int cb_size() const { return size() - nsep; }
  bool member(int world_rank) const { return world_rank >= t0 && world_rank < t0 + tn; }
};

/// process_grid's default shape: rows = largest divisor of p not above sqrt(p).
inline int default_grid_rows(int p) {
  int best = 1;
  for (int r = 1; r * r <= p; ++r)
    if (p % r == 0) best = r;
  return best;
}

inline double cb_value(int c, long gi, long gj) { return double((gi * 5 + gj * 3 + long(c) * 7) % 17 - 8) * 0.25; }
inline double front_init(int p, long gi, long gj) { return double((gi + 2 * gj + p) % 9) * 0.25; }

/// The elimination tree, nodes in postorder (children before parents; the
/// root is last). Deterministic: every rank builds the same tree.
class tree {
 public:
  tree(int n, int leaf_volume) : n_(n), leaf_(std::max(1, leaf_volume)) {
    if (n < 1) throw std::invalid_argument("extend_add::tree: n must be >= 1");
    box all;
    all.hi = {n, n, n};
    root_ = dissect(all, 0);
  }
  int n() const { return n_; }
  int root() const { return root_; }
  const std::vector<node>& nodes() const { return nodes_; }
  std::vector<node>& nodes() { return nodes_; }
  long gindex(int x, int y, int z) const { return x + long(n_) * (y + long(n_) * z); }

  /// Proportional mapping of the subtree at `v` onto world ranks [t0, t0+tn).
  void map(int v, int t0, int tn) {
    node& x = nodes_[v];
    x.t0 = t0;
    x.tn = tn;
    x.pr = default_grid_rows(tn);
    x.pc = tn / x.pr;
    if (x.children.empty()) return;
    if (tn == 1) {
      for (int c : x.children) map(c, t0, 1);
      return;
    }
    const double w0 = nodes_[x.children[0]].work, w1 = nodes_[x.children[1]].work;
    int t = int(std::llround(tn * w0 / (w0 + w1)));
    t = std::clamp(t, 1, tn - 1);
    map(x.children[0], t0, t);
    map(x.children[1], t0 + t, tn - t);
  }

 private:
  void add_box(const box& b, std::vector<int>& out) const {
    for (int z = b.lo[2]; z < b.hi[2]; ++z)
      for (int y = b.lo[1]; y < b.hi[1]; ++y)
        for (int x = b.lo[0]; x < b.hi[0]; ++x) out.push_back(int(gindex(x, y, z)));
  }

  int dissect(const box& b, int depth) {
    std::array<int, 3> ext{b.hi[0] - b.lo[0], b.hi[1] - b.lo[1], b.hi[2] - b.lo[2]};
    int axis = depth % 3;
    for (int k = 1; k < 3; ++k) {
      int a = (depth + k) % 3;
      if (ext[a] > ext[axis]) axis = a;
    }
    node x;
    x.b = b;
    x.depth = depth;
    std::vector<int> kids;
    // Below extent 3 a plane would leave an empty half.
    if (b.volume() > leaf_ && ext[axis] >= 3) {
      const int s = b.lo[axis] + ext[axis] / 2;
      box left = b, right = b, sep = b;
      left.hi[axis] = s;
      right.lo[axis] = s + 1;
      sep.lo[axis] = s;
      sep.hi[axis] = s + 1;
      kids.push_back(dissect(left, depth + 1));
      kids.push_back(dissect(right, depth + 1));
      add_box(sep, x.idx);
    } else {
      add_box(b, x.idx);
    }
    std::sort(x.idx.begin(), x.idx.end());
    x.nsep = int(x.idx.size());
    std::vector<int> bnd;
    for (int a = 0; a < 3; ++a) {
      for (int side = 0; side < 2; ++side) {
        const int coord = side == 0 ? b.lo[a] - 1 : b.hi[a];
        if (coord < 0 || coord >= n_) continue;
        box f = b;
        f.lo[a] = coord;
        f.hi[a] = coord + 1;
        add_box(f, bnd);
      }
    }
    std::sort(bnd.begin(), bnd.end());
    x.idx.insert(x.idx.end(), bnd.begin(), bnd.end());
    // Dense partial factorisation of the front: about nsep * size^2 flops.
    x.work = double(x.nsep) * double(x.size()) * double(x.size());
    for (int c : kids) x.work += nodes_[c].work;
    x.children = kids;
    const int id = int(nodes_.size());
    for (int c : kids) nodes_[c].parent = id;
    nodes_.push_back(std::move(x));
    return id;
  }

  int n_, leaf_;
  int root_ = -1;
  std::vector<node> nodes_;
};

/// Where child c's CB entries go: rows (and columns) bucketed by (owner in
/// the child's grid, owner in the parent's grid), each with the local index
/// at the source and at the destination, in increasing CB index. Entry
/// (i, j) of a (sender, target) pair is rows[..][i] x cols[..][j], so both
/// ends enumerate a pair's entries in the same order without sending indices.
struct plan {
  struct bucket {
    std::vector<int> src, dst;
  };
  int cpr = 1, cpc = 1, ppr = 1, ppc = 1;  // child / parent grid shapes
  std::vector<bucket> rows, cols;          // [child grid row * ppr + parent grid row], same for columns
  const bucket& row_bucket(int sr, int dr) const { return rows[std::size_t(sr) * ppr + dr]; }
  const bucket& col_bucket(int sc, int dc) const { return cols[std::size_t(sc) * ppc + dc]; }
};

enum class variant { rpc, alltoallv, p2p, put, upcxx_rpc };

/// Seconds this process spent per step of the distributed pass, summed
/// over calls (for explaining the totals; each step is timed with a clock
/// read before and after).
struct profile {
  double pack = 0;    // packing CB entries into send buffers
  double send = 0;    // rpc_ff calls (serialisation + MPI_Isend) / posting MPI requests
  double direct = 0;  // the part that stays local
  double wait = 0;    // waiting for data, including unpacking run from inside the wait (rpc)
  double unpack = 0;  // unpacking and adding received entries
  long messages = 0;  // messages sent
};
inline double clock_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
inline const char* name(variant v) {
  return v == variant::rpc         ? "accrete_rpc"
         : v == variant::upcxx_rpc ? "upcxx_rpc"
         : v == variant::put       ? "accrete_put"
         : v == variant::alltoallv ? "mpi_alltoallv"
                                   : "mpi_p2p";
}

/// One process's share of the problem: its teams, grids, fronts, CBs and
/// plans. Construction is collective over accrete::world().
class problem {
 public:
  problem(int n, int leaf_volume, int nb) : t_(n, leaf_volume), nb_(nb) {
    if (nb < 1) throw std::invalid_argument("extend_add::problem: nb must be >= 1");
    me_ = accrete::rank_me();
    P_ = accrete::rank_n();
    auto& nodes = t_.nodes();
    t_.map(t_.root(), 0, P_);
    const std::size_t N = nodes.size();
    teams_.assign(N, nullptr);
    grids_.resize(N);
    front_.resize(N);
    cb_.resize(N);
    plans_.resize(N);
    promises_.resize(N);
    make_teams(t_.root(), accrete::world());

    for (int v = 0; v < int(N); ++v) {
      const node& x = nodes[v];
      if (!x.member(me_)) continue;
      if (!x.children.empty()) {
        if (x.tn == 1)
          local_parents_.push_back(v);
        else
          dist_parents_.push_back(v);
        front_[v].resize(std::size_t(std::max<std::int64_t>(1, local_rows(v, false))) * local_cols(v, false));
      }
      if (x.parent >= 0) {
        cb_[v].resize(std::size_t(local_rows(v, true)) * local_cols(v, true));
        fill_cb(v);
      }
    }
    // Plans for every child whose parent's front has a share here.
    std::vector<int> pos(std::size_t(n) * n * n, -1);
    for (int p = 0; p < int(N); ++p) {
      const node& x = nodes[p];
      if (x.children.empty() || !x.member(me_)) continue;
      for (int k = 0; k < x.size(); ++k) pos[x.idx[k]] = k;
      for (int c : x.children) build_plan(c, pos);
      for (int k = 0; k < x.size(); ++k) pos[x.idx[k]] = -1;
    }
  }
  problem(const problem&) = delete;
  problem& operator=(const problem&) = delete;
  ~problem() {
    free_landing_zones();
    // Team destruction is collective: undo the splits innermost first.
    while (!owned_teams_.empty()) owned_teams_.pop_back();
  }

  const tree& elimination_tree() const { return t_; }
  int nb() const { return nb_; }
  const std::vector<int>& dist_parents() const { return dist_parents_; }
  const std::vector<int>& local_parents() const { return local_parents_; }
  const std::vector<double>& front(int p) const { return front_[p]; }

  profile& prof() { return prof_; }

  /// Entries per message of the rpc variant (0: one message per target).
  void set_rpc_chunk(std::size_t elems) { chunk_ = elems; }

  /// Resets the fronts of the parents listed to their initial values.
  void reset(const std::vector<int>& parents) {
    for (int p : parents) {
      const node& x = t_.nodes()[p];
      auto bc = layout(p, false);
      auto [r, c] = coords(p);
      const auto lr = bc.local_rows(r), lc = bc.local_cols(c);
      double* F = front_[p].data();
      for (std::int64_t j = 0; j < lc; ++j) {
        const long gj = x.idx[bc.global_col(c, j)];
        for (std::int64_t i = 0; i < lr; ++i) F[i + j * lr] = front_init(p, x.idx[bc.global_row(r, i)], gj);
      }
    }
  }

  /// Extend-add into every parent whose team is this process alone
  /// (identical for all variants: no communication).
  void run_local() {
    for (int p : local_parents_)
      for (int c : t_.nodes()[p].children) add_direct(c);
  }

  /// Must precede run(variant::rpc), and be followed by a barrier before any
  /// process calls run(): arms the per-front arrival counts.
  void prepare(variant v) {
    if (v != variant::rpc && v != variant::put && v != variant::upcxx_rpc) return;
    if (v == variant::put && !landing_ready_) exchange_landing_zones();
    // Set here, not in run(): a peer may start sending while this process
    // is still finishing the barrier that precedes run().
    active_ = this;
    for (int p : dist_parents_) promises_[p] = std::make_unique<accrete::promise<>>(expected_remote(p));
  }

  /// Extend-add into every multi-process parent this process shares, bottom
  /// up. Collective over world (each front over its team).
  void run(variant v) {
    for (int p : dist_parents_) {
      switch (v) {
        case variant::rpc:
          eadd_rpc(p, [](int w, int p, int c, int sr, std::uint32_t k0, const double* b, std::size_t len) {
            accrete::rpc_ff(w, &problem::rpc_unpack, p, c, sr, k0, accrete::make_view(b, b + len));
          });
          break;
        case variant::upcxx_rpc:
          eadd_rpc(p, [](int w, int p, int c, int sr, std::uint32_t k0, const double* b, std::size_t len) {
            upcxx::rpc_ff(w, &problem::rpc_unpack, p, c, sr, k0, upcxx::make_view(b, b + len));
          });
          break;
        case variant::alltoallv:
          eadd_alltoallv(p);
          break;
        case variant::p2p:
          eadd_p2p(p);
          break;
        case variant::put:
          eadd_put(p);
          break;
      }
    }
  }

  /// Entries this process sends to other processes over the distributed pass.
  std::int64_t remote_entries_sent() const {
    std::int64_t s = 0;
    for (int p : dist_parents_) {
      const node& x = t_.nodes()[p];
      const int c = my_child(p);
      const int sr = me_ - t_.nodes()[c].t0;
      for (int d = 0; d < x.tn; ++d)
        if (x.t0 + d != me_) s += pair_count(c, sr, d);
    }
    return s;
  }

  /// Local grid coordinates of this process in node v's team.
  std::pair<int, int> coords(int v) const {
    const node& x = t_.nodes()[v];
    const int r = me_ - x.t0;
    return {r / x.pc, r % x.pc};
  }
  /// Block-cyclic layout of node v's front (cb = false) or CB (cb = true).
  accrete::block_cyclic layout(int v, bool cb) const {
    const node& x = t_.nodes()[v];
    const int m = cb ? x.cb_size() : x.size();
    return accrete::block_cyclic(m, m, nb_, nb_, x.pr, x.pc);
  }

 private:
  std::int64_t local_rows(int v, bool cb) const { return layout(v, cb).local_rows(coords(v).first); }
  std::int64_t local_cols(int v, bool cb) const { return layout(v, cb).local_cols(coords(v).second); }

  void make_teams(int v, const accrete::team& tm) {
    const node& x = t_.nodes()[v];
    teams_[v] = &tm;
    // The team's grid must be the shape every other process assumes for it.
    grids_[v] = std::make_unique<accrete::process_grid>(tm.mpi_comm());
    if (grids_[v]->rows() != x.pr || grids_[v]->cols() != x.pc || tm.rank_me() != me_ - x.t0 ||
        grids_[v]->coords_of(tm.rank_me()) != accrete::grid_coords{coords(v).first, coords(v).second})
      throw std::logic_error("extend_add: team/grid layout disagrees with the proportional mapping");
    if (x.tn == 1 || x.children.empty()) return;
    const node& c0 = t_.nodes()[x.children[0]];
    const int color = c0.member(me_) ? 0 : 1;
    owned_teams_.push_back(std::make_unique<accrete::team>(tm.split(color, me_)));
    make_teams(x.children[color], *owned_teams_.back());
  }

  void fill_cb(int c) {
    const node& x = t_.nodes()[c];
    auto bc = layout(c, true);
    auto [r, col] = coords(c);
    const auto lr = bc.local_rows(r), lc = bc.local_cols(col);
    double* B = cb_[c].data();
    for (std::int64_t j = 0; j < lc; ++j) {
      const long gj = x.idx[x.nsep + bc.global_col(col, j)];
      for (std::int64_t i = 0; i < lr; ++i) B[i + j * lr] = cb_value(c, x.idx[x.nsep + bc.global_row(r, i)], gj);
    }
  }

  void build_plan(int c, const std::vector<int>& pos) {
    const node& x = t_.nodes()[c];
    const node& par = t_.nodes()[x.parent];
    auto pl = std::make_unique<plan>();
    pl->cpr = x.pr, pl->cpc = x.pc, pl->ppr = par.pr, pl->ppc = par.pc;
    pl->rows.resize(std::size_t(x.pr) * par.pr);
    pl->cols.resize(std::size_t(x.pc) * par.pc);
    auto cbc = layout(c, true), pbc = layout(x.parent, false);
    for (int i = 0; i < x.cb_size(); ++i) {
      const int u = pos[x.idx[x.nsep + i]];
      if (u < 0) throw std::logic_error("extend_add: a CB index is missing from the parent front");
      auto& rb = pl->rows[std::size_t(cbc.owner_row(i)) * par.pr + pbc.owner_row(u)];
      rb.src.push_back(int(cbc.local_row(i)));
      rb.dst.push_back(int(pbc.local_row(u)));
      auto& cl = pl->cols[std::size_t(cbc.owner_col(i)) * par.pc + pbc.owner_col(u)];
      cl.src.push_back(int(cbc.local_col(i)));
      cl.dst.push_back(int(pbc.local_col(u)));
    }
    plans_[c] = std::move(pl);
  }

  // sr: sender's rank in the child's team; d: target's rank in the parent's team.
  const plan::bucket& rows_of(int c, int sr, int d) const {
    const plan& pl = *plans_[c];
    return pl.row_bucket(sr / pl.cpc, d / pl.ppc);
  }
  const plan::bucket& cols_of(int c, int sr, int d) const {
    const plan& pl = *plans_[c];
    return pl.col_bucket(sr % pl.cpc, d % pl.ppc);
  }
  std::int64_t pair_count(int c, int sr, int d) const {
    return std::int64_t(rows_of(c, sr, d).src.size()) * std::int64_t(cols_of(c, sr, d).src.size());
  }

  int my_child(int p) const {
    for (int c : t_.nodes()[p].children)
      if (t_.nodes()[c].member(me_)) return c;
    throw std::logic_error("extend_add: process in a parent team but in none of its children's");
  }
  /// The child of p whose team holds world rank w.
  int child_of_rank(int p, int w) const {
    for (int c : t_.nodes()[p].children)
      if (t_.nodes()[c].member(w)) return c;
    throw std::logic_error("extend_add: parent team member outside every child team");
  }

  /// Entries of child c's CB held here going to target d, columns [k0, k1),
  /// packed column by column.
  std::size_t pack(int c, int d, std::size_t k0, std::size_t k1, double* out) const {
    const int sr = me_ - t_.nodes()[c].t0;
    const auto& R = rows_of(c, sr, d).src;
    const auto& C = cols_of(c, sr, d).src;
    const double* B = cb_[c].data();
    const std::int64_t ld = local_rows(c, true);
    double* o = out;
    for (std::size_t k = k0; k < k1; ++k) {
      const double* col = B + C[k] * ld;
      for (int r : R) *o++ = col[r];
    }
    return std::size_t(o - out);
  }

  /// Adds what sender sr (child team rank) packed for this process, columns [k0, k1).
  void unpack(int c, int sr, std::size_t k0, std::size_t k1, const double* in) {
    const int p = t_.nodes()[c].parent;
    const int d = me_ - t_.nodes()[p].t0;
    const auto& R = rows_of(c, sr, d).dst;
    const auto& C = cols_of(c, sr, d).dst;
    double* F = front_[p].data();
    const std::int64_t ld = std::max<std::int64_t>(1, local_rows(p, false));
    for (std::size_t k = k0; k < k1; ++k) {
      double* col = F + C[k] * ld;
      for (int r : R) col[r] += *in++;
    }
  }

  /// The part of child c's CB that stays on this process, added without packing.
  void add_direct(int c) {
    const node& x = t_.nodes()[c];
    const int p = x.parent;
    const int sr = me_ - x.t0, d = me_ - t_.nodes()[p].t0;
    const auto& rb = rows_of(c, sr, d);
    const auto& cl = cols_of(c, sr, d);
    const double* B = cb_[c].data();
    double* F = front_[p].data();
    const std::int64_t ldb = local_rows(c, true), ldf = std::max<std::int64_t>(1, local_rows(p, false));
    for (std::size_t k = 0; k < cl.src.size(); ++k) {
      const double* s = B + cl.src[k] * ldb;
      double* f = F + cl.dst[k] * ldf;
      for (std::size_t i = 0; i < rb.src.size(); ++i) f[rb.dst[i]] += s[rb.src[i]];
    }
  }

  /// Entries other processes will send here for parent p.
  std::int64_t expected_remote(int p) const {
    const node& x = t_.nodes()[p];
    const int d = me_ - x.t0;
    std::int64_t e = 0;
    for (int s = 0; s < x.tn; ++s) {
      const int w = x.t0 + s;
      if (w == me_) continue;
      const int c = child_of_rank(p, w);
      e += pair_count(c, w - t_.nodes()[c].t0, d);
    }
    return e;
  }

  // ---- variant 1: accrete RPC carrying views ------------------------------------
  static void rpc_unpack(int p, int c, int sr, std::uint32_t k0, accrete::view<double> v) {
    problem& self = *active_;
    const int d = self.me_ - self.t_.nodes()[p].t0;
    const std::size_t nr = self.rows_of(c, sr, d).dst.size();
    if (nr == 0 || v.size() % nr != 0) throw std::logic_error("extend_add: RPC payload does not match the plan");
    const double t = clock_s();
    self.unpack(c, sr, k0, k0 + v.size() / nr, v.data());
    self.prof_.unpack += clock_s() - t;
    self.promises_[p]->fulfill_anonymous(std::intptr_t(v.size()));
  }

  // send(target, p, c, sr, first column, entries, count) ships one message.
  template <class Send>
  void eadd_rpc(int p, Send send) {
    const node& x = t_.nodes()[p];
    const int c = my_child(p);
    const int sr = me_ - t_.nodes()[c].t0;
    std::vector<double>& buf = rpc_buf_;
    for (int d = 0; d < x.tn; ++d) {
      const int w = x.t0 + d;
      if (w == me_) continue;
      const std::size_t nr = rows_of(c, sr, d).src.size(), nc = cols_of(c, sr, d).src.size();
      if (nr * nc == 0) continue;
      // Column ranges of about chunk_ entries: the RPC copies its view when
      // it is sent, so one small pack buffer serves every message.
      const std::size_t step = chunk_ == 0 ? nc : std::max<std::size_t>(1, chunk_ / nr);
      for (std::size_t k0 = 0; k0 < nc; k0 += step) {
        const std::size_t k1 = std::min(nc, k0 + step);
        if (buf.size() < nr * (k1 - k0)) buf.resize(nr * (k1 - k0));
        double t = clock_s();
        const std::size_t len = pack(c, d, k0, k1, buf.data());
        prof_.pack += clock_s() - t;
        t = clock_s();
        send(w, p, c, sr, std::uint32_t(k0), buf.data(), len);
        prof_.send += clock_s() - t;
        ++prof_.messages;
      }
    }
    double t = clock_s();
    add_direct(c);  // overlaps the messages in flight
    prof_.direct += clock_s() - t;
    t = clock_s();
    promises_[p]->get_future().wait();
    prof_.wait += clock_s() - t;
  }

  // ---- variant 1b: accrete one-sided puts into landing zones ------------------------
  // Collective (every process calls prepare(put)): allocates this process's
  // landing zones, one per (parent, sender), then learns by RPC where its
  // own landing zones are on each target.
  void exchange_landing_zones() {
    lz_in_.assign(t_.nodes().size(), {});
    lz_out_.assign(t_.nodes().size(), {});
    for (int p : dist_parents_) {
      const node& x = t_.nodes()[p];
      const int me_p = me_ - x.t0;
      lz_in_[p].assign(x.tn, accrete::global_ptr<double>());
      for (int s = 0; s < x.tn; ++s) {
        const int w = x.t0 + s;
        if (w == me_) continue;
        const int ch = child_of_rank(p, w);
        const std::int64_t n = pair_count(ch, w - t_.nodes()[ch].t0, me_p);
        if (n > 0) lz_in_[p][s] = accrete::new_array<double>(std::size_t(n));
      }
    }
    active_ = this;
    accrete::barrier();
    for (int p : dist_parents_) {
      const node& x = t_.nodes()[p];
      lz_out_[p].assign(x.tn, accrete::global_ptr<double>());
      for (int d = 0; d < x.tn; ++d) {
        const int w = x.t0 + d;
        if (w == me_) continue;
        lz_out_[p][d] =
            accrete::rpc(
                w, [](int pp, int sender) { return active_->lz_in_[pp][sender - active_->t_.nodes()[pp].t0]; }, p, me_)
                .wait();
      }
    }
    accrete::barrier();
    landing_ready_ = true;
  }
  void free_landing_zones() {
    for (auto& per_parent : lz_in_)
      for (auto& g : per_parent)
        if (!g.is_null()) accrete::delete_array(g);
    lz_in_.clear();
    landing_ready_ = false;
  }

  static void put_unpack(int p, int c, int sr) {
    problem& self = *active_;
    const int d = self.me_ - self.t_.nodes()[p].t0;
    const double t = clock_s();
    const double* in = self.lz_in_[p][sr + self.t_.nodes()[c].t0 - self.t_.nodes()[p].t0].local();
    self.unpack(c, sr, 0, self.cols_of(c, sr, d).dst.size(), in);
    self.prof_.unpack += clock_s() - t;
    self.promises_[p]->fulfill_anonymous(std::intptr_t(self.pair_count(c, sr, d)));
  }

  void eadd_put(int p) {
    const node& x = t_.nodes()[p];
    const int c = my_child(p);
    const int sr = me_ - t_.nodes()[c].t0;
    std::vector<accrete::future<>> sent;
    if (put_bufs_.size() < std::size_t(x.tn)) put_bufs_.resize(x.tn);
    for (int d = 0; d < x.tn; ++d) {
      const int w = x.t0 + d;
      const std::int64_t n = w == me_ ? 0 : pair_count(c, sr, d);
      if (n == 0) continue;
      accrete::global_ptr<double> lz = lz_out_[p][d];
      const std::size_t nc = cols_of(c, sr, d).src.size();
      double t = clock_s();
      if (lz.is_local()) {
        pack(c, d, 0, nc, lz.local());  // straight into the target's memory
        prof_.pack += clock_s() - t;
        t = clock_s();
        accrete::rpc_ff(w, &problem::put_unpack, p, c, sr);
      } else {
        auto& buf = put_bufs_[d];
        if (buf.size() < std::size_t(n)) buf.resize(std::size_t(n));
        pack(c, d, 0, nc, buf.data());
        prof_.pack += clock_s() - t;
        t = clock_s();
        sent.push_back(
            accrete::rput(buf.data(), lz, std::size_t(n), accrete::remote_cx::as_rpc(&problem::put_unpack, p, c, sr)));
      }
      prof_.send += clock_s() - t;
      ++prof_.messages;
    }
    double t = clock_s();
    add_direct(c);
    prof_.direct += clock_s() - t;
    t = clock_s();
    promises_[p]->get_future().wait();
    for (auto& f : sent) f.wait();  // our buffers are free again
    prof_.wait += clock_s() - t;
  }

  // ---- variant 2: MPI_Alltoallv over the parent's team -----------------------------
  void eadd_alltoallv(int p) {
    const node& x = t_.nodes()[p];
    const int c = my_child(p);
    const int sr = me_ - t_.nodes()[c].t0;
    const int me_p = me_ - x.t0;
    std::vector<int> sc(x.tn, 0), sd(x.tn, 0), rc(x.tn, 0), rd(x.tn, 0);
    std::vector<int> rchild(x.tn, -1);
    std::int64_t st = 0, rt = 0;
    for (int d = 0; d < x.tn; ++d) {
      const int w = x.t0 + d;
      if (w == me_) continue;
      sc[d] = int(pair_count(c, sr, d));
      rchild[d] = child_of_rank(p, w);
      rc[d] = int(pair_count(rchild[d], w - t_.nodes()[rchild[d]].t0, me_p));
    }
    for (int d = 0; d < x.tn; ++d) {
      sd[d] = int(st), st += sc[d];
      rd[d] = int(rt), rt += rc[d];
    }
    double* const sbuf = mpi_sbuf_.get(std::size_t(st));
    double* const rbuf = mpi_rbuf_.get(std::size_t(rt));
    double t = clock_s();
    for (int d = 0; d < x.tn; ++d)
      if (sc[d]) pack(c, d, 0, cols_of(c, sr, d).src.size(), sbuf + sd[d]), ++prof_.messages;
    prof_.pack += clock_s() - t;
    t = clock_s();
    add_direct(c);
    prof_.direct += clock_s() - t;
    t = clock_s();
    MPI_Alltoallv(sbuf, sc.data(), sd.data(), MPI_DOUBLE, rbuf, rc.data(), rd.data(), MPI_DOUBLE,
                  teams_[p]->mpi_comm());
    prof_.wait += clock_s() - t;
    t = clock_s();
    for (int s = 0; s < x.tn; ++s) {
      if (!rc[s]) continue;
      const int ch = rchild[s], csr = x.t0 + s - t_.nodes()[ch].t0;
      unpack(ch, csr, 0, cols_of(ch, csr, me_p).dst.size(), rbuf + rd[s]);
    }
    prof_.unpack += clock_s() - t;
  }

  // ---- variant 3: MPI point-to-point -------------------------------------------------
  void eadd_p2p(int p) {
    const node& x = t_.nodes()[p];
    const int c = my_child(p);
    const int sr = me_ - t_.nodes()[c].t0;
    const int me_p = me_ - x.t0;
    MPI_Comm comm = teams_[p]->mpi_comm();
    std::vector<std::int64_t> roff(x.tn + 1, 0), soff(x.tn + 1, 0);
    for (int d = 0; d < x.tn; ++d) {
      const int w = x.t0 + d;
      std::int64_t s = 0, r = 0;
      if (w != me_) {
        const int ch = child_of_rank(p, w);
        s = pair_count(c, sr, d);
        r = pair_count(ch, w - t_.nodes()[ch].t0, me_p);
      }
      soff[d + 1] = soff[d] + s;
      roff[d + 1] = roff[d] + r;
    }
    double* const sbuf = mpi_sbuf_.get(std::size_t(soff[x.tn]));
    double* const rbuf = mpi_rbuf_.get(std::size_t(roff[x.tn]));
    std::vector<MPI_Request> rreq, sreq;
    std::vector<int> rsrc;
    for (int s = 0; s < x.tn; ++s) {
      const int n = int(roff[s + 1] - roff[s]);
      if (!n) continue;
      rreq.emplace_back();
      rsrc.push_back(s);
      MPI_Irecv(rbuf + roff[s], n, MPI_DOUBLE, s, 0, comm, &rreq.back());
    }
    for (int d = 0; d < x.tn; ++d) {
      const int n = int(soff[d + 1] - soff[d]);
      if (!n) continue;
      double t = clock_s();
      pack(c, d, 0, cols_of(c, sr, d).src.size(), sbuf + soff[d]);
      prof_.pack += clock_s() - t;
      t = clock_s();
      sreq.emplace_back();
      MPI_Isend(sbuf + soff[d], n, MPI_DOUBLE, d, 0, comm, &sreq.back());
      prof_.send += clock_s() - t;
      ++prof_.messages;
    }
    double t = clock_s();
    add_direct(c);
    prof_.direct += clock_s() - t;
    for (std::size_t done = 0; done < rreq.size(); ++done) {
      int k = MPI_UNDEFINED;
      t = clock_s();
      MPI_Waitany(int(rreq.size()), rreq.data(), &k, MPI_STATUS_IGNORE);
      prof_.wait += clock_s() - t;
      t = clock_s();
      const int s = rsrc[k];
      const int ch = child_of_rank(p, x.t0 + s), csr = x.t0 + s - t_.nodes()[ch].t0;
      unpack(ch, csr, 0, cols_of(ch, csr, me_p).dst.size(), rbuf + roff[s]);
      prof_.unpack += clock_s() - t;
    }
    t = clock_s();
    MPI_Waitall(int(sreq.size()), sreq.data(), MPI_STATUSES_IGNORE);
    prof_.wait += clock_s() - t;
  }

  static inline problem* active_ = nullptr;  // the RPC handler's way back to this object

  tree t_;
  int nb_;
  int me_ = 0, P_ = 1;
  std::size_t chunk_ = 0;
  profile prof_;
  std::vector<const accrete::team*> teams_;
  std::vector<std::unique_ptr<accrete::team>> owned_teams_;
  std::vector<std::unique_ptr<accrete::process_grid>> grids_;
  std::vector<std::vector<double>> front_, cb_;
  std::vector<std::unique_ptr<plan>> plans_;
  std::vector<std::unique_ptr<accrete::promise<>>> promises_;
  std::vector<int> dist_parents_, local_parents_;
  std::vector<double> rpc_buf_;
  bool landing_ready_ = false;
  std::vector<std::vector<accrete::global_ptr<double>>> lz_in_, lz_out_;  // [parent][team rank]
  std::vector<std::vector<double>> put_bufs_;                             // remote targets' pack buffers
  // The MPI variants' pack and receive buffers, kept between passes as the
  // accrete variants keep theirs: a buffer allocated per pass pays a page
  // fault per 4 KiB on first touch whenever malloc has returned the memory
  // to the system (4.3 ms for 10 MB on the 2-core VM), which is not MPI's
  // cost.
  struct scratch {
    std::unique_ptr<double[]> p;
    std::size_t cap = 0;
    double* get(std::size_t n) {
      if (n > cap) p.reset(new double[n]), cap = n;
      return p.get();
    }
  };
  scratch mpi_sbuf_, mpi_rbuf_;
};

/// Reference value of parent p's front at global (gi, gj): its initial value
/// plus every child CB entry at that position. Independent of the
/// distribution; used to check every local entry.
inline double reference_entry(const tree& t, int p, long gi, long gj) {
  const node& x = t.nodes()[p];
  double v = front_init(p, gi, gj);
  for (int c : x.children) {
    const node& y = t.nodes()[c];
    auto b = y.idx.begin() + y.nsep;
    if (std::binary_search(b, y.idx.end(), int(gi)) && std::binary_search(b, y.idx.end(), int(gj)))
      v += cb_value(c, gi, gj);
  }
  return v;
}

/// Number of local entries of the listed parents' fronts that differ from
/// reference_entry.
inline std::int64_t count_mismatches(const problem& pb, const std::vector<int>& parents) {
  const tree& t = pb.elimination_tree();
  std::int64_t bad = 0;
  for (int p : parents) {
    const node& x = t.nodes()[p];
    auto bc = pb.layout(p, false);
    auto [r, c] = pb.coords(p);
    const auto lr = bc.local_rows(r), lc = bc.local_cols(c);
    const auto& F = pb.front(p);
    for (std::int64_t j = 0; j < lc; ++j) {
      const long gj = x.idx[bc.global_col(c, j)];
      for (std::int64_t i = 0; i < lr; ++i)
        if (F[i + j * lr] != reference_entry(t, p, x.idx[bc.global_row(r, i)], gj)) ++bad;
    }
  }
  return bad;
}

}  // namespace extend_add
