#pragma once
// A multi-producer single-consumer byte ring in node-shared memory: the
// fast path for active messages between processes of one node (and to
// self). MPI point-to-point through Open MPI's vader or MPICH's shm costs
// ~1 us per message each way; a ring costs a copy, an atomic add on the
// tail and two cache-line transfers.
//
// One ring per receiver (two: small and large messages, messages.cpp),
// written by every process of its node: per node L rings for L processes,
// not one per ordered pair (L^2), the layout of GASNet's and MPICH's
// shared-memory transports (docs/scaling.md).
//
// Layout (in the receiver's memory): the producers' shared `tail` and the
// consumer's `head` on separate cache lines, then `cap` bytes of records.
// Both counters grow monotonically (positions are taken modulo cap). A
// record is a 16-byte header (state word, sender rank) then the message,
// padded to 64 bytes (records of different producers never share a cache
// line, and a state word can only sit at the start of a line); a record
// never wraps: if it does not fit before the end, its producer reserves the
// rest of the ring as a pad record as well.
//
// Protocol:
// - A producer reserves [t, t + bytes) by compare-and-swap on `tail`,
//   after checking against `head` (acquire) that the space is free; then it
//   writes the record and stores its state word last, with release
//   (0: not yet written; pad_marker; else message length + 1).
// - The consumer reads the state word at `head` with acquire: 0 means the
//   next record is not written yet (or nothing is there), and it stops; a
//   record reserved later but written earlier waits for the one before it.
//   Messages need no order across producers, and a producer that finds the
//   ring full sends through MPI, so a slow writer only delays, never blocks.
// - Free space must read as 0 wherever a state word may later sit, the
//   first word of every line: the consumer zeroes those of what it has
//   taken before it releases it (one store of `head`, release). The ring
//   starts all zero.
//   Taken but unreleased space is not zero yet, so the consumer never reads
//   more than one lap past what it released.
// Processes of one node share coherent memory and std::atomic_ref on
// 8-byte aligned words is lock-free, so this is the same guarantee
// MPI_Win_sync would give (and it also orders the node-local puts that
// precede a remote-completion message).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace accrete::detail {

class shm_ring {
 public:
  static constexpr std::size_t header_bytes = 128;  // tail line, head line
  static constexpr std::size_t record_header = 16;  // state word, sender, unused

  shm_ring() = default;
  /// `mem` points at header_bytes + cap bytes; cap is a power of two of at
  /// least 256.
  shm_ring(std::byte* mem, std::size_t cap) : mem_(mem), cap_(cap) {}

  /// The receiver clears its ring before any sender may use it.
  static void clear(std::byte* mem, std::size_t cap) { std::memset(mem, 0, header_bytes + cap); }

  explicit operator bool() const noexcept { return mem_ != nullptr; }
  /// Largest message try_push accepts: a quarter of the ring keeps several
  /// messages in flight.
  std::size_t max_message() const noexcept { return cap_ / 4 - record_header; }

  /// Producer (any process of the node, any thread): appends `msg` from
  /// `source` unless the ring lacks space; returns whether it did.
  bool try_push(int source, std::span<const std::byte> msg) noexcept {
    const std::uint64_t rec = record_bytes(msg.size());
    std::atomic_ref<std::uint64_t> tail(tail_word());
    std::uint64_t t = tail.load(std::memory_order_relaxed), pad = 0;
    for (;;) {
      const std::uint64_t pos = t & (cap_ - 1);
      pad = cap_ - pos < rec ? cap_ - pos : 0;
      std::uint64_t h = std::atomic_ref<std::uint64_t>(head_cache_).load(std::memory_order_acquire);
      if (t + pad + rec - h > cap_) {
        // Acquire: the consumer zeroed this space before releasing it.
        h = std::atomic_ref<std::uint64_t>(head_word()).load(std::memory_order_acquire);
        std::atomic_ref<std::uint64_t>(head_cache_).store(h, std::memory_order_release);
        if (t + pad + rec - h > cap_) return false;
      }
      if (tail.compare_exchange_weak(t, t + pad + rec, std::memory_order_relaxed, std::memory_order_relaxed)) break;
    }
    if (pad) std::atomic_ref<std::uint64_t>(state_at(t)).store(pad_marker, std::memory_order_release);
    t += pad;
    std::byte* r = data() + (t & (cap_ - 1));
    const std::int32_t src = source;
    std::memcpy(r + sizeof(std::uint64_t), &src, sizeof src);
    if (!msg.empty()) std::memcpy(r + record_header, msg.data(), msg.size());
    std::atomic_ref<std::uint64_t>(state_at(t)).store(std::uint64_t(msg.size()) + 1, std::memory_order_release);
    return true;
  }

