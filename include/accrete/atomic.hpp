#pragma once
/// \file
// Remote atomics on global pointers.
//
// atomic_domain<T> (T = any integer type of 32 or 64 bits other than bool,
// such as int32_t, uint64_t, long long or size_t; float, double) performs atomic read-modify-write operations on
// objects of type T in any process's segment with MPI atomics (MPI_Fetch_and_op, MPI_Compare_and_swap, MPI_Accumulate)
// on one window over all segments, so operations of all domains are atomic with respect to each other wherever they
// come from — but not with respect to rput/rget or direct load/store of the same object. compare_exchange on
// float/double compares bit patterns. float/double operations all work on the bits (unsigned integers of the same
// width): add, mul, min and max are compare-and-swap loops, at least two round trips, each retry issued at the caller's
// user-level progress (any wait() makes it); one caller's float operations on one object go one at a time, each
// starting from the value the one before it left. mul on integers is MPI_PROD. Where Open MPI 4's osc/rdma serves the
// window (the program initialized MPI with it in, and the world spans nodes), the operations that are 64-bit
// compare-and-swaps throw accrete::error naming the remedy: osc/rdma crashes on them (docs/semantics.md).
//
// Completion: each call issues its operation and returns; the operation
// completes at the target during a later internal progress (which flushes
// every target with outstanding operations once), and the returned future
// becomes ready, or the promise passed is fulfilled, at the user-level
// progress after that (any wait() does both). A flood of operations thus
// costs one MPI call each and a flush per target per progress call, not a
// flush per operation. Operations in flight together are not ordered with
// respect to each other (wait for one before issuing one that must see it);
// once an operation is complete, every later one sees it. The memory_order
// arguments are accepted for UPC++ compatibility.
//
// Progress: no user-level progress is made inside these calls.
//
// Construction and destroy() are collective over the domain's team (they
// communicate nothing, so a member that skips them does not hang the
// others); the destructor calls destroy() if it was not called. An empty
// team, or an operation on a destroyed domain, throws accrete::error. A bad
// pointer (null, out of its segment, misaligned, or on a process outside
// the domain's team) throws bad_global_ptr.
//
// Thread-safety: call from the thread that drives the runtime.
// Lets this header include accrete/detail/ headers (see detail/internal.hpp).
#ifndef ACCRETE_PUBLIC_INCLUDE
#define ACCRETE_PUBLIC_INCLUDE
#define ACCRETE_PUBLIC_INCLUDE_ATOMIC
#endif

#include <atomic>
#include <cstdint>
#include <string>
#include <type_traits>

#include "accrete/detail/backend.hpp"
#include "accrete/detail/backend_atomics.hpp"
#include "accrete/error.hpp"
#include "accrete/future.hpp"
#include "accrete/global_ptr.hpp"
#include "accrete/promise.hpp"
#include "accrete/rma.hpp"
#include "accrete/team.hpp"

#ifdef ACCRETE_PUBLIC_INCLUDE_ATOMIC
#undef ACCRETE_PUBLIC_INCLUDE
#undef ACCRETE_PUBLIC_INCLUDE_ATOMIC
#endif

namespace accrete {

namespace detail {
// Integers go by width and signedness (int64_t, long long and, on LP64,
// long are one MPI type), as UPC++ takes any 32- or 64-bit integer type.
template <class T>
inline constexpr bool atomic_supported = (std::is_integral_v<T> && !std::is_same_v<T, bool> &&
                                          (sizeof(T) == 4 || sizeof(T) == 8)) ||
                                         std::is_same_v<T, float> || std::is_same_v<T, double>;
}  // namespace detail

/// Tag: constructs an inactive atomic_domain.
struct inactive_t {
  explicit inactive_t() = default;
};
/// The tag's value.
inline constexpr inactive_t inactive{};

/// Atomic read-modify-write operations on objects of type T in shared
/// segments, atomic with respect to every other operation of any domain of
/// the same T (see the header comment for the guarantees and the MPIs).
template <class T>
class atomic_domain {
  static_assert(detail::atomic_supported<T>,
                "accrete::atomic_domain<T>: T must be an integer type of 32 or 64 bits (not bool), float or double");

