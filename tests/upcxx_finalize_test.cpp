// finalize() serves the RPCs of processes that have not reached it: rank 0
// sends RPCs (with replies) and rpc_ffs to every other rank while they are
// already in finalize, and they still run them all. Exits non-zero (or
// hangs, and the test times out) if one is not run or not answered.
#include <upcxx/upcxx.hpp>

#include <cstdio>
#include <cstdlib>

namespace {
int fired = 0;  // rpc_ffs run here
}

int main() {
  upcxx::init();
  const int me = upcxx::rank_me(), n = upcxx::rank_n();
  const int rounds = 200;
  upcxx::barrier();
  if (me == 0) {
    // The others are on their way into finalize (or in it) now.
    long sum = 0, want = 0;
    for (int i = 0; i < rounds; ++i) {
      for (int r = 1; r < n; ++r) {
        sum += upcxx::rpc(r, [](int v) { return v * 2; }, i).wait();
        want += 2 * i;
        upcxx::rpc_ff(r, [] { ++fired; });
      }
    }
    if (sum != want) {
      std::fprintf(stderr, "rank 0: replies summed to %ld, expected %ld\n", sum, want);
      return 1;
    }
  }
  upcxx::finalize();
  if (me != 0 && fired != rounds) {
    std::fprintf(stderr, "rank %d: %d of %d rpc_ff ran before finalize returned\n", me, fired, rounds);
    return 1;
  }
  std::printf("rank %d: ok\n", me);
  return 0;
}
