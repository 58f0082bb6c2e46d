// Non-template half of RPC: reply bookkeeping, the dist_object registry and
// messages waiting for a dist_object that is not constructed yet.
// (dist_next_key(), which caches ids on a team's communicator, is in
// src/backend/mpi/team.cpp.)
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include <dlfcn.h>
#include <link.h>

#include "accrete/detail/backend.hpp"
#include "accrete/detail/rpc_runtime.hpp"
#include "accrete/error.hpp"
#include "accrete/progress.hpp"
#include "accrete/team.hpp"

namespace accrete::detail {

void rpc_fn_base() noexcept {}

namespace {

struct code_range {
  std::uintptr_t lo, hi;
};

// The executable segments of the loaded object that holds rpc_fn_base.
const std::vector<code_range>& own_code() {
  static const std::vector<code_range> ranges = [] {
    struct search {
      std::uintptr_t base_fn;
      std::vector<code_range> found;
    } s{reinterpret_cast<std::uintptr_t>(&rpc_fn_base), {}};
    dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t, void* arg) -> int {
          auto& s = *static_cast<search*>(arg);
          std::vector<code_range> mine;
          bool holds = false;
          for (int k = 0; k < info->dlpi_phnum; ++k) {
            const auto& ph = info->dlpi_phdr[k];
            if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
            const std::uintptr_t lo = info->dlpi_addr + ph.p_vaddr, hi = lo + ph.p_memsz;
            mine.push_back({lo, hi});
            holds = holds || (s.base_fn >= lo && s.base_fn < hi);
          }
          if (!holds) return 0;
          s.found = std::move(mine);
          return 1;
        },
        &s);
    return s.found;
  }();
  return ranges;
}

bool in_own_code(std::uintptr_t a) {
  for (auto& r : own_code())
    if (a >= r.lo && a < r.hi) return true;
  return false;
}

}  // namespace

std::intptr_t fn_offset_checked(std::intptr_t address) {
  if (!in_own_code(std::uintptr_t(address))) {
    Dl_info info{};
    const char* where = dladdr(reinterpret_cast<void*>(address), &info) && info.dli_fname ? info.dli_fname : "unknown";
    char hex[32];
    std::snprintf(hex, sizeof hex, "%#llx", static_cast<unsigned long long>(address));
    throw error(std::string("accrete::rpc: the function at ") + hex + " lives in " + where +
                ", not in the program's own code; its address differs between processes, so it cannot be "
                "called remotely (call it from a lambda or a function of the program)");
  }
  return address - reinterpret_cast<std::intptr_t>(&rpc_fn_base);
}

std::intptr_t fn_address_checked(std::intptr_t offset, int source) {
  const std::uintptr_t a = std::uintptr_t(reinterpret_cast<std::intptr_t>(&rpc_fn_base)) + std::uintptr_t(offset);
  if (!in_own_code(a))
    throw error("accrete::rpc: message from rank " + std::to_string(source) + " names function offset " +
                std::to_string(offset) + ", outside the program's code (corrupt or forged message)");
  return std::intptr_t(a);
}

namespace {

struct key_hash {
  std::size_t operator()(const dist_key& k) const noexcept {
    return std::size_t(k.team * 0x9E3779B97F4A7C15ull ^ (k.object + 0x632BE59BD9B4E019ull));
  }
};

struct parked_msg {
  am_handler handler;
  int source;
  std::vector<std::byte> message;  // header space + payload, so alignment is preserved
};

// An awaited reply: its promise, and in the PAR mode the queue of the
// thread that sent the RPC (the promise is fulfilled there).
struct reply_slot {
  std::unique_ptr<reply_base> value;  // null while the slot is free
  std::shared_ptr<lpc_queue> owner;
  std::uint32_t generation = 0;  // counts the slot's uses, so a stale id is told apart
};

// Awaited replies in reusable slots: an id is the slot's index and its
// generation, so registering and finding a reply allocate and hash nothing
// (keyed by a counter in a hash map, every RPC would malloc and free a node
// and walk the hash twice).
struct reply_table {
  std::vector<reply_slot> slots;
  std::vector<std::uint32_t> free;

