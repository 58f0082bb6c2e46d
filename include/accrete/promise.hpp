#pragma once
/// \file
// accrete::promise<T...> — the producer side of a future (UPC++ semantics).
//
// Thread-safety: none by design; a promise and its future belong to the
// thread that created them.
//
// Completion: a promise has a dependency count, initially `dependency_count`
// (default 1). Its future becomes ready when the count is 0 and — if T... is
// non-empty — the values have been supplied with fulfill_result(). (Unlike
// some UPC++ versions, fulfill_result() does not change the count; supplying
// the values after the count reached 0 is allowed and then readies the future.)
// finalize() == fulfill_anonymous(1) + get_future().
//
// Progress: no member makes progress. The fulfilling call (fulfill_result,
// fulfill_anonymous, finalize) runs the callbacks of everything that becomes
// ready before returning (iteratively — chains of any length use constant
// stack); the runtime only fulfils at user-level progress points. If such a
// callback throws, the remaining callbacks still run and the first exception
// propagates from the outermost fulfilling call on this thread.
//
// Misuse (negative counts, fulfilling below zero, supplying values twice,
// require_anonymous on a ready promise, finalize twice, using a moved-from
// promise) throws std::logic_error.
// Lets this header include accrete/detail/ headers (see detail/internal.hpp).
#ifndef ACCRETE_PUBLIC_INCLUDE
#define ACCRETE_PUBLIC_INCLUDE
#define ACCRETE_PUBLIC_INCLUDE_PROMISE
#endif

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "accrete/detail/future_state.hpp"
#include "accrete/future.hpp"

#ifdef ACCRETE_PUBLIC_INCLUDE_PROMISE
#undef ACCRETE_PUBLIC_INCLUDE
#undef ACCRETE_PUBLIC_INCLUDE_PROMISE
#endif

namespace accrete {

namespace detail {
struct promise_access;
}

/// The producer side of a future<T...>: counts dependencies (anonymous
/// ones, and the result for non-empty T...) and makes its future ready when
/// the last is fulfilled and the promise finalized (UPC++'s promise).
template <class... T>
class promise {
 public:
  /// Whether this is promise<> (dependencies only, no values).
  static constexpr bool is_empty = sizeof...(T) == 0;

  /// A promise with `dependency_count` anonymous dependencies (>= 0).
  explicit promise(std::intptr_t dependency_count = 1)
      : s_(new detail::state<T...>(checked_count(dependency_count) + (is_empty ? 0 : 1))) {
    s_->promises = 1;
  }
  promise(const promise&) = delete;
  promise& operator=(const promise&) = delete;
  /// Moves take the state; the moved-from promise may only be destroyed
  /// or assigned to.
  ///@{
  promise(promise&& o) noexcept
      : s_(std::exchange(o.s_, nullptr)), finalized_(o.finalized_), result_given_(o.result_given_) {}
  promise& operator=(promise&& o) noexcept {
    if (this != &o) {
      if (s_) drop();
      s_ = std::exchange(o.s_, nullptr);
      finalized_ = o.finalized_;
      result_given_ = o.result_given_;
    }
    return *this;
  }
  ///@}

  /// Dropping an unfulfilled promise leaves its futures forever non-ready.
  ~promise() {
    if (s_) drop();
  }

 protected:
  /// Tag of the sharing constructor.
  struct share_t {};
  /// Another handle on `o`'s state (UPC++'s promise is a copyable handle;
  /// accrete's is not).
  promise(const promise& o, share_t) : s_(o.s_), finalized_(o.finalized_), result_given_(o.result_given_) {
    o.check("copy");
    detail::add_ref(s_);
    ++s_->promises;
  }

 public:

  /// The future associated with this promise (may be called any number of times).
  future<T...> get_future() const {
    check("get_future");
    if (s_->taken) detail::throw_logic("accrete::promise::get_future: the values were already moved out");
    detail::add_ref(s_);
    return detail::future_access::adopt(s_);
  }

  /// Supplies the values (once). Readies the future if the count is 0.
  template <class... U>
  void fulfill_result(U&&... values) {
    static_assert(sizeof...(U) == sizeof...(T), "fulfill_result: wrong number of values");
    check("fulfill_result");
    if constexpr (is_empty) {  // nothing to store; still once-only
      if (result_given_) detail::throw_logic("accrete::promise::fulfill_result: result already supplied");
      result_given_ = true;
    } else {
      if (s_->has_value()) detail::throw_logic("accrete::promise::fulfill_result: result already supplied");
      s_->set_value(std::forward<U>(values)...);
      if (--s_->deps == 0) detail::on_ready(s_);
    }
  }

  /// Adds `count` (>= 0) anonymous dependencies. The promise must not be ready.
  void require_anonymous(std::intptr_t count) {
    check("require_anonymous");
    if (count < 0) detail::throw_logic("accrete::promise::require_anonymous: negative count");
    if (s_->deps == 0) detail::throw_logic("accrete::promise::require_anonymous: promise is already ready");
    s_->deps += count;
  }

  /// Fulfils `count` (>= 0) anonymous dependencies; throws if fewer remain.
  void fulfill_anonymous(std::intptr_t count) {
    check("fulfill_anonymous");
    if (count < 0) detail::throw_logic("accrete::promise::fulfill_anonymous: negative count");
    if (count > anonymous_remaining())
      detail::throw_logic("accrete::promise::fulfill_anonymous: dependency count would drop below zero");
    if (count == 0) return;
    s_->deps -= count;
    if (s_->deps == 0) detail::on_ready(s_);
  }

  /// fulfill_anonymous(1), then get_future(). At most once per promise.
  future<T...> finalize() {
    check("finalize");
    if (finalized_) detail::throw_logic("accrete::promise::finalize: called twice");
    future<T...> f = get_future();  // taken first: the values stay readable through it
    fulfill_anonymous(1);
    finalized_ = true;
    return f;
  }

  /// Outstanding anonymous dependencies (not counting a missing result).
  std::intptr_t anonymous_remaining() const noexcept {
    if (!s_) return 0;
    if constexpr (is_empty)
      return s_->deps;
    else
      return s_->deps - (s_->has_value() ? 0 : 1);
  }

 private:
  friend struct detail::promise_access;
  void drop() noexcept {
    --s_->promises;
    detail::release(s_);
  }
  static std::intptr_t checked_count(std::intptr_t n) {
    if (n < 0) detail::throw_logic("accrete::promise: negative dependency count");
    return n;
  }
  void check(const char* what) const {
    if (!s_) [[unlikely]]
      throw std::logic_error(std::string("accrete::promise::") + what + ": moved-from promise");
  }

  detail::state<T...>* s_;
  bool finalized_ = false;
  bool result_given_ = false;  // promise<> only
};

namespace detail {
/// The shared state behind a promise, for completion by counting.
struct promise_access {
  template <class... T>
  static state_base* state(promise<T...>& p) noexcept {
    return p.s_;
  }
};
}  // namespace detail

}  // namespace accrete
