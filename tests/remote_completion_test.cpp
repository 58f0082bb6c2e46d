// Remote completion for RMA: rput(..., remote_cx::as_rpc(f, args...)) runs f
// at the target after the data has landed; f checks the data itself.
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "accrete/accrete.hpp"
#include "accrete/remote_completion.hpp"

using namespace accrete;

namespace {
int arrived = 0;  // remote completions run here
int bad = 0;      // ... that found wrong data

template <class Pred>
void progress_until(Pred pred) {
  unsigned spins = 0;
  while (!pred()) {
    progress();
    detail::idle_backoff(spins);
  }
}

// Every rank's buffer of `n` T's, gathered.
template <class T>
std::vector<global_ptr<T>> gather_buffers(std::size_t n) {
  auto mine = new_array<T>(n);
  std::vector<global_ptr<T>> all(static_cast<std::size_t>(rank_n()));
  MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, world().mpi_comm());
  return all;
}

void check_ints(global_ptr<std::int64_t> where, std::uint64_t n, std::int64_t first) {
  const std::int64_t* p = where.local();  // the target's own memory
  for (std::uint64_t i = 0; i < n; ++i)
    if (p[i] != first + std::int64_t(i)) {
      ++bad;
      break;
    }
  ++arrived;
}
}  // namespace

TEST(RemoteCompletion, NeighbourSeesData) {
  for (std::size_t n : {std::size_t(1), std::size_t(1000), std::size_t(1) << 19}) {
    arrived = bad = 0;
    auto bufs = gather_buffers<std::int64_t>(n);
    barrier();
    const int right = (rank_me() + 1) % rank_n();
    std::vector<std::int64_t> src(n);
    std::iota(src.begin(), src.end(), std::int64_t(rank_me()) * 1000000);
    auto f = rput(
        src.data(), bufs[std::size_t(right)], n,
        remote_cx::as_rpc(&check_ints, bufs[std::size_t(right)], std::uint64_t(n), std::int64_t(rank_me()) * 1000000));
    f.wait();
    progress_until([] { return arrived == 1; });
    EXPECT_EQ(bad, 0) << "n " << n;
    barrier();
    delete_array(bufs[std::size_t(rank_me())]);
  }
}

TEST(RemoteCompletion, ManyPutsToEveryRankWithLambdas) {
  // Each rank sends `k` puts to every rank (itself included), each into its
  // own slot, each with a lambda completion checking its slot.
  constexpr int k = 50;
  constexpr std::size_t len = 64;
  arrived = bad = 0;
  auto bufs = gather_buffers<std::uint32_t>(std::size_t(rank_n()) * k * len);
  barrier();
  std::vector<std::vector<std::uint32_t>> srcs;
  std::vector<future<>> fs;
  for (int t = 0; t < rank_n(); ++t)
    for (int i = 0; i < k; ++i) {
      std::size_t slot = (std::size_t(rank_me()) * k + std::size_t(i)) * len;
      std::uint32_t tagv = std::uint32_t(rank_me() * 100000 + t * 1000 + i);
      srcs.emplace_back(len, tagv);
      auto dest = bufs[std::size_t(t)] + std::ptrdiff_t(slot);
      fs.push_back(rput(srcs.back().data(), dest, len, remote_cx::as_rpc([dest, tagv] {
                          const std::uint32_t* p = dest.local();
                          for (std::size_t j = 0; j < len; ++j)
                            if (p[j] != tagv) {
                              ++bad;
                              break;
                            }
                          ++arrived;
                        })));
    }
  for (auto& f : fs) f.wait();
  progress_until([] { return arrived == rank_n() * k; });
  EXPECT_EQ(bad, 0);
  barrier();
  EXPECT_EQ(arrived, rank_n() * k);
  delete_array(bufs[std::size_t(rank_me())]);
}

TEST(RemoteCompletion, SingleValueViewsAndDistObject) {
  arrived = bad = 0;
  dist_object<std::vector<std::string>> log(std::vector<std::string>{});
  auto bufs = gather_buffers<double>(1);
  barrier();
  const int left = (rank_me() + rank_n() - 1) % rank_n();
  const double v = 3.25 + rank_me();
  std::string note = "from " + std::to_string(rank_me());
  rput(v, bufs[std::size_t(left)],
       remote_cx::as_rpc(
           [](dist_object<std::vector<std::string>>& lg, global_ptr<double> where, double expect, view<char> text) {
             if (*where.local() != expect) ++bad;
             lg->emplace_back(text.begin(), text.end());
             ++arrived;
           },
           log, bufs[std::size_t(left)], v, make_view(note.data(), note.data() + note.size())))
      .wait();
  note = "overwritten: the arguments were serialized by as_rpc";
  progress_until([] { return arrived == 1; });
  EXPECT_EQ(bad, 0);
  ASSERT_EQ(log->size(), 1u);
  EXPECT_EQ((*log)[0], "from " + std::to_string((rank_me() + 1) % rank_n()));
  barrier();
  delete_array(bufs[std::size_t(rank_me())]);
}

TEST(RemoteCompletion, Errors) {
  global_ptr<int> null;
  int x = 1;
  EXPECT_THROW(rput(&x, null, 1, remote_cx::as_rpc([] {})), bad_global_ptr);
  void (*nofn)() = nullptr;
  EXPECT_THROW(remote_cx::as_rpc(nofn), error);
}