  std::size_t pending() const noexcept { return slots.size() - free.size(); }

  std::uint64_t add(reply_slot s) {
    std::uint32_t i;
    if (free.empty()) {
      i = std::uint32_t(slots.size());
      slots.emplace_back();
    } else {
      i = free.back();
      free.pop_back();
    }
    s.generation = slots[i].generation + 1;
    slots[i] = std::move(s);
    return std::uint64_t(slots[i].generation) << 32 | i;
  }
  // The slot of `id`, emptied, or false when no reply with this id is awaited.
  bool take(std::uint64_t id, reply_slot& out) {
    const auto i = std::uint32_t(id);
    if (i >= slots.size() || !slots[i].value || slots[i].generation != std::uint32_t(id >> 32)) return false;
    out.value = std::move(slots[i].value);
    out.owner = std::move(slots[i].owner);
    free.push_back(i);
    return true;
  }
};

// Guarded by the backend lock: in the PAR mode any thread sends RPCs and
// constructs dist_objects, while the master queue's thread receives.
struct rpc_state {
  reply_table replies;
  std::unordered_map<dist_key, void*, key_hash> objects;
  // The object dist_find found last: an RPC stream names the same object
  // over and over, and the map's lookup (a hash and a division) was 4% of
  // an 8-byte bench_dht `lz` insert to self. Null when not known.
  dist_key last_key;
  void* last_obj = nullptr;
  std::unordered_map<dist_key, std::vector<parked_msg>, key_hash> parked;
  std::size_t parked_count = 0;
  // Per team id: objects constructed here so far (their numbers are below
  // it), so that an RPC naming one that no longer exists is told apart from
  // one for an object not constructed yet.
  std::unordered_map<std::uint64_t, std::uint64_t> made;
  // dist_id::when_here callbacks waiting for their object.
  std::unordered_map<dist_key, std::vector<std::function<void(void*)>>, key_hash> waiters;
};

// Whether this process constructed `k` and destroyed it since.
bool dist_gone(const rpc_state& s, const dist_key& k) noexcept {
  auto it = s.made.find(k.team);
  return it != s.made.end() && k.object < it->second && !s.objects.count(k);
}

rpc_state& rs() {
  static rpc_state s;
  return s;
}

const bool reply_handler_registered = [] {
  am_register(&rpc_reply_handler, false);
  return true;
}();

}  // namespace

// ---- replies --------------------------------------------------------------------

std::uint64_t reply_register(std::unique_ptr<reply_base> slot) {
  (void)reply_handler_registered;
  std::shared_ptr<lpc_queue> owner = par_mode() ? current_queue() : nullptr;
  backend_guard g;
  return rs().replies.add(reply_slot{std::move(slot), std::move(owner)});
}

void rpc_reply_handler(int source, std::span<const std::byte> payload) {
  reader r(payload, source, am_header_bytes, "RPC reply");
  auto id = r.read<std::uint64_t>();
  reply_slot slot;
  {
    backend_guard g;
    if (!rs().replies.take(id, slot)) r.fail("unknown reply id " + std::to_string(id));
  }
  if (!slot.owner || holds_queue(*slot.owner)) return slot.value->deliver(r);
  // Another thread sent the RPC: the reply is read and its promise
  // fulfilled there (a copy with header space keeps the alignment).
  auto copy = std::make_shared<std::vector<std::byte>>(am_header_bytes + payload.size());
  if (!payload.empty()) std::memcpy(copy->data() + am_header_bytes, payload.data(), payload.size());
  std::shared_ptr<reply_base> value = std::move(slot.value);
  post(*slot.owner, [copy, value, source] {
    reader again(std::span<const std::byte>(*copy).subspan(am_header_bytes), source, am_header_bytes, "RPC reply");
    (void)again.read<std::uint64_t>();
    value->deliver(again);
  });
}

