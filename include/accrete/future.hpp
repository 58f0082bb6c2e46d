#pragma once
/// \file
// accrete::future<T...> — UPC++-style futures.
//
// Thread-safety: none by design. A future (and its shared state, including
// every copy of the handle and every promise feeding it) belongs to the
// thread that created it; use it only from that thread.
//
// Completion: a future is ready once all its dependencies are fulfilled and
// (for non-empty T...) its values are stored. Callbacks attached with then()
// run when the state becomes ready, i.e. inside the fulfilling call
// (promise::fulfill_*), which the runtime only makes at user-level progress.
//
// Progress: only wait() makes progress (it calls accrete::progress()).
// ready(), result(), then() and when_all() never do.
//
// Callback order: callbacks registered on a non-ready future run in
// registration order, and dependents run after their source. then() on a
// ready future runs its callback immediately (eager). Callbacks scheduled by
// a fulfilment made inside a callback run after that callback returns (a
// per-thread FIFO is drained iteratively: arbitrarily long then-chains use
// constant stack, and so does dropping an unfulfilled chain).
//
// Exceptions: a callback that throws while being run by a fulfilment does
// not stop the others; the first exception propagates out of the outermost
// fulfilling call on this thread, and the future returned by that then()
// never becomes ready.
//
// Default construction (UPC++'s semantics): a future of any T..., future<>
// included, is an empty handle that never becomes ready; wait(), then() and
// when_all() on it throw std::logic_error instead of waiting forever. Seed a
// conjoining loop with make_future().
//
// Cost: future<> that is ready (make_future(), then() on a ready future<>
// with a void callback, when_all of ready future<>s) holds no state: no
// allocation, no refcount traffic. A pending then() costs
// one allocation (callback and result state share it); a pending when_all
// one allocation; copying a handle is a non-atomic increment.
// Lets this header include accrete/detail/ headers (see detail/internal.hpp).
#ifndef ACCRETE_PUBLIC_INCLUDE
#define ACCRETE_PUBLIC_INCLUDE
#define ACCRETE_PUBLIC_INCLUDE_FUTURE
#endif

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>

#include "accrete/detail/future_state.hpp"

#ifdef ACCRETE_PUBLIC_INCLUDE_FUTURE
#undef ACCRETE_PUBLIC_INCLUDE
#undef ACCRETE_PUBLIC_INCLUDE_FUTURE
#endif

