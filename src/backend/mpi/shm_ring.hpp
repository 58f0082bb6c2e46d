#pragma once
// A single-producer single-consumer byte ring in node-shared memory: the
// fast path for active messages between processes of one node (and to
// self). MPI point-to-point through Open MPI's vader or MPICH's shm costs
// ~1 us per message each way; a ring costs a copy and two cache-line
// transfers.
//
// Layout (in the receiver's memory, one ring per sender): the producer's
// `tail` and the consumer's `head` on separate cache lines, then `cap`
// bytes of records. Both counters grow monotonically (positions are taken
// modulo cap). A record is an 8-byte length then the message, padded to 8
// bytes; a record never wraps: if it does not fit before the end, the
// producer writes a pad marker and starts at offset 0.
//
// Ordering: the producer copies the record, then publishes `tail` with
// release; the consumer reads `tail` with acquire. Processes of one node
// share coherent memory and std::atomic_ref on 8-byte aligned words is
// lock-free, so this is the same guarantee MPI_Win_sync would give (and it
// also orders the node-local puts that precede a remote-completion message).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace accrete::detail {

class shm_ring {
 public:
  static constexpr std::size_t header_bytes = 128;  // tail line, head line

  shm_ring() = default;
  /// `mem` points at header_bytes + cap bytes; cap is a power of two.
  shm_ring(std::byte* mem, std::size_t cap) : mem_(mem), cap_(cap) {}

  /// The receiver clears its rings before any sender may use them.
  static void clear(std::byte* mem) { std::memset(mem, 0, header_bytes); }

  explicit operator bool() const noexcept { return mem_ != nullptr; }
  /// Largest message try_push accepts: a quarter of the ring keeps several
  /// messages in flight.
  std::size_t max_message() const noexcept { return cap_ / 4 - sizeof(std::uint64_t); }

  /// Producer: appends `msg` unless the ring lacks space; returns whether it did.
  bool try_push(std::span<const std::byte> msg) noexcept {
    const std::uint64_t rec = record_bytes(msg.size());
    const std::uint64_t pos = tail_ & (cap_ - 1);
    const std::uint64_t pad = cap_ - pos < rec ? cap_ - pos : 0;
    if (tail_ + pad + rec - head_cache_ > cap_) {
      head_cache_ = std::atomic_ref(head()).load(std::memory_order_acquire);
      if (tail_ + pad + rec - head_cache_ > cap_) return false;
    }
    if (pad) {
      std::uint64_t marker = pad_marker;
      std::memcpy(data() + pos, &marker, sizeof marker);
    }
    std::byte* r = data() + ((tail_ + pad) & (cap_ - 1));
    std::uint64_t len = msg.size();
    std::memcpy(r, &len, sizeof len);
    std::memcpy(r + sizeof len, msg.data(), msg.size());
    tail_ += pad + rec;
    std::atomic_ref(tail()).store(tail_, std::memory_order_release);
    return true;
  }

  /// Consumer: calls `take(span, in_place)` for every message present, in
  /// order. The span is valid only during the call. A drain re-entered from
  /// inside `take` (a handler that makes progress) still takes the messages
  /// behind the current one, but with in_place = false: it must copy them,
  /// because their space is released only when the outermost drain ends.
  /// Returns the number of messages taken.
  template <class F>
  std::size_t drain(F&& take) {
    const std::uint64_t t = std::atomic_ref(tail()).load(std::memory_order_acquire);
    if (head_ >= t) return 0;
    const bool outer = !draining_;
    draining_ = true;
    std::size_t n = 0;
    try {
      while (head_ < t) {
        const std::uint64_t pos = head_ & (cap_ - 1);
        std::uint64_t len;
        std::memcpy(&len, data() + pos, sizeof len);
        if (len == pad_marker) {
          head_ += cap_ - pos;
          continue;
        }
        const std::byte* m = data() + pos + sizeof len;
        head_ += record_bytes(len);
        ++n;
        take(std::span<const std::byte>(m, len), outer);
      }
    } catch (...) {
      if (outer) finish();
      throw;
    }
    if (outer) finish();
    return n;
  }

 private:
  static constexpr std::uint64_t pad_marker = ~std::uint64_t{0};
  static std::uint64_t record_bytes(std::size_t n) noexcept { return (sizeof(std::uint64_t) + n + 7) & ~7ull; }
  std::uint64_t& tail() noexcept { return *reinterpret_cast<std::uint64_t*>(mem_); }
  std::uint64_t& head() noexcept { return *reinterpret_cast<std::uint64_t*>(mem_ + 64); }
  std::byte* data() noexcept { return mem_ + header_bytes; }
  // Releases the space of everything taken, after the last handler ran.
  void finish() noexcept {
    std::atomic_ref(head()).store(head_, std::memory_order_release);
    draining_ = false;
  }

  std::byte* mem_ = nullptr;
  std::uint64_t cap_ = 0;
  std::uint64_t tail_ = 0, head_cache_ = 0;  // producer side
  std::uint64_t head_ = 0;                   // consumer side
  bool draining_ = false;
};

static_assert(std::atomic_ref<std::uint64_t>::is_always_lock_free,
              "shm_ring needs lock-free 8-byte atomics to work across processes");

}  // namespace accrete::detail