std::size_t replies_pending() noexcept {
  backend_guard g;
  return rs().replies.pending();
}

// ---- dist_object registry ------------------------------------------------------

void dist_add(const dist_key& k, void* obj) {
  backend_guard g;
  auto& s = rs();
  if (!s.objects.emplace(k, obj).second)
    throw error("accrete::dist_object: id (team " + std::to_string(k.team) + ", object " + std::to_string(k.object) +
                ") registered twice");
  auto& made = s.made[k.team];
  made = std::max(made, k.object + 1);
  if (auto w = s.waiters.find(k); w != s.waiters.end()) {
    // At user-level progress, and only if the object still exists then.
    defer([k, fs = std::move(w->second)] {
      if (void* obj = dist_find(k))
        for (auto& f : fs) f(obj);
    });
    s.waiters.erase(w);
  }
  auto it = s.parked.find(k);
  if (it == s.parked.end()) return;
  std::vector<parked_msg> msgs = std::move(it->second);
  s.parked.erase(it);
  s.parked_count -= msgs.size();
  for (auto& m : msgs)
    defer([m = std::move(m)] { m.handler(m.source, std::span<const std::byte>(m.message).subspan(am_header_bytes)); });
}

void dist_remove(const dist_key& k) noexcept {
  backend_guard g;
  auto& s = rs();
  s.objects.erase(k);
  if (s.last_key == k) s.last_obj = nullptr;
}

void dist_move(const dist_key& k, void* obj) noexcept {
  backend_guard g;
  auto& s = rs();
  if (auto it = s.objects.find(k); it != s.objects.end()) it->second = obj;
  if (s.last_key == k && s.last_obj) s.last_obj = obj;
}

void* dist_find(const dist_key& k) noexcept {
  backend_guard g;
  auto& s = rs();
  if (s.last_obj && s.last_key == k) return s.last_obj;
  auto it = s.objects.find(k);
  if (it == s.objects.end()) return nullptr;
  s.last_key = k;
  s.last_obj = it->second;
  return it->second;
}

void dist_when(const dist_key& k, std::function<void(void*)> f, const char* who) {
  backend_guard g;
  auto& s = rs();
  if (void* obj = dist_find(k)) return f(obj);
  if (dist_gone(s, k))
    throw error(std::string("accrete::") + who + ": dist_object " + std::to_string(k.object) + " of team " +
                std::to_string(k.team) + " was destroyed on rank " + std::to_string(world_rank()) +
                " already; it will not be here again");
  s.waiters[k].push_back(std::move(f));
}

void rpc_park(const dist_key& k, am_handler h, int source, std::span<const std::byte> payload) {
  backend_guard g;
  // Constructed here already, so destroyed: it will never come back, and
  // parking the message would leave its sender waiting without a word.
  if (dist_gone(rs(), k))
    throw error("accrete::dist_object: an RPC from rank " + std::to_string(source) +
                " (a fetch or an rpc with a dist_object argument) names dist_object " + std::to_string(k.object) +
                " of team " + std::to_string(k.team) + ", which rank " + std::to_string(world_rank()) +
                " has destroyed already; destroy a dist_object only after every RPC for it has run (e.g. after a "
                "barrier that follows its last use)");
  parked_msg m{h, source, std::vector<std::byte>(am_header_bytes + payload.size())};
  if (!payload.empty()) std::memcpy(m.message.data() + am_header_bytes, payload.data(), payload.size());
  rs().parked[k].push_back(std::move(m));
  ++rs().parked_count;
}

std::size_t rpc_parked() noexcept {
  backend_guard g;
  return rs().parked_count;
}

void dist_registry_clear() noexcept {
  backend_guard g;
  auto& s = rs();
  s.objects.clear();
  s.last_obj = nullptr;
  s.parked.clear();
  s.parked_count = 0;
  s.made.clear();
  s.waiters.clear();
}

}  // namespace accrete::detail
