#pragma once
// Shared state behind accrete::future / accrete::promise (internal).
//
// Single-threaded by design: a state, and every future/promise handle that
// refers to it, belongs to the thread that created it. Reference counts and
// dependency counts are plain integers (no atomics, no locks).
//
// Layout of the machinery:
//  * state_base: intrusive refcount, dependency count (ready <=> deps == 0),
//    a list of callback_nodes to run when it becomes ready, and a type-erased
//    destroy function.
//  * When a state with callbacks becomes ready it is appended to a
//    thread-local FIFO "ready queue"; the outermost fulfilment on the thread
//    drains that queue iteratively. Callbacks that fulfil further states
//    (then-chains) therefore never recurse: a chain of any length runs in
//    constant stack depth.
//  * Destruction is iterative too (thread-local dead list), so dropping an
//    unfulfilled chain of any length does not recurse.
#include "accrete/detail/internal.hpp"
#include <cstdint>
#include <cstddef>
#include <exception>
#include <new>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

namespace accrete::detail {

struct state_base;

/// A callback registered on a non-ready state. `fn(self, src)` is called
/// exactly once: with the (now ready) state as `src` to run it, or with
/// `src == nullptr` to discard it (the state died unfulfilled). In both cases
/// `fn` is responsible for releasing whatever the node owns.
struct callback_node {
  callback_node* next = nullptr;
  void (*fn)(callback_node* self, state_base* src) = nullptr;
};

using destroy_fn_t = void (*)(state_base*) noexcept;

/// Small states (state<>, and state<T> of a few words) are recycled through
/// a per-thread free list instead of malloc and free: a promise<> made,
/// finalized and waited on costs 3-4 ns instead of 14-16, and right after a
/// kernel that streamed the caches it touches one line the thread owns
/// instead of malloc's code and bins (there, 1.6-2.0 us instead of 1.8-3.6,
/// most of it the kernel's stores draining, on this project's VM).
/// States belong to the thread that made them (above), so the list needs
/// no lock; a block freed on another thread joins that thread's list, which
/// is only memory. Trivial and constant-initialised like thread_queues; the
/// blocks are released when the thread exits (state_pool_reaper). Sanitizer
/// builds use malloc, so that a use after free is still caught.
struct state_pool {
  static constexpr std::size_t block_bytes = 64;
  static constexpr unsigned keep = 64;  // bounds what an idle thread holds
  void* head;
  unsigned count;
  bool armed;   // the thread-exit reaper is registered
  bool closed;  // the thread is exiting: free straight away
};
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool state_pool_enabled = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
inline constexpr bool state_pool_enabled = false;
#else
inline constexpr bool state_pool_enabled = true;
#endif
#else
inline constexpr bool state_pool_enabled = true;
#endif
#ifdef ACCRETE_SMPI
inline constinit state_pool tls_state_pool{};  // per simulated process (internal.hpp)
#else
inline constinit thread_local state_pool tls_state_pool{};
#endif

/// Frees the pooled blocks when its thread exits (constructed on the
/// thread's first return of a block, so threads that never pool pay nothing).
struct state_pool_reaper {
  ~state_pool_reaper() {
    state_pool& p = tls_state_pool;
    p.closed = true;
    while (void* b = p.head) {
      p.head = *static_cast<void**>(b);
      ::operator delete(b);
    }
    p.count = 0;
  }
};

inline void* state_pool_take(std::size_t n) {
  if constexpr (state_pool_enabled) {
    if (n <= state_pool::block_bytes) {
      state_pool& p = tls_state_pool;
      if (void* b = p.head) {
        p.head = *static_cast<void**>(b);
        --p.count;
        return b;
      }
      n = state_pool::block_bytes;  // any small state may reuse the block
    }
  }
  return ::operator new(n);
}

inline void state_pool_give(void* b, std::size_t n) noexcept {
  if constexpr (state_pool_enabled) {
    state_pool& p = tls_state_pool;
    if (n <= state_pool::block_bytes && p.count < state_pool::keep && !p.closed) {
      if (!p.armed) {
        ACCRETE_THREAD_LOCAL state_pool_reaper reaper;
        (void)&reaper;
        p.armed = true;
      }
      *static_cast<void**>(b) = p.head;
      p.head = b;
      ++p.count;
      return;
    }
  }
  ::operator delete(b);
}

struct state_base {
  callback_node* callbacks = nullptr;  // LIFO while pending, FIFO once queued
  state_base* link = nullptr;          // ready-queue link / dead-list link
  destroy_fn_t destroy;                // deletes the most-derived object
  std::intptr_t deps;                  // outstanding dependencies; ready <=> 0
  std::uint32_t refs = 1;              // intrusive reference count
  std::uint32_t promises = 0;          // refs held by promises (copies of a upcxx::promise share)
  bool taken = false;                  // values were moved out

  state_base(std::intptr_t d, destroy_fn_t df) noexcept : destroy(df), deps(d) {}
  state_base(const state_base&) = delete;
  state_base& operator=(const state_base&) = delete;

  static void* operator new(std::size_t n) { return state_pool_take(n); }
  static void operator delete(void* b, std::size_t n) noexcept { state_pool_give(b, n); }
  // Over-aligned states bypass the pool (its blocks are only new-aligned).
  static void* operator new(std::size_t n, std::align_val_t a) { return ::operator new(n, a); }
  static void operator delete(void* b, std::size_t, std::align_val_t a) noexcept { ::operator delete(b, a); }

