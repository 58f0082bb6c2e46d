// The node-local message ring on its own (one process plays every side):
// order, wrap-around with pad records, full-ring refusal, release of space
// only after the consumer's callback returns, senders' ranks, and several
// producer threads against a draining consumer (also under ThreadSanitizer).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <numeric>
#include <thread>
#include <vector>

#include "backend/mpi/shm_ring.hpp"

using accrete::detail::shm_ring;

namespace {
std::vector<std::byte> message(std::uint32_t seq, std::size_t len) {
  std::vector<std::byte> m(len);
  for (std::size_t i = 0; i < len; ++i) m[i] = std::byte((seq * 31 + i) & 0xff);
  if (len >= 4) std::memcpy(m.data(), &seq, 4);
  return m;
}

struct ring_fixture : ::testing::Test {
  static constexpr std::size_t cap = 256;
  alignas(64) std::byte mem[shm_ring::header_bytes + cap];
  shm_ring producer, consumer;
  void SetUp() override {
    std::memset(mem, 0xab, sizeof mem);
    shm_ring::clear(mem, cap);
    producer = shm_ring(mem, cap);
    consumer = shm_ring(mem, cap);
  }
};
}  // namespace

TEST_F(ring_fixture, EmptyRingDrainsNothing) {
  EXPECT_EQ(consumer.drain([](int, auto, bool) { FAIL(); }), 0u);
  EXPECT_EQ(producer.max_message(), cap / 4 - 16);
}

TEST_F(ring_fixture, MessagesArriveInOrderAcrossManyWraps) {
  // Lengths 0..max cycle so that records land at every offset, and pads
  // are needed whenever a record does not fit before the end.
  std::uint32_t sent = 0, got = 0;
  for (int round = 0; round < 2000; ++round) {
    std::size_t len = (round * 7) % (producer.max_message() + 1);
    len = std::max<std::size_t>(len, 4);
    auto m = message(sent, len);
    ASSERT_TRUE(producer.try_push(7, m)) << "round " << round;
    ++sent;
    if (round % 3 == 2) {
      consumer.drain([&](int src, std::span<const std::byte> s, bool) {
        ASSERT_EQ(src, 7);
        std::uint32_t seq;
        std::memcpy(&seq, s.data(), 4);
        ASSERT_EQ(seq, got);
        auto want = message(seq, s.size());
        ASSERT_TRUE(std::equal(s.begin(), s.end(), want.begin(), want.end()));
        ++got;
      });
    }
  }
  consumer.drain([&](int, std::span<const std::byte>, bool) { ++got; });
  EXPECT_EQ(got, sent);
}

TEST_F(ring_fixture, FullRingRefusesUntilDrained) {
  auto m = message(1, 48);  // 64-byte records: exactly 4 fit
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(producer.try_push(7, m));
  EXPECT_FALSE(producer.try_push(7, m));
  std::size_t seen = 0;
  // Space is released only after drain: a push from inside the callback
  // still finds the ring full.
  consumer.drain([&](int, std::span<const std::byte>, bool) {
    ++seen;
    EXPECT_FALSE(producer.try_push(7, m));
  });
  EXPECT_EQ(seen, 4u);
  EXPECT_TRUE(producer.try_push(7, m));
  EXPECT_EQ(consumer.drain([](int, auto, bool) {}), 1u);
}

TEST_F(ring_fixture, ReentrantDrainCopiesTheRestAndKeepsSpace) {
  for (std::uint32_t i = 0; i < 4; ++i) ASSERT_TRUE(producer.try_push(int(i), message(i, 48)));
  std::vector<std::pair<std::uint32_t, bool>> seen;  // (seq, in_place)
  auto record = [&](int src, std::span<const std::byte> s, bool in_place) {
    std::uint32_t seq;
    std::memcpy(&seq, s.data(), 4);
    EXPECT_EQ(src, int(seq));
    seen.emplace_back(seq, in_place);
  };
  consumer.drain([&](int src, std::span<const std::byte> s, bool in_place) {
    record(src, s, in_place);
    // A handler that makes progress: the nested drain takes messages 1..3
    // as copies, and no space is released while message 0 is in use.
    EXPECT_EQ(consumer.drain(record), 3u);
    EXPECT_FALSE(producer.try_push(9, message(9, 48)));
  });
  std::vector<std::pair<std::uint32_t, bool>> want{{0, true}, {1, false}, {2, false}, {3, false}};
  EXPECT_EQ(seen, want);
  EXPECT_TRUE(producer.try_push(4, message(4, 8)));
}

