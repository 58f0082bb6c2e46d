// First-fit allocator over the caller's segment. Free blocks sit in an
// ordered map so neighbours coalesce on release.
#include "accrete/segment.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>

namespace accrete {
namespace {
struct heap_t {
  std::map<std::uint64_t, std::size_t> free_blocks;                               // offset -> bytes
  std::unordered_map<std::uint64_t, std::pair<std::uint64_t, std::size_t>> live;  // user offset -> block
  std::size_t used = 0;
  const char* closed_by = nullptr;  // set while the heap is closed (detail::close_heap)
};
heap_t heap;
constexpr std::size_t granule = 16;
}  // namespace

namespace detail {
void segment_init() {
  heap = heap_t{};
  heap.free_blocks[0] = segment_bytes();
}
void segment_finalize() { heap = heap_t{}; }
void close_heap(const char* closer) { heap.closed_by = closer; }
void reopen_heap() { heap.closed_by = nullptr; }
bool heap_closed() noexcept { return heap.closed_by != nullptr; }
std::size_t heap_live_objects() noexcept { return heap.live.size(); }
}  // namespace detail

global_ptr<std::byte> allocate(std::size_t bytes, std::size_t alignment) {
  detail::require_initialized("allocate()");
  if (heap.closed_by)
    throw error(std::string("accrete::allocate: the shared heap is closed by ") + heap.closed_by +
                " (allocate again after restore_heap())");
  if (alignment == 0 || (alignment & (alignment - 1)))
    throw std::invalid_argument("accrete::allocate: alignment " + std::to_string(alignment) + " is not a power of two");
  // Checked before any rounding: a request near SIZE_MAX would wrap to 0.
  if (bytes > detail::segment_bytes() || alignment > detail::segment_bytes()) {
    std::size_t largest = 0;
    for (auto& [off, len] : heap.free_blocks) largest = std::max(largest, len);
    throw segment_exhausted(bytes, detail::segment_bytes() - heap.used, largest);
  }
  std::size_t need = (std::max<std::size_t>(bytes, 1) + granule - 1) / granule * granule;
  // The alignment is of the address, not of the offset: the segment itself
  // starts wherever MPI placed it (often only 8 or 16 bytes aligned). Node
  // peers map the node's shared window at page-aligned addresses, so an
  // alignment up to a page holds in their view of the block too.
  const auto base = reinterpret_cast<std::uintptr_t>(detail::segment_base(detail::world_rank()));
  std::size_t largest = 0;
  for (auto it = heap.free_blocks.begin(); it != heap.free_blocks.end(); ++it) {
    auto [off, len] = *it;
    largest = std::max(largest, len);
    std::uint64_t user = (base + off + alignment - 1) / alignment * alignment - base;
    std::size_t pad = std::size_t(user - off);
    if (len < pad || len - pad < need) continue;
    std::size_t take = pad + need;
    heap.free_blocks.erase(it);
    if (len > take) heap.free_blocks[off + take] = len - take;
    heap.live[user] = {off, take};
    heap.used += take;
    return detail::gp_access::make<std::byte>(detail::world_rank(), user);
  }
  throw segment_exhausted(bytes, detail::segment_bytes() - heap.used, largest);
}

void deallocate(global_ptr<std::byte> p) {
  if (detail::runtime_ended()) return;  // the segment went with the runtime
  detail::require_initialized("deallocate()");
  if (p.is_null()) return;
  auto it = heap.live.find(p.offset());
  if (p.where() != detail::world_rank() || it == heap.live.end())
    throw bad_global_ptr("accrete::deallocate: rank " + std::to_string(p.where()) + " offset " +
                         std::to_string(p.offset()) + " is not a live allocation of rank " +
                         std::to_string(detail::world_rank()));
  auto [off, len] = it->second;
  heap.live.erase(it);
  heap.used -= len;
  auto next = heap.free_blocks.lower_bound(off);
  if (next != heap.free_blocks.end() && off + len == next->first) {
    len += next->second;
    next = heap.free_blocks.erase(next);
  }
  if (next != heap.free_blocks.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == off) {
      prev->second += len;
      return;
    }
  }
  heap.free_blocks[off] = len;
}

std::size_t segment_size() {
  detail::require_initialized("segment_size()");
  return detail::segment_bytes();
}
std::size_t segment_used() {
  detail::require_initialized("segment_used()");
  return heap.used;
}

}  // namespace accrete