  bool ready() const noexcept { return deps == 0; }
  void push_callback(callback_node* n) noexcept {
    n->next = callbacks;
    callbacks = n;
  }
};

/// Per-thread bookkeeping. Trivial and constant-initialised, so access needs
/// no TLS init guard.
struct thread_queues {
  state_base* ready_head;
  state_base* ready_tail;
  state_base* dead;
  bool draining;
  bool destroying;
};
#ifdef ACCRETE_SMPI
inline constinit thread_queues tls_queues{};  // per simulated process (internal.hpp)
#else
inline constinit thread_local thread_queues tls_queues{};
#endif

inline void destroy_now(state_base* s) noexcept {
  thread_queues& q = tls_queues;
  if (q.destroying) {  // nested: defer to the outer loop (no recursion)
    s->link = q.dead;
    q.dead = s;
    return;
  }
  q.destroying = true;
  for (;;) {
    s->destroy(s);
    s = q.dead;
    if (!s) break;
    q.dead = s->link;
  }
  q.destroying = false;
}

inline void add_ref(state_base* s) noexcept { ++s->refs; }
inline void release(state_base* s) noexcept {
  if (--s->refs == 0) destroy_now(s);
}

/// Discards every pending callback of a dying state.
inline void discard_callbacks(state_base* s) noexcept {
  callback_node* c = s->callbacks;
  s->callbacks = nullptr;
  while (c) {
    callback_node* n = c->next;
    c->fn(c, nullptr);
    c = n;
  }
}

template <class Derived>
void destroy_as(state_base* s) noexcept {
  discard_callbacks(s);
  delete static_cast<Derived*>(s);
}

/// Runs queued callbacks until the ready queue is empty. Every callback runs
/// even if an earlier one throws; the first exception is rethrown at the end
/// (later ones are dropped).
inline void drain_ready_queue() {
  thread_queues& q = tls_queues;
  q.draining = true;
  std::exception_ptr err;
  while (state_base* s = q.ready_head) {
    callback_node* cb = s->callbacks;
    s->callbacks = cb->next;
    const bool last = s->callbacks == nullptr;
    if (last) {  // dequeue now; the queue's reference is dropped after the run
      q.ready_head = s->link;
      if (!q.ready_head) q.ready_tail = nullptr;
      s->link = nullptr;
    }
    try {
      cb->fn(cb, s);
    } catch (...) {
      if (!err) err = std::current_exception();
    }
    if (last) release(s);
  }
  q.draining = false;
  if (err) std::rethrow_exception(err);
}

/// Call right after `s->deps` dropped to 0. Runs s's callbacks (and everything
/// they make ready) before returning, unless called from inside a callback,
/// in which case they run after that callback returns.
inline void on_ready(state_base* s) {
  callback_node* c = s->callbacks;
  if (!c) return;                 // fast path: nobody is waiting
  callback_node* fifo = nullptr;  // reverse LIFO registration order
  while (c) {
    callback_node* n = c->next;
    c->next = fifo;
    fifo = c;
    c = n;
  }
  s->callbacks = fifo;
  add_ref(s);  // the queue's reference
  s->link = nullptr;
  thread_queues& q = tls_queues;
  if (q.ready_tail)
    q.ready_tail->link = s;
  else
    q.ready_head = s;
  q.ready_tail = s;
  if (!q.draining) drain_ready_queue();
}

/// Storage for a state's values; empty for state<>.
template <class... T>
struct value_slot {
  std::optional<std::tuple<T...>> v;
  bool has() const noexcept { return v.has_value(); }
};
template <>
struct value_slot<> {
  static constexpr bool has() noexcept { return true; }
};

struct ready_tag {};

/// Shared state carrying values T... once ready.
template <class... T>
struct state : state_base {
  using tuple_type = std::tuple<T...>;
  static constexpr bool is_empty = sizeof...(T) == 0;

  [[no_unique_address]] value_slot<T...> slot;

  explicit state(std::intptr_t d, destroy_fn_t df = &destroy_as<state>) noexcept : state_base(d, df) {}
  template <class... U>
  explicit state(ready_tag, U&&... v) : state_base(0, &destroy_as<state>) {
    if constexpr (!is_empty) slot.v.emplace(std::forward<U>(v)...);
  }

  bool has_value() const noexcept { return slot.has(); }
  const tuple_type& value() const noexcept requires(!is_empty) { return *slot.v; }
  tuple_type& value() noexcept requires(!is_empty) { return *slot.v; }
  /// Stores the values (no readiness change). Exactly once.
  template <class... U>
  void set_value(U&&... v) {
    if constexpr (!is_empty) slot.v.emplace(std::forward<U>(v)...);
  }
  void set_tuple(tuple_type&& t) {
    if constexpr (!is_empty) slot.v.emplace(std::move(t));
  }
  void set_tuple(const tuple_type& t) {
    if constexpr (!is_empty) slot.v.emplace(t);
  }
  /// True (and marks the values as taken) when the caller's one reference is
  /// the only one that can still read the values — a promise's reference
  /// cannot — so they may be moved out instead of copied.
  bool claim_values() noexcept {
    if (refs - promises == 1 && callbacks == nullptr) {
      taken = true;
      return true;
    }
    return false;
  }
  /// Marks ready (deps -> 0) and runs/queues callbacks.
  void make_ready() {
    deps = 0;
    on_ready(this);
  }
};

}  // namespace accrete::detail
