// UPC++'s copy with a remote completion, initiated from a thread with a
// persona of its own (PAR mode): the completion runs in the master
// persona's user-level progress, never in the initiating thread or inside
// the call, whichever end is local (UPC++ spec, copy: remote completions run
// on the master persona of dest's owner).
#include <upcxx/upcxx.hpp>

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

namespace {
std::atomic<int> completions{0}, misplaced{0};
void remote_completion() {
  if (&upcxx::current_persona() != &upcxx::master_persona() || !upcxx::in_progress()) misplaced.fetch_add(1);
  completions.fetch_add(1);
}
}  // namespace

TEST(ParThreadsUpcxx, CopyRemoteCompletionFromAnotherPersona) {
  completions = 0;
  misplaced = 0;
  const int me = upcxx::rank_me(), right = (me + 1) % upcxx::rank_n();
  // [0] read by the left neighbour, [1] and [2] written here.
  upcxx::global_ptr<int> mine = upcxx::new_array<int>(3);
  mine.local()[0] = me;
  mine.local()[1] = mine.local()[2] = -1;
  // Named, not a temporary: it must outlive the neighbour's fetch, which the
  // barrier guarantees.
  upcxx::dist_object<upcxx::global_ptr<int>> directory(mine);
  const upcxx::global_ptr<int> theirs = directory.fetch(right).wait();
  upcxx::barrier();
  int got = -1;
  const int mine_value = 100 + me;
  std::thread worker([&] {
    upcxx::persona own;
    upcxx::persona_scope scope(own);
    // Each copy's destination is this process's memory, so each completion
    // is this process's to run.
    upcxx::copy(mine, mine + 1, 1, upcxx::remote_cx::as_rpc(remote_completion));
    upcxx::copy(theirs, &got, 1, upcxx::remote_cx::as_rpc(remote_completion) | upcxx::operation_cx::as_future())
        .wait();
    upcxx::copy(&mine_value, mine + 2, 1, upcxx::remote_cx::as_rpc(remote_completion) | upcxx::operation_cx::as_future())
        .wait();
  });
  while (completions.load() < 3) upcxx::progress();
  worker.join();
  EXPECT_EQ(misplaced.load(), 0);
  EXPECT_EQ(got, right);
  EXPECT_EQ(mine.local()[1], me);
  EXPECT_EQ(mine.local()[2], 100 + me);
  upcxx::barrier();
  upcxx::delete_array(mine);
}
