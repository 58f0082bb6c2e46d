// The node-local message ring on its own (one process plays both sides):
// order, wrap-around with pad records, full-ring refusal, release of space
// only after the consumer's callback returns.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <numeric>
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
    shm_ring::clear(mem);
    producer = shm_ring(mem, cap);
    consumer = shm_ring(mem, cap);
  }
};
}  // namespace

TEST_F(ring_fixture, EmptyRingDrainsNothing) {
  EXPECT_EQ(consumer.drain([](auto, bool) { FAIL(); }), 0u);
  EXPECT_EQ(producer.max_message(), cap / 4 - 8);
}

TEST_F(ring_fixture, MessagesArriveInOrderAcrossManyWraps) {
  // Lengths 0..max cycle so that records land at every offset, and pads
  // are needed whenever a record does not fit before the end.
  std::uint32_t sent = 0, got = 0;
  for (int round = 0; round < 2000; ++round) {
    std::size_t len = (round * 7) % (producer.max_message() + 1);
    len = std::max<std::size_t>(len, 4);
    auto m = message(sent, len);
    ASSERT_TRUE(producer.try_push(m)) << "round " << round;
    ++sent;
    if (round % 3 == 2) {
      consumer.drain([&](std::span<const std::byte> s, bool) {
        std::uint32_t seq;
        std::memcpy(&seq, s.data(), 4);
        ASSERT_EQ(seq, got);
        auto want = message(seq, s.size());
        ASSERT_TRUE(std::equal(s.begin(), s.end(), want.begin(), want.end()));
        ++got;
      });
    }
  }
  consumer.drain([&](std::span<const std::byte>, bool) { ++got; });
  EXPECT_EQ(got, sent);
}

TEST_F(ring_fixture, FullRingRefusesUntilDrained) {
  auto m = message(1, 56);  // 64-byte records: exactly 4 fit
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(producer.try_push(m));
  EXPECT_FALSE(producer.try_push(m));
  std::size_t seen = 0;
  // Space is released only after drain: a push from inside the callback
  // still finds the ring full.
  consumer.drain([&](std::span<const std::byte>, bool) {
    ++seen;
    EXPECT_FALSE(producer.try_push(m));
  });
  EXPECT_EQ(seen, 4u);
  EXPECT_TRUE(producer.try_push(m));
  EXPECT_EQ(consumer.drain([](auto, bool) {}), 1u);
}

TEST_F(ring_fixture, ReentrantDrainCopiesTheRestAndKeepsSpace) {
  for (std::uint32_t i = 0; i < 4; ++i) ASSERT_TRUE(producer.try_push(message(i, 56)));
  std::vector<std::pair<std::uint32_t, bool>> seen;  // (seq, in_place)
  auto record = [&](std::span<const std::byte> s, bool in_place) {
    std::uint32_t seq;
    std::memcpy(&seq, s.data(), 4);
    seen.emplace_back(seq, in_place);
  };
  consumer.drain([&](std::span<const std::byte> s, bool in_place) {
    record(s, in_place);
    // A handler that makes progress: the nested drain takes messages 1..3
    // as copies, and no space is released while message 0 is in use.
    EXPECT_EQ(consumer.drain(record), 3u);
    EXPECT_FALSE(producer.try_push(message(9, 56)));
  });
  std::vector<std::pair<std::uint32_t, bool>> want{{0, true}, {1, false}, {2, false}, {3, false}};
  EXPECT_EQ(seen, want);
  EXPECT_TRUE(producer.try_push(message(4, 8)));
}

TEST_F(ring_fixture, ThrowingConsumerKeepsLaterMessages) {
  for (std::uint32_t i = 0; i < 3; ++i) ASSERT_TRUE(producer.try_push(message(i, 8)));
  EXPECT_THROW(consumer.drain([](std::span<const std::byte> s, bool) {
    std::uint32_t seq;
    std::memcpy(&seq, s.data(), 4);
    if (seq == 1) throw std::runtime_error("bad");
  }),
               std::runtime_error);
  std::vector<std::uint32_t> rest;
  consumer.drain([&](std::span<const std::byte> s, bool) {
    std::uint32_t seq;
    std::memcpy(&seq, s.data(), 4);
    rest.push_back(seq);
  });
  EXPECT_EQ(rest, std::vector<std::uint32_t>{2});
}
