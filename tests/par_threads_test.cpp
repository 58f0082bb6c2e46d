// The PAR thread mode (init_options::threads, ACCRETE_THREAD_MODE=par;
// registered in par_threads.cmake): several threads of a process issue
// rput/rget, rpc and atomics at once, while the thread that called init()
// makes progress. Checked exactly:
//  - every thread's puts land and read back;
//  - a completion runs in the thread that started the operation;
//  - RPC bodies run in the thread that holds the master queue;
//  - every atomic add counts;
//  - a queue (persona) is held by one thread at a time;
//  - strided and irregular transfers from several threads land exactly;
//  - collectives and team/dist_object construction off the master
//    persona's thread throw before they communicate.
// CI runs it under ThreadSanitizer (label tsan) as well.
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <mpi.h>

#define ACCRETE_INTERNAL_INCLUDE
#include "accrete/accrete.hpp"
#include "accrete/detail/backend.hpp"
#include "exchange.hpp"

using namespace accrete;

namespace {

constexpr int kThreads = 3;
constexpr std::size_t kPer = 512;  // elements each thread writes to its neighbour
constexpr int kRpcs = 20, kAdds = 50;

std::uint64_t value(int rank, int thread, std::size_t i) {
  return (std::uint64_t(rank) << 40) | (std::uint64_t(thread) << 20) | i;
}

// The thread that initialised the runtime (the master queue's holder).
std::thread::id master_thread;

// Runs `body(t)` on kThreads threads while this thread makes progress
// (incoming RPC bodies run here), then joins them.
template <class Body>
void on_threads(Body body) {
  std::atomic<int> done{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      body(t);
      done.fetch_add(1);
    });
  while (done.load() < kThreads) {
    progress();
    std::this_thread::yield();
  }
  for (auto& th : ts) th.join();
}

}  // namespace

TEST(ParThreads, Enabled) {
  EXPECT_TRUE(detail::par_mode());
  EXPECT_TRUE(detail::holds_queue(*detail::master_queue()));
  master_thread = std::this_thread::get_id();
}

