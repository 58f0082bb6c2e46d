// heat3d example: a 3D heat-conduction run whose halo exchange is accrete's
// non-blocking strided puts with remote completion (variant acc_put), checked
// bit for bit against the MPI_Sendrecv variant and, on small grids, against a
// serial solve of the whole grid.
//
//   mpiexec -n 4 heat3d [--n N] [--steps S]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "heat3d.hpp"

namespace {

// The whole grid on one process, with the solver's boundary values and the
// same expression order, so the result must match bit for bit.
std::vector<double> serial(const heat3d::config& c) {
  const int X = c.nx + 2, Y = c.ny + 2, Z = c.nz + 2;
  std::vector<double> a(std::size_t(X) * Y * Z, 0.0);
  auto at = [&](int i, int j, int k) -> std::size_t { return (std::size_t(i) * Y + j) * Z + k; };
  for (int i = 0; i < X; ++i)
    for (int j = 0; j < Y; ++j)
      for (int k = 0; k < Z; ++k) {
        // Faces in the solver's order: x, then y, then z, low before high.
        if (k == 0) a[at(i, j, k)] = 0.25;
        if (k == Z - 1) a[at(i, j, k)] = 0.75;
        if (j == 0) a[at(i, j, k)] = 0.5;
        if (j == Y - 1) a[at(i, j, k)] = 0.0;
        if (i == 0) a[at(i, j, k)] = 1.0;
        if (i == X - 1) a[at(i, j, k)] = 0.0;
      }
  std::vector<double> b = a;
  const std::ptrdiff_t sx = std::ptrdiff_t(Y) * Z, sy = Z;
  for (int s = 0; s < c.steps; ++s) {
    const double* u = s % 2 ? b.data() : a.data();
    double* o = s % 2 ? a.data() : b.data();
    for (int i = 1; i <= c.nx; ++i)
      for (int j = 1; j <= c.ny; ++j)
        for (int k = 1; k <= c.nz; ++k) {
          const std::ptrdiff_t q = std::ptrdiff_t(at(i, j, k));
          const double uc = u[q];
          o[q] =
              uc + c.alpha * (((u[q - sx] + u[q + sx]) + (u[q - sy] + u[q + sy]) + (u[q - 1] + u[q + 1])) - 6.0 * uc);
        }
  }
  return c.steps % 2 ? b : a;
}

}  // namespace

int main(int argc, char** argv) {
  accrete::runtime rt;
  heat3d::config cfg;
  cfg.nx = cfg.ny = cfg.nz = 30;
  cfg.steps = 50;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--n")
      cfg.nx = cfg.ny = cfg.nz = std::atoi(argv[i + 1]);
    else if (a == "--steps")
      cfg.steps = std::atoi(argv[i + 1]);
  }
  int ok = 1;
  {
    heat3d::solver sol(cfg);
    sol.run(3);
    sol.run(0);
    const bool same = sol.identical(sol.final_field(3), sol.final_field(0));
    ok = same;
    double sum = sol.checksum(sol.final_field(3));
    if (cfg.nx <= 64 && cfg.ny <= 64 && cfg.nz <= 64) {
      // Compare this process's block with the serial solution.
      auto ref = serial(cfg);
      const auto& d = sol.dims();
      const auto& l = sol.local();
      int r = accrete::rank_me();
      int c[3] = {r / (d[1] * d[2]), (r / d[2]) % d[1], r % d[2]};
      int o[3];
      const int n[3] = {cfg.nx, cfg.ny, cfg.nz};
      for (int e = 0; e < 3; ++e) {
        o[e] = 0;
        for (int q = 0; q < c[e]; ++q) o[e] += heat3d::block_len(n[e], d[e], q);
      }
      const double* u = sol.final_field(3);
      int local_ok = 1;
      for (int i = 1; i <= l[0]; ++i)
        for (int j = 1; j <= l[1]; ++j)
          for (int k = 1; k <= l[2]; ++k) {
            double mine = u[(std::size_t(i) * (l[1] + 2) + j) * (l[2] + 2) + k];
            double want = ref[(std::size_t(o[0] + i) * (cfg.ny + 2) + o[1] + j) * (cfg.nz + 2) + o[2] + k];
            if (std::memcmp(&mine, &want, sizeof mine) != 0) local_ok = 0;
          }
      int all = 0;
      MPI_Allreduce(&local_ok, &all, 1, MPI_INT, MPI_MIN, accrete::world().mpi_comm());
      ok = ok && all;
      if (accrete::rank_me() == 0) std::printf("serial reference: %s\n", all ? "bit-identical" : "MISMATCH");
    }
    if (accrete::rank_me() == 0)
      std::printf("heat3d %dx%dx%d, %d steps, %dx%dx%d processes: checksum %.17g, acc_put vs sendrecv %s\n", cfg.nx,
                  cfg.ny, cfg.nz, cfg.steps, sol.dims()[0], sol.dims()[1], sol.dims()[2], sum,
                  same ? "bit-identical" : "DIFFER");
  }
  return ok ? 0 : 1;
}
