// finalize() serves the RPCs of processes that have not reached it: rank 0
// sends RPCs (with replies) and rpc_ffs to every other rank while they are
// already in finalize, and they still run them all. Exits non-zero (or
// hangs, and the test times out) if one is not run or not answered.
// Then an object that frees shared memory in its destructor outlives
// finalize(), as objects in main's scope do in UPC++ programs: rank_me()
// and rank_n() still answer, and the releases do nothing.
#include <upcxx/upcxx.hpp>

#include <cstdio>
#include <cstdlib>
#include <optional>

namespace {
int fired = 0;  // rpc_ffs run here

struct counted {
  static inline int destroyed = 0;
  int v = 0;
  ~counted() { ++destroyed; }
};

int rank_at_end = -1, n_at_end = -1;
struct holder {
  upcxx::global_ptr<counted> many = upcxx::new_array<counted>(3);
  upcxx::global_ptr<counted> one = upcxx::new_<counted>();
  void* raw = upcxx::allocate(64);
  ~holder() {
    rank_at_end = upcxx::rank_me();
    n_at_end = upcxx::rank_n();
    upcxx::delete_array(many);
    upcxx::delete_(one);
    upcxx::deallocate(raw);
  }
};
}  // namespace

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
  std::optional<holder> h;
  h.emplace();
  upcxx::finalize();
  h.reset();
  if (rank_at_end != me || n_at_end != n || counted::destroyed != 0) {
    std::fprintf(stderr, "rank %d: after finalize rank_me() = %d, rank_n() = %d, %d destructors run (want %d, %d, 0)\n",
                 me, rank_at_end, n_at_end, counted::destroyed, me, n);
    return 1;
  }
  try {
    upcxx::barrier();
    std::fprintf(stderr, "rank %d: barrier() after finalize did not throw\n", me);
    return 1;
  } catch (const accrete::not_initialized&) {
  }
  if (me != 0 && fired != rounds) {
    std::fprintf(stderr, "rank %d: %d of %d rpc_ff ran before finalize returned\n", me, fired, rounds);
    return 1;
  }
  std::printf("rank %d: ok\n", me);
  return 0;
}
