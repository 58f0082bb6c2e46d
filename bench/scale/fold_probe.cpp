// What SMPI charges for the same compute burst when P simulated processes
// are folded onto one host core (bench/scale/README.md, "What SMPI charges a
// short burst").
//
// Every process repeats R times: add a fixed 16 KiB block into a private
// 256 KiB array at a varying offset (a short, memory-bound burst like one
// received packet's apply), then one MPI call (MPI_Iprobe, which SMPI
// charges smpi/iprobe and which switches to the simulation kernel, which
// runs other processes before this one resumes), then the MPI call alone.
// It prints the simulated time per repetition of each loop; (add + call)
// minus (call alone), against the long burst's add, says how much the fold
// inflates a short burst at this P. Exits 1 if the adds' sum is not exact.
//
//   smpirun -np P ... fold_probe [R >= 1]
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "harness.hpp"

namespace {
constexpr std::size_t array_doubles = 32 * 1024;  // 256 KiB
constexpr std::size_t block_doubles = 2 * 1024;   // 16 KiB

// One burst; the offset walks the array so that consecutive bursts touch
// different lines, as consecutive packets do.
void burst(std::vector<double>& a, const std::vector<double>& b, std::size_t i) {
  const std::size_t off = (i * block_doubles) % array_doubles;
  for (std::size_t j = 0; j < block_doubles; ++j) a[off + j] += b[j];
}

// Median over the processes of `comm` of one value each (result everywhere).
double median_over_ranks(double v, MPI_Comm comm) {
  int n = 0;
  MPI_Comm_size(comm, &n);
  std::vector<double> all(static_cast<std::size_t>(n));
  MPI_Allgather(&v, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, comm);
  return bench::median(std::move(all));
}

void probe() {
  int flag = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me = 0, np = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  const long reps = argc > 1 ? std::atol(argv[1]) : 2000;
  if (reps < 1) {
    if (me == 0) std::fprintf(stderr, "fold_probe: R = %s, must be a positive count\n", argv[1]);
    MPI_Finalize();
    return 2;
  }
  std::vector<double> a(array_doubles, 1.0), b(block_doubles, 0.5);
  double check = 0;

  // Plain loops, not a helper taking the body as a lambda: that compiled the
  // long burst into code 3x slower (1.14 against 0.39 us per add, P = 16).
  // One long burst: R adds, no MPI call in between.
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (long i = 0; i < reps; ++i) burst(a, b, std::size_t(i));
  const double long_burst = (MPI_Wtime() - t0) / double(reps);

  // The same adds, one MPI call after each.
  MPI_Barrier(MPI_COMM_WORLD);
  t0 = MPI_Wtime();
  for (long i = 0; i < reps; ++i) {
    burst(a, b, std::size_t(i));
    probe();
  }
  const double short_bursts = (MPI_Wtime() - t0) / double(reps);

  // The MPI calls alone: what each call costs beyond smpi/iprobe.
  MPI_Barrier(MPI_COMM_WORLD);
  t0 = MPI_Wtime();
  for (long i = 0; i < reps; ++i) probe();
  const double calls = (MPI_Wtime() - t0) / double(reps);
  for (double x : a) check += x;

  const double lb = median_over_ranks(long_burst, MPI_COMM_WORLD);
  const double sb = median_over_ranks(short_bursts, MPI_COMM_WORLD);
  const double ca = median_over_ranks(calls, MPI_COMM_WORLD);
  const double worst = bench::reduce(short_bursts, MPI_MAX);
  // Two loops of R adds of 0.5 into 2048 elements each, onto 1.0 everywhere:
  // every partial sum is a multiple of 0.5 far below 2^53, so exact.
  const double expected = double(array_doubles) + double(2 * reps) * double(block_doubles) * 0.5;
  int bad = check != expected, any_bad = 0;
  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (me == 0)
    std::printf("fold_probe P=%d R=%ld: per burst, median over processes: long %.3f us, with an MPI call %.3f us "
                "(worst process %.3f us), the MPI call alone %.3f us; checksum %s\n",
                np, reps, lb * 1e6, sb * 1e6, worst * 1e6, ca * 1e6, any_bad ? "WRONG" : "exact");
  MPI_Finalize();
  return any_bad ? 1 : 0;
}
