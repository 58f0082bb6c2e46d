#pragma once
// Non-template half of RPC and dist_object (defined in src/rpc.cpp).
#include "accrete/detail/internal.hpp"
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>

#include "accrete/detail/backend.hpp"
#include "accrete/detail/future_state.hpp"
#include "accrete/serialization.hpp"

namespace accrete {
class team;

namespace detail {

// ---- callables ----------------------------------------------------------------

/// Function pointers travel as their distance from this symbol (the same in
/// every process of one executable, whatever the load address).
void rpc_fn_base() noexcept;

template <class F>
inline constexpr bool is_function_pointer_v = std::is_pointer_v<F>&& std::is_function_v<std::remove_pointer_t<F>>;

/// The offset of a function to call remotely. Throws accrete::error unless
/// it lies in the code of the object that holds accrete's runtime (the
/// program itself, when accrete is linked statically): a function of
/// another object (libc's abs, a plugin) is loaded at a different address
/// in every process.
std::intptr_t fn_offset_checked(std::intptr_t address);
/// The address of a received offset; throws accrete::error naming the
/// offset unless it lies in that same code. (A forged offset inside the
/// program's code cannot be told from a real function: the check keeps a
/// message from sending a process outside its own code.)
std::intptr_t fn_address_checked(std::intptr_t offset, int source);

template <class F>
std::intptr_t fn_to_offset(F f) {
  return fn_offset_checked(reinterpret_cast<std::intptr_t>(f));
}
template <class F>
F fn_from_offset(std::intptr_t off, int source) {
  return reinterpret_cast<F>(fn_address_checked(off, source));
}

// ---- replies --------------------------------------------------------------------

/// An origin-side slot waiting for one reply.
struct reply_base {
  virtual ~reply_base() = default;
  /// Reads the reply's values (after its id) and fulfils the promise.
  virtual void deliver(reader& r) = 0;
  // One per RPC and a few words: from the per-thread pool of future states.
  static void* operator new(std::size_t n) { return state_pool_take(n); }
  static void operator delete(void* p, std::size_t n) noexcept { state_pool_give(p, n); }
};

/// Registers `slot` and returns the id the target echoes back.
std::uint64_t reply_register(std::unique_ptr<reply_base> slot);
/// Handler of reply messages: [id][values...] (user-level).
void rpc_reply_handler(int source, std::span<const std::byte> payload);
/// Number of replies still awaited (for tests and quiescence checks).
std::size_t replies_pending() noexcept;

// ---- dist_object registry -----------------------------------------------------------

/// A dist_object's identity, equal on every member of its team.
struct dist_key {
  std::uint64_t team = 0;
  std::uint64_t object = 0;
  friend bool operator==(const dist_key&, const dist_key&) = default;
  friend auto operator<=>(const dist_key&, const dist_key&) = default;
};

/// Collective over `t` (one non-blocking allreduce the first time a team
/// is used, nothing afterwards): the next key in construction order.
dist_key dist_next_key(const team& t);
/// Registers the local instance of `k`, then replays (deferred to the next
/// user-level progress) the messages that arrived for it early.
void dist_add(const dist_key& k, void* obj);
void dist_remove(const dist_key& k) noexcept;
/// The local instance of `k` moved to `obj` (dist_object's moves).
void dist_move(const dist_key& k, void* obj) noexcept;
/// The local instance of `k`, or nullptr if not (yet) constructed.
void* dist_find(const dist_key& k) noexcept;
/// Keeps a copy of a message that needs `k` before it can run; `h` is run
/// again with it once `k` is registered.
void rpc_park(const dist_key& k, am_handler h, int source, std::span<const std::byte> payload);
/// Runs `f(instance)` once the local instance of `k` exists: now if it
/// does, else at the user-level progress after its construction. Throws
/// accrete::error (naming `who`) if this process has destroyed it already.
void dist_when(const dist_key& k, std::function<void(void*)> f, const char* who);
/// Messages currently waiting for a dist_object (tests).
std::size_t rpc_parked() noexcept;
/// Forgets every dist_object and parked message (finalize: the next
/// runtime numbers its objects anew).
void dist_registry_clear() noexcept;

// ---- argument adaptation -----------------------------------------------------------

/// How a deserialized RPC argument of type D reaches the callable: pass(d)
/// yields what is passed (default: an rvalue), missing(d) names a dist_object
/// that must exist first (default: none). Specialised by dist_object.
template <class D>
struct rpc_arg {
  static D&& pass(D& d) noexcept { return std::move(d); }
  static std::optional<dist_key> missing(const D&) noexcept { return std::nullopt; }
};

}  // namespace detail
}  // namespace accrete
