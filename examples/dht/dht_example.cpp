// Distributed hash table example: every process inserts a few keys into
// both tables (RPC-only and landing-zone), then looks up every key inserted
// anywhere and checks the values.
//   ./x run 3 dht_example
#include <cstdio>
#include <string>

#include "dht.hpp"

int main() {
  accrete::runtime rt;
  const int me = accrete::rank_me(), n = accrete::rank_n();
  constexpr int per_rank = 100;
  auto key_of = [](int rank, int i) { return (std::uint64_t(rank) << 32) | std::uint64_t(i); };
  auto value_of = [](std::uint64_t k) { return "value of " + std::to_string(k) + std::string(k % 50, '*'); };

  dht::dht_rpc a;
  dht::dht_lz b;
  for (int i = 0; i < per_rank; ++i) {
    std::uint64_t k = key_of(me, i);
    std::string v = value_of(k);
    a.insert(k, v.data(), v.size()).wait();
    b.insert(k, v.data(), v.size()).wait();  // v must live until ready: it does
  }
  b.quiesce();         // every landing-zone commit has run
  accrete::barrier();  // every RPC insert has run (their futures were ready)

  int bad = 0;
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < per_rank; ++i) {
      std::uint64_t k = key_of(r, i);
      auto x = a.find(k).wait();
      auto y = b.find(k).wait();
      if (!x || !y || *x != value_of(k) || *y != value_of(k)) ++bad;
    }
  if (a.find(~0ull).wait() || b.find(~0ull).wait()) ++bad;  // absent key
  int total_bad = accrete::reduce_all(bad, accrete::op_fast_add).wait();
  auto owned = accrete::reduce_all(std::uint64_t(a.local_size()), accrete::op_fast_add).wait();
  if (me == 0)
    std::printf("dht_example: %d processes, %llu keys, %d wrong lookups: %s\n", n, (unsigned long long)owned, total_bad,
                total_bad == 0 ? "OK" : "FAILED");
  accrete::barrier();
  return total_bad == 0 ? 0 : 1;
}
