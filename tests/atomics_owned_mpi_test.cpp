// 64-bit compare-and-swaps across (pretend) nodes when accrete is the one
// that initializes MPI: under Open MPI 4 it leaves osc/rdma out, which
// crashes on them (src/backend/mpi/init.cpp, avoid_osc_rdma), so a program
// that never sets OMPI_MCA_osc runs. Contended double adds, multiplications
// and int64_t compare-and-swap loops on one cell, checked exactly.
#include <cstdint>
#include <cstdio>

#include "accrete/accrete.hpp"
#include "accrete/atomic.hpp"

int main() {
  int failures = 0;
  {
    accrete::runtime rt;  // MPI_Init_thread here
    using accrete::global_ptr;
    accrete::atomic_domain<double> ad;
    accrete::atomic_domain<std::int64_t> ai;
    const int n = accrete::rank_n();
    global_ptr<double> sum =
        accrete::broadcast(accrete::rank_me() == 0 ? accrete::new_<double>(0.0) : global_ptr<double>(), 0).wait();
    global_ptr<double> prod =
        accrete::broadcast(accrete::rank_me() == 0 ? accrete::new_<double>(1.0) : global_ptr<double>(), 0).wait();
    global_ptr<std::int64_t> ctr =
        accrete::broadcast(accrete::rank_me() == 0 ? accrete::new_<std::int64_t>(0) : global_ptr<std::int64_t>(), 0)
            .wait();
    accrete::barrier();
    constexpr int per_rank = 50;
    accrete::promise<> done;
    for (int i = 0; i < per_rank; ++i) ad.add(sum, 0.5, done);
    for (int i = 0; i < 3; ++i) ad.mul(prod, 2.0, done);
    for (int i = 0; i < per_rank; ++i) {
      std::int64_t old = ai.load(ctr).wait();
      for (std::int64_t seen; (seen = ai.compare_exchange(ctr, old, old + 1).wait()) != old;) old = seen;
    }
    done.finalize().wait();
    accrete::barrier();
    const double s = ad.load(sum).wait(), p = ad.load(prod).wait();
    const std::int64_t c = ai.load(ctr).wait();
    if (s != 0.5 * per_rank * n || p != double(1ull << (3 * n)) || c != std::int64_t(per_rank) * n) {
      std::fprintf(stderr, "rank %d: sum %g (expected %g), product %g (expected %g), counter %lld (expected %lld)\n",
                   accrete::rank_me(), s, 0.5 * per_rank * n, p, double(1ull << (3 * n)), (long long)c,
                   (long long)per_rank * n);
      failures = 1;
    }
    accrete::barrier();
    if (accrete::rank_me() == 0) {
      accrete::delete_(sum);
      accrete::delete_(prod);
      accrete::delete_(ctr);
    }
    ad.destroy();
    ai.destroy();
    failures = accrete::reduce_all(failures, accrete::op_fast_max).wait();
    if (accrete::rank_me() == 0) std::printf("atomics_owned_mpi_test: %s\n", failures ? "fail" : "pass");
  }
  return failures;
}