 public:
  /// Collective over `t` (see the header comment).
  explicit atomic_domain(const team& t = world()) : team_(&t) {
    if (!t.is_active())
      throw error("accrete::atomic_domain: the team is empty (default-constructed, moved from or destroyed)");
    detail::atomics_acquire();
  }
  /// An inactive domain, as if destroyed (not collective; for UPC++'s
  /// default-constructed atomic_domain).
  explicit atomic_domain(inactive_t) noexcept : team_(nullptr), live_(false) {}
  /// Moves take the domain; the source is left inactive. Assigning onto a
  /// live domain throws accrete::error (destroy() it first: that is
  /// collective); assigning a domain to itself changes nothing.
  ///@{
  atomic_domain(atomic_domain&& o) noexcept : team_(o.team_), live_(o.live_) { o.live_ = false; }
  atomic_domain& operator=(atomic_domain&& o) {
    if (this == &o) return *this;
    if (live_)
      throw error("accrete::atomic_domain: move assignment onto a live domain (destroy() it first, collectively)");
    team_ = o.team_;
    live_ = o.live_;
    o.live_ = false;
    return *this;
  }
  ///@}
  atomic_domain(const atomic_domain&) = delete;
  atomic_domain& operator=(const atomic_domain&) = delete;
  ~atomic_domain() { destroy(); }
  /// Whether the domain can perform operations (constructed, not destroyed
  /// or moved from).
  bool is_active() const noexcept { return live_; }

  /// Collective: releases the domain. Idempotent.
  void destroy() {
    if (live_) detail::atomics_release();
    live_ = false;
  }

  // fetch_X returns the previous value. The memory order is accepted for
  // UPC++ compatibility (see the header comment).
  /// Memory order argument (accepted, not needed: see the header comment).
  using order = std::memory_order;
  /// The default order.
  static constexpr order seq = std::memory_order_seq_cst;

  /// The value at p.
  future<T> load(global_ptr<T> p, order = seq) { return fetch(p, op::no_op, T{}, "load"); }
  /// Sets the value at p (store), also returning the previous one (exchange).
  ///@{
  future<> store(global_ptr<T> p, T v, order = seq) { return apply(p, op::replace, v, "store"); }
  void store(global_ptr<T> p, T v, promise<>& done, order = seq) { apply(p, op::replace, v, done, "store"); }
  future<T> exchange(global_ptr<T> p, T v, order = seq) { return fetch(p, op::replace, v, "exchange"); }
  ///@}
  /// Adds v. The promise forms register one anonymous dependency on `done`
  /// and fulfil it at completion: a flood of them costs no allocation.
  ///@{
  future<T> fetch_add(global_ptr<T> p, T v, order = seq) { return fetch(p, op::add, v, "fetch_add"); }
  future<> add(global_ptr<T> p, T v, order = seq) { return apply(p, op::add, v, "add"); }
  void add(global_ptr<T> p, T v, promise<>& done, order = seq) { apply(p, op::add, v, done, "add"); }
  ///@}
  /// Subtracts v (wrapping for unsigned T).
  ///@{
  future<T> fetch_sub(global_ptr<T> p, T v, order = seq) { return fetch(p, op::add, negate(v), "fetch_sub"); }
  future<> sub(global_ptr<T> p, T v, order = seq) { return apply(p, op::add, negate(v), "sub"); }
  void sub(global_ptr<T> p, T v, promise<>& done, order = seq) { apply(p, op::add, negate(v), done, "sub"); }
  ///@}
  /// Multiplies by v (wrapping for unsigned T; on float and double a
  /// compare-and-swap loop, as add).
  ///@{
  future<T> fetch_mul(global_ptr<T> p, T v, order = seq) { return fetch(p, op::mul, v, "fetch_mul"); }
  future<> mul(global_ptr<T> p, T v, order = seq) { return apply(p, op::mul, v, "mul"); }
  void mul(global_ptr<T> p, T v, promise<>& done, order = seq) { apply(p, op::mul, v, done, "mul"); }
  ///@}
  /// Sets the value to min(old, v) or max(old, v).
  ///@{
  future<T> fetch_min(global_ptr<T> p, T v, order = seq) { return fetch(p, op::min, v, "fetch_min"); }
  future<> min(global_ptr<T> p, T v, order = seq) { return apply(p, op::min, v, "min"); }
  future<T> fetch_max(global_ptr<T> p, T v, order = seq) { return fetch(p, op::max, v, "fetch_max"); }
  future<> max(global_ptr<T> p, T v, order = seq) { return apply(p, op::max, v, "max"); }
  ///@}
  /// Bitwise and/or/xor (integer T only); fetch_ returns the previous value.
  ///@{
  future<T> fetch_bit_and(global_ptr<T> p, T v, order = seq) requires std::is_integral_v<T> {
    return fetch(p, op::band, v, "fetch_bit_and");
  }
  future<T> fetch_bit_or(global_ptr<T> p, T v, order = seq) requires std::is_integral_v<T> {
    return fetch(p, op::bor, v, "fetch_bit_or");
  }
  future<T> fetch_bit_xor(global_ptr<T> p, T v, order = seq) requires std::is_integral_v<T> {
    return fetch(p, op::bxor, v, "fetch_bit_xor");
  }
  future<> bit_and(global_ptr<T> p, T v, order = seq) requires std::is_integral_v<T> {
    return apply(p, op::band, v, "bit_and");
  }
  future<> bit_or(global_ptr<T> p, T v, order = seq) requires std::is_integral_v<T> {
    return apply(p, op::bor, v, "bit_or");
  }
  future<> bit_xor(global_ptr<T> p, T v, order = seq) requires std::is_integral_v<T> {
    return apply(p, op::bxor, v, "bit_xor");
  }
  ///@}
  /// If the value at p equals `expected`, sets it to `desired`. Returns the
  /// previous value (equal to `expected` exactly when the swap happened).
  future<T> compare_exchange(global_ptr<T> p, T expected, T desired, order = seq) {
    check(p, "compare_exchange", op::replace, true);
    auto* r = new fetched;
    future<T> f = r->done.get_future();
    detail::atomic_compare_swap(p.where(), p.offset(), detail::scalar_type_of<T>(), &expected, &desired, &r->old,
                                [r] { r->finish(); });
    return f;
  }