namespace accrete {

/// User-level progress: polls the network and runs completions (defined by
/// the runtime).
void progress();

namespace detail {
/// Called between unsuccessful progress polls while waiting; spins, yields or
/// sleeps depending on how long (spins) we have been waiting (defined by the
/// runtime).
void idle_backoff(unsigned& spins) noexcept;
}  // namespace detail

template <class... T>
class future;

namespace detail {

template <class X>
struct is_future : std::false_type {};
template <class... T>
struct is_future<future<T...>> : std::true_type {};
template <class X>
inline constexpr bool is_future_v = is_future<std::remove_cvref_t<X>>::value;

/// future type produced by then() for a callback returning R.
template <class R>
struct then_future {
  using type = future<std::remove_cvref_t<R>>;
};
template <>
struct then_future<void> {
  using type = future<>;
};
template <class... U>
struct then_future<future<U...>> {
  using type = future<U...>;
};
template <class R>
using then_future_t = typename then_future<std::conditional_t<is_future_v<R>, std::remove_cvref_t<R>, R>>::type;

/// Concatenation of future value types (for when_all).
template <class... F>
struct future_cat;
template <>
struct future_cat<> {
  using type = future<>;
};
template <class... A>
struct future_cat<future<A...>> {
  using type = future<A...>;
};
template <class... A, class... B, class... Rest>
struct future_cat<future<A...>, future<B...>, Rest...> : future_cat<future<A..., B...>, Rest...> {};

/// What result<I>() / wait<I>() return.
template <int I, class... T>
struct result_type {
  using type = std::tuple_element_t<static_cast<std::size_t>(I), std::tuple<T...>>;
};
template <class... T>
struct result_type<-1, T...> {
  using type = std::tuple<T...>;
};
template <class T>
struct result_type<-1, T> {
  using type = T;
};
template <>
struct result_type<-1> {
  using type = void;
};

struct adopt_tag {};

/// Calls f with the values of s (as const lvalues).
template <class F, class... T>
decltype(auto) invoke_with_values(F&& f, const state<T...>* s) {
  if constexpr (sizeof...(T) == 0)
    return std::invoke(std::forward<F>(f));
  else
    return std::apply(std::forward<F>(f), s->value());
}

struct future_access;

template <class Fn, class Src, class Out>
struct then_state;
template <class Out, class... Futs>
struct when_all_state;

[[noreturn]] inline void throw_logic(const char* msg) { throw std::logic_error(msg); }

/// Moves `x` out when allowed, else copies it. For move-only types a copy is
/// impossible: that throws std::logic_error (the values are shared).
template <class X>
X take(X& x, bool may_move) {
  if constexpr (std::is_copy_constructible_v<X>) {
    if (may_move) return std::move(x);
    return x;
  } else {
    if (!may_move) throw_logic("accrete::future: move-only value is shared by several consumers and cannot be copied");
    return std::move(x);
  }
}

}  // namespace detail

/// A handle to a (possibly not yet available) tuple of values T...; T... may
/// be empty (future<>: pure completion). Cheap to copy (refcounted). A ready
/// future<> needs no allocation at all (make_future()). A default-constructed
/// future is an empty handle, as in UPC++: never ready; wait(), then(),
/// result() and when_all() on it throw std::logic_error. Moved-from futures
/// may only be assigned to or destroyed.
template <class... T>
class future {
 public:
  /// The values as one tuple.
  using results_type = std::tuple<T...>;
  /// Whether this is future<> (completion only).
  static constexpr bool is_empty = sizeof...(T) == 0;