TEST(ParThreads, RmaRpcAndAtomicsFromSeveralThreads) {
  const int me = rank_me(), n = rank_n(), right = (me + 1) % n, left = (me + n - 1) % n;
  auto mine = new_array<std::uint64_t>(kThreads * kPer);
  auto all = exchange(mine);
  auto counter = new_<std::int64_t>(0);
  auto counters = exchange(counter);
  atomic_domain<std::int64_t> ad;
  barrier();

  std::atomic<int> bad_data{0}, foreign_completions{0}, rpc_off_master{0};
  on_threads([&](int t) {
    const global_ptr<std::uint64_t> dst = all[right] + std::ptrdiff_t(t * kPer);
    std::vector<std::uint64_t> src(kPer), back(kPer);
    for (std::size_t i = 0; i < kPer; ++i) src[i] = value(me, t, i);
    promise<> flood;
    for (std::size_t i = 0; i < kPer; i += 8) rput(src.data() + i, dst + std::ptrdiff_t(i), 8, flood);
    flood.finalize().wait();
    rget(dst, back.data(), kPer).wait();
    if (back != src) bad_data.fetch_add(1);

    // Completions run here, in the thread that started the operation.
    const std::thread::id self = std::this_thread::get_id();
    // This thread pauses before it waits, so the thread that called init()
    // (making progress all the while) completes the operation meanwhile: a
    // completion it ran itself would show here.
    std::thread::id ran_on;
    auto got = rget(dst, back.data(), 1).then([&ran_on] { ran_on = std::this_thread::get_id(); });
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    got.wait();
    if (ran_on != self) foreign_completions.fetch_add(1);
    for (int k = 0; k < kRpcs; ++k) {
      std::thread::id then_on;
      auto f = rpc(right, [] { return std::this_thread::get_id() == master_thread; }).then([&then_on](bool b) {
        then_on = std::this_thread::get_id();
        return b;
      });
      if (k % 4 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      const bool on_master = f.wait();
      if (!on_master) rpc_off_master.fetch_add(1);
      if (then_on != self) foreign_completions.fetch_add(1);
    }
    for (int k = 0; k < kAdds; ++k) ad.fetch_add(counters[right], 1).wait();
  });
  barrier();

  EXPECT_EQ(bad_data.load(), 0);
  EXPECT_EQ(foreign_completions.load(), 0);
  EXPECT_EQ(rpc_off_master.load(), 0);
  for (int t = 0; t < kThreads; ++t)
    for (std::size_t i = 0; i < kPer; ++i)
      ASSERT_EQ(mine.local()[t * kPer + i], value(left, t, i)) << "thread " << t << ", element " << i;
  EXPECT_EQ(ad.load(counter).wait(), std::int64_t(kThreads) * kAdds);
  barrier();
  ad.destroy();
  delete_(counter);
  delete_array(mine);
}

// Strided and irregular transfers from several threads at once, each with
// its own shape (so the datatype cache is filled from several threads), a
// section transposed on the way, read back by the same thread, then
// overwritten by an irregular put whose source fragments run backwards.
TEST(ParThreads, StridedAndIrregularFromSeveralThreads) {
  const int me = rank_me(), n = rank_n(), right = (me + 1) % n, left = (me + n - 1) % n;
  auto mine = new_array<std::uint64_t>(kThreads * kPer);
  auto all = exchange(mine);
  barrier();
  constexpr std::uint64_t irregular_mark = std::uint64_t(1) << 62;
  constexpr std::size_t frag_src = 8, frag_dst = 4;
  std::atomic<int> bad_strided{0}, bad_irregular{0};
  on_threads([&](int t) {
    const global_ptr<std::uint64_t> dst = all[right] + std::ptrdiff_t(t * kPer);
    constexpr std::ptrdiff_t e = sizeof(std::uint64_t);
    const std::size_t rows = std::size_t(8) << t, cols = kPer / rows;  // 8x64, 16x32, 32x16
    std::vector<std::uint64_t> src(kPer), back(kPer, 0);
    for (std::size_t i = 0; i < kPer; ++i) src[i] = value(me, t, i);
    // src is rows x cols row-major; at the target it lands column-major.
    const std::array<std::ptrdiff_t, 2> src_strides{std::ptrdiff_t(cols) * e, e},
        dst_strides{e, std::ptrdiff_t(rows) * e};
    const std::array<std::size_t, 2> ext{rows, cols};
    rput_strided<2>(src.data(), src_strides, dst, dst_strides, ext).wait();
    promise<> p;
    rget_strided<2>(dst, dst_strides, back.data(), src_strides, ext, p);
    p.finalize().wait();
    if (back != src) bad_strided.fetch_add(1);

    std::vector<std::uint64_t> src2(kPer);
    for (std::size_t i = 0; i < kPer; ++i) src2[i] = value(me, t, i) ^ irregular_mark;
    std::vector<std::pair<const std::uint64_t*, std::size_t>> s;
    std::vector<std::pair<global_ptr<std::uint64_t>, std::size_t>> d;
    for (std::size_t k = kPer / frag_src; k-- > 0;) s.push_back({src2.data() + k * frag_src, frag_src});
    for (std::size_t k = 0; k < kPer / frag_dst; ++k) d.push_back({dst + std::ptrdiff_t(k * frag_dst), frag_dst});
    rput_irregular(s.begin(), s.end(), d.begin(), d.end()).wait();
    std::vector<std::uint64_t> back2(kPer, 0);
    rget(dst, back2.data(), kPer).wait();
    for (std::size_t i = 0; i < kPer; ++i) {
      const std::size_t chunk = kPer / frag_src - 1 - i / frag_src;
      if (back2[i] != src2[chunk * frag_src + i % frag_src]) {
        bad_irregular.fetch_add(1);
        break;
      }
    }
  });
  barrier();
  EXPECT_EQ(bad_strided.load(), 0);
  EXPECT_EQ(bad_irregular.load(), 0);
  for (int t = 0; t < kThreads; ++t)
    for (std::size_t i = 0; i < kPer; ++i) {
      const std::size_t chunk = kPer / frag_src - 1 - i / frag_src;
      ASSERT_EQ(mine.local()[t * kPer + i], value(left, t, chunk * frag_src + i % frag_src) ^ irregular_mark)
          << "thread " << t << ", element " << i;
    }
  barrier();
  delete_array(mine);
}

// Collectives and the constructions that must match across processes
// belong to the master persona's thread: from another thread each throws,
// naming the call, before it communicates (so no process waits for it).
TEST(ParThreads, CollectivesOffTheMasterThreadThrow) {
  std::vector<std::string> messages;
  std::thread worker([&] {
    auto message_of = [&](auto&& call) {
      try {
        call();
        messages.push_back("no error");
      } catch (const error& e) {
        messages.push_back(e.what());
      }
    };
    message_of([] { barrier(); });
    message_of([] { (void)world().split(0, rank_me()); });
    message_of([] { dist_object<int> d(1); });
    message_of([] { (void)reduce_all(1, op_fast_add).wait(); });
  });
  worker.join();
  ASSERT_EQ(messages.size(), 4u);
  const char* names[] = {"accrete::barrier", "accrete::team::split", "accrete::dist_object", "accrete::reduce_all"};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_NE(messages[i].find(names[i]), std::string::npos) << messages[i];
    EXPECT_NE(messages[i].find("master persona"), std::string::npos) << messages[i];
  }
  // The master's thread still runs them, in step on every process.
  barrier();
  EXPECT_EQ(reduce_all(1, op_fast_add).wait(), rank_n());
  dist_object<int> d(rank_me());
  EXPECT_EQ(d.fetch((rank_me() + 1) % rank_n()).wait(), (rank_me() + 1) % rank_n());
  barrier();
}