  /// Consumer (the receiver; one thread at a time): calls
  /// `take(source, span, in_place)` for every message written, in ring
  /// order, up to the first one not yet written. The span is valid only
  /// during the call. A drain re-entered from inside `take` (a handler that
  /// makes progress) still takes the messages behind the current one, but
  /// with in_place = false: it must copy them, because their space is
  /// released only when the outermost drain ends. Returns the number of
  /// messages taken.
  template <class F>
  std::size_t drain(F&& take) {
    if (head_ - released_ >= cap_ ||
        std::atomic_ref<std::uint64_t>(state_at(head_)).load(std::memory_order_acquire) == 0)
      return 0;
    const bool outer = !draining_;
    draining_ = true;
    std::size_t n = 0;
    try {
      // A full lap taken but not yet released: what lies ahead is what was
      // just taken (it is zeroed only at release).
      while (head_ - released_ < cap_) {
        const std::uint64_t w = std::atomic_ref<std::uint64_t>(state_at(head_)).load(std::memory_order_acquire);
        if (w == 0) break;
        const std::uint64_t pos = head_ & (cap_ - 1);
        if (w == pad_marker) {
          head_ += cap_ - pos;
          continue;
        }
        const std::byte* r = data() + pos;
        std::int32_t src;
        std::memcpy(&src, r + sizeof(std::uint64_t), sizeof src);
        const std::size_t len = std::size_t(w - 1);
        head_ += record_bytes(len);
        ++n;
        take(int(src), std::span<const std::byte>(r + record_header, len), outer);
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
  static constexpr std::uint64_t line = 64;
  static std::uint64_t record_bytes(std::size_t n) noexcept { return (record_header + n + line - 1) & ~(line - 1); }
  std::uint64_t& tail_word() noexcept { return *reinterpret_cast<std::uint64_t*>(mem_); }
  std::uint64_t& head_word() noexcept { return *reinterpret_cast<std::uint64_t*>(mem_ + 64); }
  std::byte* data() noexcept { return mem_ + header_bytes; }
  std::uint64_t& state_at(std::uint64_t p) noexcept {
    return *reinterpret_cast<std::uint64_t*>(data() + (p & (cap_ - 1)));
  }
  // Zeroes the state words of everything taken since the last release,
  // then releases it, after the last handler ran.
  void finish() noexcept {
    for (std::uint64_t p = released_; p < head_; p += line)
      std::atomic_ref<std::uint64_t>(state_at(p)).store(0, std::memory_order_relaxed);
    released_ = head_;
    std::atomic_ref<std::uint64_t>(head_word()).store(head_, std::memory_order_release);
    draining_ = false;
  }

  std::byte* mem_ = nullptr;
  std::uint64_t cap_ = 0;
  // Producer side: the newest head seen (threads of one process share it;
  // a stale value only makes a producer look again). Release/acquire pass
  // on the consumer's zeroing to the thread that writes into the space.
  std::uint64_t head_cache_ = 0;           // read and written through atomic_ref
  std::uint64_t head_ = 0, released_ = 0;  // consumer side
  bool draining_ = false;
};

static_assert(std::atomic_ref<std::uint64_t>::is_always_lock_free,
              "shm_ring needs lock-free 8-byte atomics to work across processes");

}  // namespace accrete::detail
