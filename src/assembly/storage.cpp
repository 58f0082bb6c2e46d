// The parts' shared headers. Each part (one per process, in node-shared
// memory) starts with header_bytes: 64 stripe locks, one per cache line,
// then the count of commits its owner entered (`epoch`, read by the timeout
// diagnostic) and the newest round open for contributions (`open`,
// release-stored by the owner, acquire-loaded by node-local origins).
#include <atomic>
#include <cstring>

#include "accrete/detail/assembly_engine.hpp"
#include "assembly/common.hpp"

namespace accrete::detail {

static_assert(assembly_engine::header_bytes == 64 * assembly_engine::nlocks + 64);

std::uint64_t& assembly_engine::epoch() const noexcept {
  return *reinterpret_cast<std::uint64_t*>(block_.local() + header_bytes - 64);
}

std::uint64_t& assembly_engine::open_word(int part) const noexcept {
  return *reinterpret_cast<std::uint64_t*>(block_.peer(world_of_[part]) + header_bytes - 56);
}

std::byte* assembly_engine::direct_target(int part, std::uint64_t r) const noexcept {
  std::byte* p = block_.peer(world_of_[part]);
  if (!p) return nullptr;
  // Acquire: pairs with the owner's release in publish_open(), so its
  // reads of the previous round happen before our stores.
  if (std::atomic_ref<std::uint64_t>(open_word(part)).load(std::memory_order_acquire) < r) return nullptr;
  return p + header_bytes;
}

void assembly_engine::publish_open() noexcept {
  std::atomic_ref<std::uint64_t>(open_word(shape_.my_part)).store(open_, std::memory_order_release);
}

namespace {
std::atomic_ref<std::uint32_t> stripe_word(std::byte* part_base, std::int64_t stripe) {
  return std::atomic_ref<std::uint32_t>(*reinterpret_cast<std::uint32_t*>(part_base + 64 * stripe));
}
}  // namespace

void assembly_engine::lock_stripe(int part, std::int64_t stripe) const noexcept {
  auto lk = stripe_word(block_.peer(world_of_[part]), stripe);
  unsigned spins = 0;
  for (;;) {
    if (lk.load(std::memory_order_relaxed) == 0 && lk.exchange(1, std::memory_order_acquire) == 0) return;
    spin_pause(spins);
  }
}

bool assembly_engine::try_lock_stripe(int part, std::int64_t stripe) const noexcept {
  auto lk = stripe_word(block_.peer(world_of_[part]), stripe);
  return lk.load(std::memory_order_relaxed) == 0 && lk.exchange(1, std::memory_order_acquire) == 0;
}

void assembly_engine::unlock_stripe(int part, std::int64_t stripe) const noexcept {
  stripe_word(block_.peer(world_of_[part]), stripe).store(0, std::memory_order_release);
}

std::size_t assembly_engine::storage_bytes_for(std::int64_t lrows, std::int64_t lcols, std::int64_t lld,
                                               std::size_t elem_size) noexcept {
  if (lrows < 0 || lcols < 0 || lld < 0) return 0;
  std::size_t elems = 0, bytes = 0, total = 0;
  if (lrows > 0 && lcols > 0 &&
      __builtin_mul_overflow(std::size_t(lld), std::size_t(lcols), &elems))
    return 0;
  // Beyond 2^48 bytes no machine maps it; such a request is an error, not
  // a wait for the allocator to fail.
  if (__builtin_mul_overflow(elems, elem_size, &bytes) || __builtin_add_overflow(bytes, header_bytes, &total) ||
      total > (std::size_t{1} << 48))
    return 0;
  return total;
}

void assembly_engine::snapshot(void* dst) const {
  const std::size_t bytes = shape_.storage_bytes - header_bytes;
  if (bytes == 0) return;  // an empty part: dst may be an empty span's null data()
  const int me = shape_.my_part;
  // All stripes in ascending order, like an atomic update (kernels.hpp).
  for (std::int64_t s = 0; s < nlocks; ++s) lock_stripe(me, s);
  std::memcpy(dst, storage(), bytes);
  for (std::int64_t s = 0; s < nlocks; ++s) unlock_stripe(me, s);
}

void assembly_engine::read(int part, std::int64_t li, std::int64_t lj, void* dst, std::size_t bytes) const {
  const std::size_t off = header_bytes + std::size_t(lj * lld_of_[part] + li) * shape_.elem_size;
  block_.read(world_of_[part], off, dst, bytes);
}

}  // namespace accrete::detail