  /// An empty handle: never ready (UPC++: "a future that will never become
  /// ready"); only assigning to it is useful.
  future() noexcept = default;
  /// Copies share the state (a reference count); moves take it.
  ///@{
  future(const future& o) noexcept : s_(o.s_) {
    if (counted(s_)) detail::add_ref(s_);
  }
  future(future&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  future& operator=(const future& o) noexcept {
    if (counted(o.s_)) detail::add_ref(o.s_);
    reset(o.s_);
    return *this;
  }
  future& operator=(future&& o) noexcept {
    if (this != &o) reset(std::exchange(o.s_, nullptr));
    return *this;
  }
  ///@}
  ~future() {
    if (counted(s_)) detail::release(s_);
  }

  /// True once the values are available. Never makes progress.
  bool ready() const noexcept {
    if constexpr (is_empty)
      if (s_ == ready_mark()) return true;
    return s_ && s_->deps == 0;
  }
  /// The same as ready() (the UPC++ v1.0 name, spec section 4.3).
  bool is_ready() const noexcept { return ready(); }

  /// The values of a ready future: void for future<>, T for future<T>,
  /// std::tuple<T...> otherwise; with I >= 0, the I-th value. Copies, except
  /// on an rvalue future that is the only handle able to read them (a live
  /// promise does not count): then moves (this is how move-only values come
  /// out). Throws std::logic_error if not ready, or if a move-only value
  /// would have to be copied.
  ///@{
  template <int I = -1>
  typename detail::result_type<I, T...>::type result() const& {
    check_ready("accrete::future::result: future is not ready");
    return extract<I>(false);
  }
  template <int I = -1>
  typename detail::result_type<I, T...>::type result() && {
    check_ready("accrete::future::result: future is not ready");
    return extract<I>(!is_empty && s_ && s_->claim_values());
  }
  ///@}
  /// All values as a tuple (requires ready; throws std::logic_error).
  ///@{
  results_type result_tuple() const& {
    check_ready("accrete::future::result_tuple: future is not ready");
    if constexpr (is_empty)
      return {};
    else
      return s_->value();
  }
  results_type result_tuple() && {
    check_ready("accrete::future::result_tuple: future is not ready");
    if constexpr (is_empty)
      return {};
    else
      return detail::take(s_->value(), s_->claim_values());
  }
  ///@}

  /// All values as a tuple, as result_tuple() (the UPC++ v1.0 name).
  results_type results() const { return result_tuple(); }

  /// The values of a ready future by const reference (no copy; valid while
  /// a handle to this state lives), shaped as result(): with I >= 0 the
  /// I-th value; with the default I = -1 nothing for future<>, the value
  /// for future<T>, std::tuple<const T&...> otherwise (UPC++'s
  /// result_reference). A value of reference type U& comes back as U&.
  /// Throws std::logic_error if not ready.
  template <int I = -1>
  decltype(auto) result_reference() const {
    check_ready("accrete::future::result_reference: future is not ready");
    return reference_at<I>();
  }

  /// wait(), then the values as a tuple, or by reference as
  /// result_reference<I>() gives them.
  ///@{
  results_type wait_tuple() const {
    wait_ready();
    return result_tuple();
  }
  template <int I = -1>
  decltype(auto) wait_reference() const {
    wait_ready();
    return reference_at<I>();
  }
  ///@}

  /// Makes user-level progress (accrete::progress()) until ready, then
  /// returns result<I>(). Callbacks of this and other futures may run inside.
  ///@{
  template <int I = -1>
  typename detail::result_type<I, T...>::type wait() const& {
    wait_ready();
    return extract<I>(false);
  }
  template <int I = -1>
  typename detail::result_type<I, T...>::type wait() && {
    wait_ready();
    return extract<I>(!is_empty && s_ && s_->claim_values());
  }
  ///@}

  /// Returns a future of f(values...) (f gets the values as const lvalues).
  /// If f returns void the result is future<>; if it returns future<U...> the
  /// result is flattened to future<U...>; otherwise future<decay_t<R>>.
  /// Eager: if this future is ready, f runs immediately inside then().
  /// Otherwise f runs when this future becomes ready (inside the fulfilling
  /// call). If f throws when run eagerly the exception propagates from
  /// then(); when run later it propagates from the fulfilling call and the
  /// returned future never becomes ready. One allocation if not ready; none
  /// if ready and f returns void or a future.
  template <class F>
  detail::then_future_t<std::invoke_result_t<std::decay_t<F>, const T&...>> then(F&& f) const;

 private:
  friend struct detail::future_access;
  using state_type = detail::state<T...>;

  future(state_type* s, detail::adopt_tag) noexcept : s_(s) {}

  // A ready future<> holds this mark instead of a state; no state lives at
  // its address (nothing is allocated below 4 KiB), and it is never
  // dereferenced or counted.
  static state_type* ready_mark() noexcept {
    if constexpr (is_empty)
      return reinterpret_cast<state_type*>(std::uintptr_t(alignof(state_type)));
    else
      return nullptr;
  }
  static bool counted(state_type* s) noexcept { return s && s != ready_mark(); }

  void reset(state_type* s) noexcept {
    state_type* old = std::exchange(s_, s);
    if (counted(old)) detail::release(old);
  }
  void check_ready(const char* msg) const {
    if (!ready()) detail::throw_logic(msg);
  }
  void wait_ready() const {
    if (!s_) detail::throw_logic("accrete::future::wait: empty (default-constructed or moved-from) future");
    unsigned spins = 0;
    while (!ready()) {
      accrete::progress();
      if (!ready()) detail::idle_backoff(spins);
    }
  }
  // What result_reference<I>() returns: const references into the state
  // (a U& value stays U&: const applies to the reference, not the object).
  template <int I>
  decltype(auto) reference_at() const {
    if constexpr (I >= 0) {
      static_assert(I < static_cast<int>(sizeof...(T)), "result index out of range");
      return static_cast<const std::tuple_element_t<std::size_t(I), results_type>&>(std::get<I>(s_->value()));
    } else if constexpr (is_empty) {
      return;
    } else if constexpr (sizeof...(T) == 1) {
      return static_cast<const std::tuple_element_t<0, results_type>&>(std::get<0>(s_->value()));
    } else {
      return std::apply([](T&... v) { return std::tuple<const T&...>(v...); }, s_->value());
    }
  }
  template <int I>
  typename detail::result_type<I, T...>::type extract(bool may_move) const {
    if constexpr (I >= 0) {
      static_assert(I < static_cast<int>(sizeof...(T)), "result index out of range");
      if constexpr (std::is_reference_v<std::tuple_element_t<std::size_t(I), results_type>>)
        return std::get<I>(s_->value());  // a future<U&> hands out the reference it holds
      else
        return detail::take(std::get<I>(s_->value()), may_move);
    } else if constexpr (is_empty) {
      (void)may_move;
    } else if constexpr (sizeof...(T) == 1) {
      if constexpr (std::is_reference_v<std::tuple_element_t<0, results_type>>)
        return std::get<0>(s_->value());
      else
        return detail::take(std::get<0>(s_->value()), may_move);
    } else {
      return detail::take(s_->value(), may_move);
    }
  }

  state_type* s_ = nullptr;
};

namespace detail {

struct future_access {
  template <class... T>
  static future<T...> adopt(state<T...>* s) noexcept {
    return future<T...>(s, adopt_tag{});
  }
  template <class... T>
  static state<T...>* get(const future<T...>& f) noexcept {
    return f.s_;
  }
  /// A ready future<> (no state).
  static future<> ready() noexcept { return future<>(future<>::ready_mark(), adopt_tag{}); }
};

/// Out state<U...> filled with f's result once source state Src is ready.
/// The callback node is embedded (one allocation per pending then()); the
/// node holds one reference to this state while registered.
template <class Fn, class Src, class Out>
struct then_state final : Out, callback_node {
  union {
    Fn fn;  // alive until run or discarded
  };

