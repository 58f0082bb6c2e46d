// A UPC++ program, unchanged: a ring of rputs and an RPC, checked exactly.
// Prints "rank R: ok" on success (tests/consumer/run.cmake counts them).
#include <upcxx/upcxx.hpp>

#include <cstdio>

int main() {
  upcxx::init();
  const int me = upcxx::rank_me(), n = upcxx::rank_n();
  upcxx::dist_object<upcxx::global_ptr<long>> cell(upcxx::new_<long>(0));
  upcxx::global_ptr<long> right = cell.fetch((me + 1) % n).wait();
  upcxx::rput(long(100 + me), right).wait();
  upcxx::barrier();
  long got = *cell->local();
  long twice = upcxx::rpc((me + 1) % n, [](long x) { return 2 * x; }, got).wait();
  bool ok = got == 100 + (me + n - 1) % n && twice == 2 * got;
  upcxx::barrier();
  upcxx::delete_(*cell);
  // One write per line: the two processes' output shares one stream.
  if (ok) std::printf("rank %d: ok\n", me);
  upcxx::finalize();
  return ok ? 0 : 1;
}