TEST_F(ring_fixture, ThrowingConsumerKeepsLaterMessages) {
  for (std::uint32_t i = 0; i < 3; ++i) ASSERT_TRUE(producer.try_push(0, message(i, 8)));
  EXPECT_THROW(consumer.drain([](int, std::span<const std::byte> s, bool) {
    std::uint32_t seq;
    std::memcpy(&seq, s.data(), 4);
    if (seq == 1) throw std::runtime_error("bad");
  }),
               std::runtime_error);
  std::vector<std::uint32_t> rest;
  consumer.drain([&](int, std::span<const std::byte> s, bool) {
    std::uint32_t seq;
    std::memcpy(&seq, s.data(), 4);
    rest.push_back(seq);
  });
  EXPECT_EQ(rest, std::vector<std::uint32_t>{2});
}

TEST_F(ring_fixture, EmptyMessagesAndZeroedSpace) {
  // A zero-length message is a record too; after many laps of records
  // full of non-zero bytes, nothing but what was sent is ever taken (the
  // consumer zeroes what it releases, so no stale state word looks written).
  std::size_t got = 0, empty = 0;
  for (int lap = 0; lap < 300; ++lap) {
    std::vector<std::byte> ones(std::size_t(lap % 5 == 0 ? 0 : 24 + lap % 17), std::byte{0xff});
    ASSERT_TRUE(producer.try_push(3, ones));
    consumer.drain([&](int src, std::span<const std::byte> s, bool) {
      EXPECT_EQ(src, 3);
      EXPECT_TRUE(std::all_of(s.begin(), s.end(), [](std::byte b) { return b == std::byte{0xff}; }));
      empty += s.empty();
      ++got;
    });
  }
  EXPECT_EQ(got, 300u);
  EXPECT_EQ(empty, 60u);
}

// Several producers (threads here, processes in the runtime) push into one
// ring while its consumer drains: every message arrives once, intact, and
// each producer's messages in the order it sent them.
TEST(ring_threads, ProducersAgainstADrainingConsumer) {
  constexpr std::size_t cap = 4096;
  constexpr int producers = 4, per = 20000;
  alignas(64) static std::byte mem[shm_ring::header_bytes + cap];
  shm_ring::clear(mem, cap);
  shm_ring consumer(mem, cap);
  std::vector<std::thread> threads;
  std::atomic<int> done{0};
  for (int p = 0; p < producers; ++p)
    threads.emplace_back([&, p] {
      shm_ring ring(mem, cap);  // each producer's own view, as each process has
      for (std::uint32_t k = 0; k < per;) {
        const auto m = message(k, 4 + (k * 13 + std::uint32_t(p)) % (ring.max_message() - 3));
        if (ring.try_push(p, m))
          ++k;
        else
          std::this_thread::yield();
      }
      done.fetch_add(1);
    });
  std::vector<std::uint32_t> next(producers, 0);
  std::size_t bad = 0;
  auto take = [&](int src, std::span<const std::byte> s, bool) {
    std::uint32_t seq;
    std::memcpy(&seq, s.data(), 4);
    if (src < 0 || src >= producers || seq != next[std::size_t(src)]++) ++bad;
    const auto want = message(seq, s.size());
    if (!std::equal(s.begin(), s.end(), want.begin(), want.end())) ++bad;
  };
  // Yield when the ring was empty: 5 threads share 2 cores in CI, and a
  // consumer spinning on an empty ring starved the producers (60 s).
  while (done.load() < producers)
    if (consumer.drain(take) == 0) std::this_thread::yield();
  for (auto& t : threads) t.join();
  consumer.drain(take);
  EXPECT_EQ(bad, 0u);
  for (int p = 0; p < producers; ++p) EXPECT_EQ(next[std::size_t(p)], std::uint32_t(per)) << "producer " << p;
}
