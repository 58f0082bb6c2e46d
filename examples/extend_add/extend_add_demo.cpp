// extend_add_demo: builds the nested-dissection tree of an n^3 grid, shows
// how its top fronts are mapped to teams, and runs one extend-add pass with
// each implementation, checking every entry.
//
//   mpiexec -n P extend_add_demo [n=16]
#include <cstdio>
#include <cstdlib>

#include "accrete/accrete.hpp"
#include "extend_add.hpp"

namespace ea = extend_add;

int main(int argc, char** argv) {
  accrete::runtime rt;
  const int n = argc > 1 ? std::atoi(argv[1]) : 16;
  ea::problem pb(n, 64, 16);
  const auto& t = pb.elimination_tree();
  if (accrete::rank_me() == 0) {
    std::printf("%d^3 grid: %zu fronts, root front %d rows\n", n, t.nodes().size(), t.nodes()[t.root()].size());
    // Top of the tree, parents before children.
    auto show = [&](auto&& self, int v) -> void {
      const ea::node& x = t.nodes()[v];
      if (x.depth > 3) return;
      std::printf("%*sfront %d: %d separator + %d boundary rows, ranks [%d,%d) as a %dx%d grid\n", 2 * x.depth, "", v,
                  x.nsep, x.cb_size(), x.t0, x.t0 + x.tn, x.pr, x.pc);
      for (int c : x.children) self(self, c);
    };
    show(show, t.root());
  }
  pb.reset(pb.local_parents());
  pb.run_local();
  long bad = long(ea::count_mismatches(pb, pb.local_parents()));
  for (auto v : {ea::variant::rpc, ea::variant::put, ea::variant::alltoallv, ea::variant::p2p}) {
    pb.reset(pb.dist_parents());
    pb.prepare(v);
    accrete::barrier();
    pb.run(v);
    const long b = long(ea::count_mismatches(pb, pb.dist_parents()));
    long all = 0;
    MPI_Allreduce(&b, &all, 1, MPI_LONG, MPI_SUM, accrete::world().mpi_comm());
    if (accrete::rank_me() == 0) std::printf("%-14s %s\n", ea::name(v), all ? "MISMATCH" : "every entry exact");
    bad += b;
    accrete::barrier();
  }
  return bad ? 1 : 0;
}