  template <class F>
  explicit then_state(F&& f) : Out(1, &destroy_as<then_state>), callback_node{nullptr, &run}, fn(std::forward<F>(f)) {
    this->refs = 2;  // the returned future + the registered node
  }
  ~then_state() {}

  struct node_ref {  // drops the node's self reference on scope exit
    then_state* s;
    ~node_ref() {
      if (s) release(s);
    }
  };
  struct fn_killer {
    then_state* s;
    bool alive = true;
    void now() noexcept {
      if (alive) s->fn.~Fn();
      alive = false;
    }
    ~fn_killer() { now(); }
  };

  static void run(callback_node* n, state_base* src) {
    auto* self = static_cast<then_state*>(n);
    node_ref hold{self};
    fn_killer kill{self};
    if (!src) return;  // discarded: source died unfulfilled
    const auto* in = static_cast<const Src*>(src);
    using R = decltype(invoke_with_values(std::move(self->fn), in));
    if constexpr (std::is_void_v<R>) {
      invoke_with_values(std::move(self->fn), in);
      kill.now();
      self->make_ready();
    } else if constexpr (is_future_v<R>) {
      auto inner = invoke_with_values(std::move(self->fn), in);
      kill.now();
      auto* is = future_access::get(inner);
      if (inner.ready()) {
        if constexpr (!Out::is_empty) self->set_tuple(std::move(inner).result_tuple());
        self->make_ready();
      } else if (!is) {
        throw_logic("accrete::future::then: callback returned an empty future");
      } else {  // forward when the returned future becomes ready
        this_node(self)->fn = &forward;
        is->push_callback(this_node(self));
        hold.s = nullptr;  // the node keeps its reference while registered
      }
    } else {
      self->set_value(invoke_with_values(std::move(self->fn), in));
      kill.now();
      self->make_ready();
    }
  }

  static void forward(callback_node* n, state_base* src) {
    auto* self = static_cast<then_state*>(n);
    node_ref hold{self};
    if (!src) return;
    auto* in = static_cast<Out*>(src);  // same value types as Out
    if constexpr (!Out::is_empty) self->set_tuple(take(in->value(), in->claim_values()));
    self->make_ready();
  }