  /// The team the domain was made over.
  const team& get_team() const noexcept { return *team_; }

 private:
  using op = detail::atomic_op;
  // A fetching operation's result: MPI writes `old` at completion, then
  // finish() hands it to the future and frees this.
  struct fetched {
    T old{};
    promise<T> done{0};
    void finish() {
      done.fulfill_result(old);
      delete this;
    }
  };
  static T negate(T v) {
    if constexpr (std::is_unsigned_v<T>)
      return T(T(0) - v);
    else
      return -v;
  }
  void check(global_ptr<T> p, const char* what, detail::atomic_op o, bool compare_swap = false) const {
    if (!live_)
      throw error(std::string("accrete::atomic_domain::") + what +
                  ": the domain is not active (destroyed, moved from or default-constructed)");
    if (p.is_null()) throw bad_global_ptr(std::string("accrete::atomic_domain::") + what + ": null pointer");
    detail::check_range(what, p.where(), p.offset(), sizeof(T));
    if (team_ != &world() && team_->from_world(p.where()) < 0)
      throw bad_global_ptr(std::string("accrete::atomic_domain::") + what + ": rank " + std::to_string(p.where()) +
                           " is not a member of the domain's team");
    if (p.offset() % sizeof(T) != 0)
      throw bad_global_ptr(std::string("accrete::atomic_domain::") + what + ": offset " + std::to_string(p.offset()) +
                           " is not aligned to " + std::to_string(sizeof(T)) + " bytes");
    detail::atomic_check(detail::scalar_type_of<T>(), o, compare_swap);
  }
  future<T> fetch(global_ptr<T> p, detail::atomic_op o, T v, const char* what) {
    check(p, what, o);
    auto* r = new fetched;
    future<T> f = r->done.get_future();
    detail::atomic_fetch_op(p.where(), p.offset(), detail::scalar_type_of<T>(), o, &v, &r->old, [r] { r->finish(); });
    return f;
  }
  future<> apply(global_ptr<T> p, detail::atomic_op o, T v, const char* what) {
    check(p, what, o);
    auto [f, s] = detail::pending_op();
    detail::atomic_accumulate(p.where(), p.offset(), detail::scalar_type_of<T>(), o, &v, s);
    return f;
  }
  void apply(global_ptr<T> p, detail::atomic_op o, T v, promise<>& done, const char* what) {
    check(p, what, o);
    done.require_anonymous(1);
    detail::atomic_accumulate(p.where(), p.offset(), detail::scalar_type_of<T>(), o, &v,
                              detail::promise_access::state(done));
  }

  const team* team_;
  bool live_ = true;
};

}  // namespace accrete