// rpc_ff from several threads: each body counts once at the target, in
// the master queue's thread.
std::atomic<int> ff_count{0};

TEST(ParThreads, FireAndForgetFromSeveralThreads) {
  ff_count.store(0);
  barrier();
  const int n = rank_n();
  on_threads([&](int t) {
    for (int r = 0; r < n; ++r)
      rpc_ff(
          r, [](int) { ff_count.fetch_add(std::this_thread::get_id() == master_thread ? 1 : 1000); }, t);
  });
  // Everyone sent kThreads messages to everyone.
  while (ff_count.load() < kThreads * n) {
    progress();
    std::this_thread::yield();
  }
  barrier();
  EXPECT_EQ(ff_count.load(), kThreads * n);
}

// A queue is held by one thread at a time; its work runs in the holder's
// progress; queues are released in the reverse order of their pushes.
TEST(ParThreads, QueueHeldByOneThreadAtATime) {
  auto q = std::make_shared<detail::lpc_queue>();
  detail::push_queue(q);
  EXPECT_TRUE(detail::holds_queue(*q));
  std::thread other([&] {
    EXPECT_FALSE(detail::holds_queue(*q));
    EXPECT_THROW(detail::push_queue(q), error);
    detail::post(*q, [] {});  // posting is allowed from anywhere
  });
  other.join();
  int ran = 0;
  detail::post(*q, [&ran] { ++ran; });
  progress();
  EXPECT_EQ(ran, 1);
  EXPECT_THROW(detail::pop_queue(detail::master_queue()), error);  // q is on top
  detail::pop_queue(q);
  EXPECT_FALSE(detail::holds_queue(*q));
  std::thread taker([&] {
    detail::push_queue(q);  // free again: another thread may take it
    EXPECT_TRUE(detail::holds_queue(*q));
    detail::pop_queue(q);
  });
  taker.join();
}

// Personas: every thread has its own default persona; lpc runs work in a
// persona's holder and readies its future in the caller's thread.
TEST(ParThreads, PersonasAndLpc) {
  const std::thread::id self = std::this_thread::get_id();
  EXPECT_EQ(&current_persona(), &master_persona());
  EXPECT_TRUE(master_persona().active_with_caller());
  EXPECT_TRUE(default_persona().active_with_caller());
  persona* main_default = &default_persona();
  std::atomic<int> wrong{0};
  on_threads([&](int t) {
    const std::thread::id me_thread = std::this_thread::get_id();
    if (&default_persona() == main_default || &current_persona() != &default_persona()) wrong.fetch_add(1);
    if (master_persona().active_with_caller()) wrong.fetch_add(1);
    // Work for the master persona runs in the thread that holds it; the
    // result comes back here.
    std::thread::id then_on;
    auto f = master_persona().lpc([t] { return std::make_pair(std::this_thread::get_id(), t); });
    auto [ran_on, echoed] = f.then([&then_on](std::pair<std::thread::id, int> v) {
                               then_on = std::this_thread::get_id();
                               return v;
                             }).wait();
    if (ran_on != self || echoed != t || then_on != me_thread) wrong.fetch_add(1);
    // A persona of another thread cannot be pushed here.
    try {
      persona_scope s(master_persona());
      wrong.fetch_add(1);
    } catch (const error&) {
    }
    try {
      liberate_master_persona();
      wrong.fetch_add(1);
    } catch (const error&) {
    }
  });
  EXPECT_EQ(wrong.load(), 0);
}

