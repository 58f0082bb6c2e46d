// Multifrontal extend-add: the nested-dissection tree and proportional
// mapping are well formed, and the accrete RPC, MPI_Alltoallv and MPI
// point-to-point extend-adds all produce exactly the fronts of a serial
// extend-add computed independently on every rank.
#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "accrete/accrete.hpp"
#include "extend_add.hpp"

namespace ea = extend_add;

namespace {

// Dense column-major fronts of every parent, assembled serially from whole
// CBs with a global-index lookup: shares only the value functions and the
// tree with the code under test, none of its distribution or plan logic.
std::map<int, std::vector<double>> serial_fronts(const ea::tree& t) {
  std::map<int, std::vector<double>> out;
  for (int p = 0; p < int(t.nodes().size()); ++p) {
    const ea::node& x = t.nodes()[p];
    if (x.children.empty()) continue;
    const int m = x.size();
    std::vector<double> F(std::size_t(m) * m);
    for (int j = 0; j < m; ++j)
      for (int i = 0; i < m; ++i) F[i + std::size_t(j) * m] = ea::front_init(p, x.idx[i], x.idx[j]);
    std::map<int, int> where;
    for (int k = 0; k < m; ++k) where[x.idx[k]] = k;
    for (int c : x.children) {
      const ea::node& y = t.nodes()[c];
      for (int j = y.nsep; j < y.size(); ++j)
        for (int i = y.nsep; i < y.size(); ++i)
          F[where.at(y.idx[i]) + std::size_t(where.at(y.idx[j])) * m] += ea::cb_value(c, y.idx[i], y.idx[j]);
    }
    out[p] = std::move(F);
  }
  return out;
}

// Local entries of the listed fronts that differ from the serial reference.
long mismatches(const ea::problem& pb, const std::vector<int>& parents, const std::map<int, std::vector<double>>& ref) {
  long bad = 0;
  for (int p : parents) {
    const int m = pb.elimination_tree().nodes()[p].size();
    auto bc = pb.layout(p, false);
    auto [r, c] = pb.coords(p);
    const auto lr = bc.local_rows(r), lc = bc.local_cols(c);
    const auto& F = pb.front(p);
    const auto& R = ref.at(p);
    for (std::int64_t j = 0; j < lc; ++j)
      for (std::int64_t i = 0; i < lr; ++i)
        if (F[i + j * lr] != R[bc.global_row(r, i) + std::size_t(bc.global_col(c, j)) * m]) ++bad;
  }
  return bad;
}

long sum_all(long v) {
  long r = 0;
  MPI_Allreduce(&v, &r, 1, MPI_LONG, MPI_SUM, accrete::world().mpi_comm());
  return r;
}

struct config {
  int n, leaf, nb;
  std::size_t chunk;
};

}  // namespace

TEST(ExtendAdd, TreeIsANestedDissection) {
  for (int n : {5, 8, 9}) {
    ea::tree t(n, 8);
    t.map(t.root(), 0, accrete::rank_n());
    const auto& nodes = t.nodes();
    // Every grid point is a pivot of exactly one front.
    std::vector<int> seen(std::size_t(n) * n * n, 0);
    for (const auto& x : nodes)
      for (int k = 0; k < x.nsep; ++k) ++seen[x.idx[k]];
    EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int s) { return s == 1; })) << "n = " << n;
    EXPECT_EQ(nodes[t.root()].cb_size(), 0);
    EXPECT_EQ(nodes[t.root()].nsep, n * n) << "the root separator is a full plane";
    for (int v = 0; v < int(nodes.size()); ++v) {
      const auto& x = nodes[v];
      ASSERT_TRUE(x.children.empty() || x.children.size() == 2);
      if (x.parent < 0) continue;
      const auto& par = nodes[x.parent];
      EXPECT_LT(v, x.parent) << "postorder";
      // The CB's indices are all in the parent's front, and they are the
      // ancestors' separator variables.
      std::set<int> pf(par.idx.begin(), par.idx.end());
      for (int k = x.nsep; k < x.size(); ++k) EXPECT_TRUE(pf.count(x.idx[k])) << "front " << v;
      // Proportional mapping: a child's team lies inside its parent's, and a
      // split team is shared out completely.
      EXPECT_GE(x.t0, par.t0);
      EXPECT_LE(x.t0 + x.tn, par.t0 + par.tn);
      if (par.tn > 1) {
        const auto& sib = nodes[par.children[0] == v ? par.children[1] : par.children[0]];
        EXPECT_EQ(x.tn + sib.tn, par.tn);
      }
    }
  }
  // An 8^3 cube: the root's children are the 4x8x8 halves, whose fronts are
  // their 4x1x8 separator plus the 8x8 root plane.
  ea::tree t(8, 8);
  const auto& root = t.nodes()[t.root()];
  const auto& kid = t.nodes()[root.children[0]];
  EXPECT_EQ(kid.nsep, 4 * 8);
  EXPECT_EQ(kid.cb_size(), 8 * 8);
}

TEST(ExtendAdd, AllVariantsMatchSerialReference) {
  const config cases[] = {
      {8, 8, 4, 0},   // one RPC per target
      {9, 12, 3, 5},  // odd sizes, partial blocks, RPCs of a few columns
      {6, 1, 2, 1},   // deep tree, one column per RPC
  };
  for (const config& k : cases) {
    SCOPED_TRACE("n = " + std::to_string(k.n) + ", leaf = " + std::to_string(k.leaf) +
                 ", nb = " + std::to_string(k.nb) + ", chunk = " + std::to_string(k.chunk));
    ea::problem pb(k.n, k.leaf, k.nb);
    pb.set_rpc_chunk(k.chunk);
    const auto ref = serial_fronts(pb.elimination_tree());
    if (accrete::rank_n() > 1 && k.n >= 8) {
      EXPECT_FALSE(pb.dist_parents().empty());
    }

    pb.reset(pb.local_parents());
    pb.run_local();
    EXPECT_EQ(sum_all(mismatches(pb, pb.local_parents(), ref)), 0) << "single-process fronts";

    for (auto v : {ea::variant::rpc, ea::variant::alltoallv, ea::variant::p2p, ea::variant::put, ea::variant::rpc,
                   ea::variant::upcxx_rpc}) {
      pb.reset(pb.dist_parents());
      pb.prepare(v);
      accrete::barrier();
      pb.run(v);
      EXPECT_EQ(sum_all(mismatches(pb, pb.dist_parents(), ref)), 0) << ea::name(v);
      accrete::barrier();
    }
  }
}
