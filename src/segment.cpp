// The caller's segment heap. Requests of up to 1 KiB with an alignment of
// at most 16 bytes come from slabs: 64 KiB blocks, each cut into objects of
// one size class. A first-fit request walks the free blocks and makes three
// node-based map updates (two mallocs and a free); a slab request pops a
// free stack, which matters to programs that allocate a landing zone per
// message (the UPC++ DHT). Everything else, and the slabs themselves, comes
// from a first-fit allocator whose free blocks sit in an ordered map so that
// neighbours coalesce on release.
#include "accrete/segment.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace accrete {
namespace {
constexpr std::size_t granule = 16;
constexpr std::size_t slab_bytes = std::size_t{1} << 16;
constexpr std::size_t small_max = 1024;
// Every 16 bytes to 128, then four classes per doubling.
constexpr std::array<std::uint16_t, 20> class_bytes = {16,  32,  48,  64,  80,  96,  112, 128, 160, 192,
                                                       224, 256, 320, 384, 448, 512, 640, 768, 896, 1024};
constexpr auto class_of_granules = [] {
  std::array<std::uint8_t, small_max / granule + 1> c{};
  std::size_t k = 0;
  for (std::size_t g = 1; g < c.size(); ++g) {
    while (class_bytes[k] < g * granule) ++k;
    c[g] = std::uint8_t(k);
  }
  return c;
}();

struct slab {
  std::uint64_t off = 0;                                     // of its first object (address aligned to slab_bytes)
  std::uint32_t cls = 0, capacity = 0, live = 0, fresh = 0;  // fresh: never handed out from here on
  std::vector<std::uint16_t> reused;                         // released objects, taken first
  std::vector<std::uint64_t> in_use;                         // one bit per object
};

struct heap_t {
  std::map<std::uint64_t, std::size_t> free_blocks;                               // offset -> bytes
  std::unordered_map<std::uint64_t, std::pair<std::uint64_t, std::size_t>> live;  // user offset -> block
  std::size_t used = 0;
  const char* closed_by = nullptr;  // set while the heap is closed (detail::close_heap)
  std::vector<slab> slabs;
  std::vector<std::uint32_t> spare_ids;                                  // of released slabs
  std::array<std::vector<std::uint32_t>, class_bytes.size()> with_room;  // per class; the last is used
  std::vector<std::uint32_t> slab_at;  // per 64 KiB of address from the segment's: id + 1
  std::uint64_t slab_origin = 0;       // address / slab_bytes of slab_at[0]
  std::uintptr_t base = 0;             // the segment's address in this process
  std::size_t small_live = 0;
};
heap_t heap;

// First fit. `exact`: the alignment padding goes back to the free blocks
// (slabs); otherwise it stays part of the block, as deallocate expects.
// Returns the user offset and sets `block` to the block taken, or false.
bool first_fit(std::size_t need, std::size_t alignment, bool exact, std::uint64_t& user,
               std::pair<std::uint64_t, std::size_t>& block) {
  const auto base = heap.base;
  for (auto it = heap.free_blocks.begin(); it != heap.free_blocks.end(); ++it) {
    auto [off, len] = *it;
    std::uint64_t u = (base + off + alignment - 1) / alignment * alignment - base;
    std::size_t pad = std::size_t(u - off);
    if (len < pad || len - pad < need) continue;
    std::size_t take = pad + need;
    heap.free_blocks.erase(it);
    if (len > take) heap.free_blocks[off + take] = len - take;
    if (exact && pad) heap.free_blocks[off] = pad;
    user = u;
    block = exact ? std::pair<std::uint64_t, std::size_t>{u, need} : std::pair<std::uint64_t, std::size_t>{off, take};
    return true;
  }
  return false;
}

void release_block(std::uint64_t off, std::size_t len) {
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

std::size_t slab_index(std::uint64_t user_off) { return (heap.base + user_off) / slab_bytes - heap.slab_origin; }

// A new slab for class `k` from the first-fit blocks, or false when none fits.
bool add_slab(std::size_t k) {
  std::uint64_t off;
  std::pair<std::uint64_t, std::size_t> block;
  if (!first_fit(slab_bytes, slab_bytes, true, off, block)) return false;
  std::uint32_t id;
  if (heap.spare_ids.empty()) {
    id = std::uint32_t(heap.slabs.size());
    heap.slabs.emplace_back();
  } else {
    id = heap.spare_ids.back();
    heap.spare_ids.pop_back();
  }
  slab& s = heap.slabs[id];
  s.off = off;
  s.cls = std::uint32_t(k);
  s.capacity = std::uint32_t(slab_bytes / class_bytes[k]);
  s.live = s.fresh = 0;
  s.reused.clear();
  s.in_use.assign((s.capacity + 63) / 64, 0);
  const std::size_t at = slab_index(off);
  if (heap.slab_at.size() <= at) heap.slab_at.resize(at + 1, 0);
  heap.slab_at[at] = id + 1;
  heap.with_room[k].push_back(id);
  return true;
}

void drop_slab(std::uint32_t id) {
  slab& s = heap.slabs[id];
  heap.slab_at[slab_index(s.off)] = 0;
  release_block(s.off, slab_bytes);
  s.reused = {};
  s.in_use = {};
  heap.spare_ids.push_back(id);
}

// Empty slabs kept for reuse go back to the first-fit blocks (before a
// first-fit request is refused).
bool drop_empty_slabs() {
  bool any = false;
  for (auto& list : heap.with_room)
    std::erase_if(list, [&](std::uint32_t id) {
      if (heap.slabs[id].live) return false;
      drop_slab(id);
      any = true;
      return true;
    });
  return any;
}

bool small_allocate(std::size_t need, std::uint64_t& user) {
  const std::size_t k = class_of_granules[need / granule];
  auto& list = heap.with_room[k];
  if (list.empty() && !add_slab(k)) return false;
  slab& s = heap.slabs[list.back()];
  std::uint32_t i;
  if (!s.reused.empty()) {
    i = s.reused.back();
    s.reused.pop_back();
  } else {
    i = s.fresh++;
  }
  s.in_use[i / 64] |= std::uint64_t{1} << (i % 64);
  if (++s.live == s.capacity) list.pop_back();
  ++heap.small_live;
  heap.used += class_bytes[k];
  user = s.off + std::uint64_t(i) * class_bytes[k];
  return true;
}

enum class slab_release { not_in_a_slab, released, not_live };

// Releases `user` if it is a live object of a slab.
slab_release small_deallocate(std::uint64_t user) {
  const std::size_t at = slab_index(user);
  if (at >= heap.slab_at.size() || !heap.slab_at[at]) return slab_release::not_in_a_slab;
  const std::uint32_t id = heap.slab_at[at] - 1;
  slab& s = heap.slabs[id];
  const std::size_t bytes = class_bytes[s.cls];
  const std::uint64_t i = (user - s.off) / bytes;
  const std::uint64_t bit = std::uint64_t{1} << (i % 64);
  if ((user - s.off) % bytes || i >= s.capacity || !(s.in_use[i / 64] & bit)) return slab_release::not_live;
  s.in_use[i / 64] &= ~bit;
  s.reused.push_back(std::uint16_t(i));
  --heap.small_live;
  heap.used -= bytes;
  auto& list = heap.with_room[s.cls];
  if (s.live-- == s.capacity) list.push_back(id);
  // An empty slab stays for the next request unless its class has another
  // one with room (so a class holds at most one empty slab at a time).
  if (s.live == 0 && list.size() > 1) {
    std::erase(list, id);
    drop_slab(id);
  }
  return slab_release::released;
}
}  // namespace

namespace detail {
void segment_init() {
  heap = heap_t{};
  heap.free_blocks[0] = segment_bytes();
  heap.base = reinterpret_cast<std::uintptr_t>(segment_base(world_rank()));
  heap.slab_origin = heap.base / slab_bytes;
}
void segment_finalize() { heap = heap_t{}; }
void close_heap(const char* closer) { heap.closed_by = closer; }
void reopen_heap() { heap.closed_by = nullptr; }
bool heap_closed() noexcept { return heap.closed_by != nullptr; }
std::size_t heap_live_objects() noexcept { return heap.live.size() + heap.small_live; }
}  // namespace detail

global_ptr<std::byte> allocate(std::size_t bytes, std::size_t alignment) {
  detail::require_initialized("allocate()");
  if (heap.closed_by)
    throw error(std::string("accrete::allocate: the shared heap is closed by ") + heap.closed_by +
                " (allocate again after restore_heap())");
  if (alignment == 0 || (alignment & (alignment - 1)))
    throw std::invalid_argument("accrete::allocate: alignment " + std::to_string(alignment) + " is not a power of two");
  auto largest_free = [] {
    std::size_t largest = 0;
    for (auto& [off, len] : heap.free_blocks) largest = std::max(largest, len);
    return largest;
  };
  // Checked before any rounding: a request near SIZE_MAX would wrap to 0.
  if (bytes > detail::segment_bytes() || alignment > detail::segment_bytes())
    throw segment_exhausted(bytes, detail::segment_bytes() - heap.used, largest_free());
  std::size_t need = (std::max<std::size_t>(bytes, 1) + granule - 1) / granule * granule;
  std::uint64_t user;
  // Slab objects are 16-byte aligned in every process's view: node peers map
  // the node's shared window at page-aligned addresses.
  if (need <= small_max && alignment <= granule && small_allocate(need, user))
    return detail::gp_access::make<std::byte>(detail::world_rank(), user);
  // The alignment is of the address, not of the offset: the segment itself
  // starts wherever MPI placed it (often only 8 or 16 bytes aligned). Node
  // peers map the node's shared window at page-aligned addresses, so an
  // alignment up to a page holds in their view of the block too.
  std::pair<std::uint64_t, std::size_t> block;
  if (first_fit(need, alignment, false, user, block) ||
      (drop_empty_slabs() && first_fit(need, alignment, false, user, block))) {
    heap.live[user] = block;
    heap.used += block.second;
    return detail::gp_access::make<std::byte>(detail::world_rank(), user);
  }
  throw segment_exhausted(bytes, detail::segment_bytes() - heap.used, largest_free());
}

void deallocate(global_ptr<std::byte> p) {
  if (detail::runtime_ended()) return;  // the segment went with the runtime
  detail::require_initialized("deallocate()");
  if (p.is_null()) return;
  auto bad = [&] {
    return "accrete::deallocate: rank " + std::to_string(p.where()) + " offset " + std::to_string(p.offset()) +
           " is not a live allocation of rank " + std::to_string(detail::world_rank());
  };
  if (p.where() != detail::world_rank()) throw bad_global_ptr(bad());
  if (!heap.slabs.empty() && p.offset() < detail::segment_bytes()) {
    const slab_release r = small_deallocate(p.offset());
    if (r == slab_release::released) return;
    if (r == slab_release::not_live) throw bad_global_ptr(bad());
  }
  auto it = heap.live.find(p.offset());
  if (it == heap.live.end()) throw bad_global_ptr(bad());
  auto [off, len] = it->second;
  heap.live.erase(it);
  heap.used -= len;
  release_block(off, len);
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