  static callback_node* this_node(then_state* s) noexcept { return static_cast<callback_node*>(s); }
};

template <class F>
struct state_of;
template <class... T>
struct state_of<future<T...>> {
  using type = state<T...>;
};

}  // namespace detail

template <class... T>
template <class F>
detail::then_future_t<std::invoke_result_t<std::decay_t<F>, const T&...>> future<T...>::then(F&& f) const {
  using Fn = std::decay_t<F>;
  using R = std::invoke_result_t<Fn, const T&...>;
  using Result = detail::then_future_t<R>;
  if (!s_) detail::throw_logic("accrete::future::then: empty (default-constructed or moved-from) future");
  if (ready()) {  // eager
    if constexpr (std::is_void_v<R>) {
      detail::invoke_with_values(std::forward<F>(f), s_);
      return detail::future_access::ready();
    } else if constexpr (detail::is_future_v<R>) {
      return Result(detail::invoke_with_values(std::forward<F>(f), s_));
    } else {
      using V = std::remove_cvref_t<R>;
      return detail::future_access::adopt(
          new detail::state<V>(detail::ready_tag{}, detail::invoke_with_values(std::forward<F>(f), s_)));
    }
  } else {
    using Out = typename detail::state_of<Result>::type;
    auto* t = new detail::then_state<Fn, state_type, Out>(std::forward<F>(f));
    s_->push_callback(static_cast<detail::callback_node*>(t));
    return detail::future_access::adopt(static_cast<Out*>(t));
  }
}

/// A ready future holding `results` (future<> when called with no
/// arguments; that one is allocation-free).
template <class... T>
future<T...> make_future(T... results) {
  if constexpr (sizeof...(T) == 0)
    return detail::future_access::ready();
  else
    return detail::future_access::adopt(new detail::state<T...>(detail::ready_tag{}, std::forward<T>(results)...));
}

namespace detail {

template <class Owner, std::size_t I>
struct join_node : callback_node {
  Owner* owner = nullptr;
};
template <class Owner, class Seq>
struct join_nodes;
template <class Owner, std::size_t... I>
struct join_nodes<Owner, std::index_sequence<I...>> {
  using type = std::tuple<join_node<Owner, I>...>;
};

/// Conjunction state: ready when every input is; holds handles to the inputs
/// that carry values (only once they are ready — no reference cycles).
template <class... R, class... Futs>
struct when_all_state<future<R...>, Futs...> final : state<R...> {
  using base = state<R...>;
  static constexpr std::size_t N = sizeof...(Futs);

  template <std::size_t I>
  using node_type = join_node<when_all_state, I>;

  std::tuple<Futs...> ins;  // value-carrying inputs, filled when ready
  typename join_nodes<when_all_state, std::make_index_sequence<N>>::type nodes;

  explicit when_all_state(std::intptr_t pending) : base(pending, &destroy_as<when_all_state>) {}

  template <std::size_t I>
  static void fire(callback_node* n, state_base* src) {
    when_all_state* self = static_cast<node_type<I>*>(n)->owner;
    struct guard {
      when_all_state* s;
      ~guard() { release(s); }
    } g{self};
    if (!src) return;
    using FI = std::tuple_element_t<I, std::tuple<Futs...>>;
    if constexpr (!FI::is_empty) {
      auto* st = static_cast<typename state_of<FI>::type*>(src);
      add_ref(st);
      std::get<I>(self->ins) = future_access::adopt(st);
    }
    if (self->deps == 1)
      self->complete();
    else
      --self->deps;
  }

  void complete() {
    if constexpr (!base::is_empty) {
      // An input future<> carries no values, and its slot in ins holds none.
      auto values = [](auto&& f) {
        if constexpr (std::remove_cvref_t<decltype(f)>::is_empty)
          return std::tuple<>{};
        else
          return std::move(f).result_tuple();
      };
      auto t = std::apply([&](Futs&... f) { return std::tuple_cat(values(std::move(f))...); }, ins);
      ins = {};
      this->set_tuple(std::move(t));
    }
    this->make_ready();
  }

