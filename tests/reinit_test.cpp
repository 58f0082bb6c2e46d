// Objects that outlive finalize() in a program that owns MPI and calls
// init() again. Every object belongs to the runtime it was made in: under
// the next one, using it throws accrete::not_initialized, and destroying it
// frees only its own memory. (Destroying one once freed the new runtime's
// channel, so the new matrix's commit aborted; using one crashed, read back
// old values, or returned a counter value without a word.)
#include <cmath>
#include <cstdio>
#include <vector>

#include <mpi.h>

#include "accrete/accrete.hpp"
#include "accrete/array/counter.hpp"
#include "accrete/array/dist_array.hpp"
#include "accrete/dist_object.hpp"
#include "accrete/matrix/convergent_matrix.hpp"

#define CHECK(cond)                                                                           \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      std::fprintf(stderr, "[%d] %s:%d: check failed: %s\n", me, __FILE__, __LINE__, #cond); \
      ++failures;                                                                             \
    }                                                                                         \
  } while (0)

namespace {
int failures = 0, me = 0;

// Whether f() throws accrete::not_initialized (anything else, or nothing,
// is a failure).
template <class F>
bool refused(F&& f) {
  try {
    f();
  } catch (const accrete::not_initialized&) {
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[%d] threw something else: %s\n", me, e.what());
    return false;
  }
  return false;
}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  int p = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &p);

  // The first runtime's objects, kept past its finalize on purpose.
  accrete::init();
  accrete::process_grid grid(accrete::world().mpi_comm());
  auto* A = new accrete::convergent_matrix<double>(8, 8, grid, 4, 4);
  auto* D = new accrete::dist_array<double>(4, 4 * p);
  auto* C = new accrete::counter(7);
  auto* O = new accrete::dist_object<int>(me);
  A->update(1.0, 0, 0);
  A->commit();
  D->fill(1.0);
  accrete::finalize();

  // The second runtime, with objects of its own first (they take the
  // channel and object numbers the old ones had).
  accrete::init();
  accrete::process_grid grid2(accrete::world().mpi_comm());
  accrete::convergent_matrix<double> B(8, 8, grid2, 4, 4);
  accrete::dist_array<double> E(4, 4 * p);
  accrete::dist_object<int> O2(10 * me);

  // Using an old object: refused, with nothing read or changed.
  std::vector<double> buf(16, -1.0);
  CHECK(refused([&] { (void)A->get(0, 0); }));
  CHECK(refused([&] { (void)A->local(); }));
  CHECK(refused([&] { A->update(1.0, 0, 0); }));
  CHECK(refused([&] { A->commit(); }));
  CHECK(refused([&] { D->get_blocking({0, 1, 0, 1}, buf.data(), 1); }));
  CHECK(refused([&] { D->put_blocking({0, 1, 0, 1}, buf.data(), 1); }));
  CHECK(refused([&] { (void)D->norm(); }));
  CHECK(refused([&] { (void)D->access(); }));
  CHECK(refused([&] { (void)C->fetch_add(1); }));
  CHECK(refused([&] { C->reset(0); }));
  CHECK(buf[0] == -1.0);
  CHECK(!D->usable() && E.usable());

  // Destroying them frees only their own memory.
  delete A;
  delete D;
  delete C;
  delete O;

  // The new runtime's objects are untouched and work, exactly.
  B.update(2.0, 1, 1);
  B.commit();
  CHECK(B.get(1, 1) == 2.0 * p);
  E.fill(0.5);
  CHECK(E.norm() == std::sqrt(0.25 * 16 * p));  // the sum of squares is exact
  const int next = (me + 1) % p;
  CHECK(O2.fetch(next).wait() == 10 * next);
  accrete::barrier();
  accrete::finalize();

  int any = 0;
  MPI_Allreduce(&failures, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (me == 0) std::printf("reinit_test: %s\n", any ? "FAILED" : "all checks passed");
  MPI_Finalize();
  return any ? 1 : 0;
}
