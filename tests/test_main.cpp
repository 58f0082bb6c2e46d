// Shared main for accrete's MPI test binaries: MPI first (so every test also
// exercises "the user initialised MPI before accrete"), then the runtime.
// A failure on any rank fails the test program on every rank; rank 0 prints
// the usual report, other ranks print only their failures, prefixed by rank.
#include <cstdio>
#include <cstdlib>

#include <gtest/gtest.h>
#include <mpi.h>

#include "accrete/runtime.hpp"

namespace {
class failure_printer : public testing::EmptyTestEventListener {
 public:
  explicit failure_printer(int rank) : rank_(rank) {}
  void OnTestPartResult(const testing::TestPartResult& r) override {
    if (r.failed())
      std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", rank_, r.file_name() ? r.file_name() : "?",
                   r.line_number(), r.summary());
  }

 private:
  int rank_;
};
}  // namespace

int main(int argc, char** argv) {
  int provided;
  // The progress thread (ACCRETE_PROGRESS_THREAD=1) and the par thread mode
  // (ACCRETE_THREAD_MODE=par) need MPI_THREAD_MULTIPLE.
  const bool multiple = std::getenv("ACCRETE_PROGRESS_THREAD") || std::getenv("ACCRETE_THREAD_MODE");
  MPI_Init_thread(&argc, &argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SERIALIZED,
                  &provided);
  testing::InitGoogleTest(&argc, argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    auto& listeners = testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new failure_printer(rank));
  }
  int failed = 0;
  {
    accrete::runtime rt;
    failed = RUN_ALL_TESTS() != 0;
  }
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && any && !failed) std::fprintf(stderr, "accrete tests: a failure occurred on another rank\n");
  // tests/multihost/hosts.sh reads this line: past it, only MPI_Finalize is
  // left, which MPICH over UCX's TCP transport can fail to return from.
  if (rank == 0) {
    std::printf("accrete tests: every rank finished accrete::finalize; result: %s\n", any ? "fail" : "pass");
    std::fflush(stdout);
  }
  MPI_Finalize();
  return any;
}