// The master persona moves: after liberate_master_persona another thread
// takes it, and RPC bodies run there; the RPC's reply still comes back to
// the thread that sent it.
std::thread::id rpc_body_thread;

TEST(ParThreads, MasterPersonaMovesToAnotherThread) {
  liberate_master_persona();
  EXPECT_FALSE(master_persona().active_with_caller());
  EXPECT_THROW(liberate_master_persona(), error);
  std::atomic<bool> stop{false}, holding{false};
  std::thread::id server_id;
  std::thread server([&] {
    persona_scope scope(master_persona());
    server_id = std::this_thread::get_id();
    holding.store(true);
    while (!stop.load()) {
      progress();
      std::this_thread::yield();
    }
  });
  while (!holding.load()) std::this_thread::yield();
  std::thread::id then_on;
  const int got = rpc(rank_me(),
                      [] {
                        rpc_body_thread = std::this_thread::get_id();
                        return 7;
                      })
                      .then([&then_on](int v) {
                        then_on = std::this_thread::get_id();
                        return v;
                      })
                      .wait();
  stop.store(true);
  server.join();
  EXPECT_EQ(got, 7);
  EXPECT_EQ(rpc_body_thread, server_id);
  EXPECT_EQ(then_on, std::this_thread::get_id());
  // Back to the thread that called init(), for the tests that follow.
  detail::push_queue(detail::master_queue());
  EXPECT_TRUE(master_persona().active_with_caller());
  barrier();
}

// Active-message handlers are registered on first use (an assembly engine's
// or a sparse matrix's first construction), possibly while another thread
// dispatches messages outside the backend lock: the handler table is read
// without a lock. Under ThreadSanitizer (label tsan) a table that another
// thread's registration can change under a lookup is reported.
std::atomic<int> fresh_handled{0};
template <int N>
void fresh_handler(int, std::span<const std::byte> p) {
  if (p.size() == sizeof(int)) {
    int v;
    std::memcpy(&v, p.data(), sizeof v);
    fresh_handled.fetch_add(v == N ? 1 : 1000);
  }
}
// One at a time, with a pause after each, so that registrations interleave
// with the master's lookups.
template <int... N>
void register_fresh(std::integer_sequence<int, N...>) {
  ((detail::am_register(&fresh_handler<N>, false), std::this_thread::sleep_for(std::chrono::microseconds(20))), ...);
}
template <int N>
void send_fresh() {
  const int v = N;
  detail::am_send(rank_me(), &fresh_handler<N>, std::as_bytes(std::span(&v, 1)));
}

TEST(ParThreads, HandlersRegisterWhileTheMasterDispatches) {
  fresh_handled.store(0);
  std::atomic<bool> registered{false};
  std::thread registrar([&] {
    register_fresh(std::make_integer_sequence<int, 300>{});
    registered.store(true);
  });
  int round_trips = 0;
  while (!registered.load()) {  // the master dispatches RPCs to itself meanwhile
    EXPECT_EQ(rpc(
                  rank_me(), [](int x) { return x + 1; }, round_trips)
                  .wait(),
              round_trips + 1);
    ++round_trips;
  }
  registrar.join();
  send_fresh<0>();
  send_fresh<150>();
  send_fresh<299>();
  while (fresh_handled.load() < 3) progress();
  EXPECT_EQ(fresh_handled.load(), 3);  // each ran once, with its own payload
  barrier();
}