  /// Registers on input I if it is not ready, otherwise keeps its handle.
  template <std::size_t I>
  void attach(const std::tuple_element_t<I, std::tuple<Futs...>>& f) {
    auto* st = future_access::get(f);
    if (f.ready()) {
      if constexpr (!std::remove_cvref_t<decltype(f)>::is_empty) std::get<I>(ins) = f;
    } else {
      auto& node = std::get<I>(nodes);
      node.owner = this;
      node.fn = &fire<I>;
      add_ref(this);
      st->push_callback(&node);
    }
  }
};

}  // namespace detail

/// A future of x: x itself if it is a future, else a ready future of its
/// value (UPC++'s to_future).
template <class X>
auto to_future(X&& x) {
  if constexpr (detail::is_future_v<X>)
    return std::forward<X>(x);
  else
    return make_future(std::decay_t<X>(std::forward<X>(x)));
}

namespace detail {
template <class... Futs>
typename future_cat<std::remove_cvref_t<Futs>...>::type when_all_futures(Futs&&... fs);
}  // namespace detail

/// A future ready when all arguments are, carrying the concatenation of their
/// values in argument order: when_all(future<int>, future<>, future<double,
/// char>) -> future<int, double, char>. An argument that is not a future
/// stands for a ready future of its value, as in UPC++ (when_all(1, f) with
/// f a future<double> is a future<int, double>), so when_all(v...) is also a
/// ready future of the values v. Never makes progress. Allocation-free when
/// all inputs are ready and carry no values, or when at most one input
/// carries values and it is the only non-ready one (that future is returned).
template <class... Args>
typename detail::future_cat<decltype(to_future(std::declval<Args>()))...>::type when_all(Args&&... args) {
  return detail::when_all_futures(to_future(std::forward<Args>(args))...);
}

namespace detail {
template <class... Futs>
typename future_cat<std::remove_cvref_t<Futs>...>::type when_all_futures(Futs&&... fs) {
  using Result = typename detail::future_cat<std::remove_cvref_t<Futs>...>::type;
  if constexpr (sizeof...(Futs) == 0) {
    return detail::future_access::ready();
  } else if constexpr (sizeof...(Futs) == 1) {
    return Result(std::forward<Futs>(fs)...);
  } else {
    const bool any_empty_handle = (!detail::future_access::get(fs) || ...);
    if (any_empty_handle) detail::throw_logic("accrete::when_all: empty (default-constructed or moved-from) future");
    const std::size_t pending = (std::size_t{0} + ... + (fs.ready() ? 0u : 1u));
    if (pending == 0) {
      if constexpr (Result::is_empty)
        return detail::future_access::ready();
      else  // the state of Result itself: make_future would decay a reference (future<dist_object<T>&>)
        return std::apply(
            [](auto&&... v) {
              return detail::future_access::adopt(
                  new typename detail::state_of<Result>::type(detail::ready_tag{}, std::forward<decltype(v)>(v)...));
            },
            std::tuple_cat(std::forward<Futs>(fs).result_tuple()...));
    }
    constexpr std::size_t valued = (std::size_t{0} + ... + (std::remove_cvref_t<Futs>::is_empty ? 0u : 1u));
    if constexpr (valued <= 1) {
      if (pending == 1) {  // return the single non-ready input when it says it all
        Result out;
        bool found = false;
        auto pick = [&](auto&& f) {
          using FT = std::remove_cvref_t<decltype(f)>;
          if constexpr (std::is_same_v<FT, Result>) {
            if (!found && !f.ready()) {
              out = std::forward<decltype(f)>(f);
              found = true;
            }
          }
        };
        (pick(std::forward<Futs>(fs)), ...);
        if (found) return out;
      }
    }
    using S = detail::when_all_state<Result, std::remove_cvref_t<Futs>...>;
    auto* s = new S(static_cast<std::intptr_t>(pending));
    auto fut = detail::future_access::adopt(static_cast<typename detail::state_of<Result>::type*>(s));
    [&]<std::size_t... I>(std::index_sequence<I...>) { (s->template attach<I>(fs), ...); }
    (std::index_sequence_for<Futs...>{});
    return fut;
  }
}
}  // namespace detail

}  // namespace accrete
