#pragma once
/// \file
// Remote procedure calls.
//
//   future<R> rpc(rank, f, args...)          run f(args...) on `rank`, get its result
//   void      rpc_ff(rank, f, args...)       fire and forget
//   rpc(team, team_rank, f, args...)         the same with a team rank
//   rpc_ff(team, team_rank, f, args...)
//
// Callables: function pointers (sent as their offset in the executable, so
// every process must run the same executable; functions in other shared
// libraries cannot be sent) and function objects / lambdas that are
// serializable — in practice lambdas whose captures are all trivially
// copyable. Capturing a std::string, std::vector, ... is a compile-time
// error: pass such values as arguments. Captured pointers and references are
// copied as bits and are meaningless on another process.
//
// Arguments are serialized (see serialization.hpp) when the call is made;
// the caller's objects may be reused as soon as rpc() returns. The callable
// receives each argument as an rvalue of its deserialized type (view<T> for
// make_view(...), dist_object<T>& for a dist_object<T>), so parameters may
// be taken by value, by const& or by &&. They live until f returns, or, if
// f returns a future, until that future is ready (as in UPC++): f may start
// asynchronous work on a view's elements or on an argument and return its
// future.
//
// Result: if f returns void, rpc() returns future<>; if it returns
// future<U...>, the result is flattened: the reply is sent when that future
// is ready and rpc() returns future<U...>; otherwise future<R> (R decayed;
// it must be serializable).
//
// Execution and progress: f always runs on the target during its
// user-level progress (accrete::progress() or any wait()), never inside
// rpc() itself, even for rpc to self. The reply is delivered, and the
// returned future readied, during the caller's user-level progress. f may
// issue RPCs and wait on them. RPCs are not ordered with respect to each
// other. Only internal progress happens inside rpc()/rpc_ff() (possibly
// waiting for earlier messages to drain when too many bytes are in flight
// to one target: flow control).
//
// Errors: a bad rank throws accrete::error (std::out_of_range for a team
// rank). An exception thrown by f propagates out of the target's progress
// call, and the caller's future never becomes ready. A malformed message
// throws accrete::serialization_error (naming the sender) from the
// receiver's progress call; unknown handler ids are rejected by the backend.
//
// Thread-safety: call from the thread that drives the runtime.
// Lets this header include accrete/detail/ headers (see detail/internal.hpp).
#ifndef ACCRETE_PUBLIC_INCLUDE
#define ACCRETE_PUBLIC_INCLUDE
#define ACCRETE_PUBLIC_INCLUDE_RPC
#endif

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "accrete/detail/backend.hpp"
#include "accrete/detail/rpc_runtime.hpp"
#include "accrete/error.hpp"
#include "accrete/future.hpp"
#include "accrete/promise.hpp"
#include "accrete/serialization.hpp"
#include "accrete/team.hpp"
#include "accrete/view.hpp"

#ifdef ACCRETE_PUBLIC_INCLUDE_RPC
#undef ACCRETE_PUBLIC_INCLUDE
#undef ACCRETE_PUBLIC_INCLUDE_RPC
#endif

namespace accrete {
namespace detail {
/// What a team argument deserializes to: its id. The callee receives its
/// own team of that id (accrete::error if it has none: an RPC may pass a
/// team only to its members).
struct team_ref {
  team_id id;
};
template <>
struct rpc_arg<team_ref> {
  static team& pass(team_ref& r) { return r.id.here(); }
  static std::optional<dist_key> missing(const team_ref&) noexcept { return std::nullopt; }
};
}  // namespace detail

/// A team passed to an RPC travels as its id; the callee receives its own
/// team of that id (UPC++'s team& arguments).
template <>
struct serialization<team> {
  /// The rule's protocol (see serialization<T>).
  ///@{
  using deserialized_type = detail::team_ref;
  static void serialize(writer& w, const team& t) { w.write(t.id()); }
  static deserialized_type deserialize(reader& r) { return {r.read<team_id>()}; }
  ///@}
};

namespace detail {

/// The type an argument is sent as: its decayed type, except that a string
/// literal / char array is sent as std::string (not as a pointer).
template <class Arg>
struct rpc_decay {
  using type = std::decay_t<Arg>;
};
template <class Arg>
requires std::is_array_v<std::remove_cvref_t<Arg>> &&
    std::is_same_v < std::remove_cv_t<std::remove_extent_t<std::remove_cvref_t<Arg>>>,
char > struct rpc_decay<Arg> { using type = std::string; };
template <class Arg>
using rpc_decay_t = typename rpc_decay<Arg>::type;

template <class D>
using rpc_pass_t = decltype(rpc_arg<D>::pass(std::declval<D&>()));

template <bool Ok, class F, class... P>
struct rpc_result {
  using type = void;
};
template <class F, class... P>
struct rpc_result<true, F, P...> {
  using type = std::invoke_result_t<F&, P...>;
};

// The caller's future of an rpc whose callable's results are Fut: values,
// never references (the target serializes the objects they name).
template <class Fut>
struct reply_future;
template <class... U>
struct reply_future<future<U...>> {
  using type = future<std::remove_cvref_t<U>...>;
};

/// Compile-time facts about rpc(f, args...) with decayed callable F and
/// decayed argument types A...
template <class F, class... A>
struct rpc_sig {
  using args_t = std::tuple<deserialized_type_t<A>...>;
  static constexpr bool callable_ok = is_function_pointer_v<F> || is_serializable_v<F>;
  static constexpr bool args_ok = (is_serializable_v<A> && ...);
  static constexpr bool invocable = args_ok && std::is_invocable_v<F&, rpc_pass_t<deserialized_type_t<A>>...>;
  using result = typename rpc_result<invocable, F, rpc_pass_t<deserialized_type_t<A>>...>::type;
  // A callable returning future<U&> (a reference to an argument, kept alive
  // until the future is ready, or to an object of the target's) sends the
  // object; the caller's future holds a value.
  using future_type = typename reply_future<then_future_t<result>>::type;
};

template <class Fut>
struct future_values;
template <class... U>
struct future_values<future<U...>> {
  static constexpr bool serializable = (is_serializable_v<U> && ...);
  static constexpr bool round_trips = (std::is_same_v<deserialized_type_t<U>, U> && ...);
};

template <class F>
void write_callable(writer& w, const F& f) {
  if constexpr (is_function_pointer_v<F>)
    w.write(fn_to_offset(f));
  else
    w.write(f);
}

template <class F>
F read_callable(reader& r) {
  if constexpr (is_function_pointer_v<F>) {
    return fn_from_offset<F>(r.read<std::intptr_t>(), r.source());
  } else {
    static_assert(std::is_same_v<deserialized_type_t<F>, F>,
                  "accrete::rpc: a callable's serialization must read back as the same type");
    return r.read<F>();
  }
}

template <class Tuple>
std::optional<dist_key> first_missing(const Tuple& t) {
  return std::apply(
      [](const auto&... a) {
        std::optional<dist_key> k;
        ((k ? void() : void(k = rpc_arg<std::remove_cvref_t<decltype(a)>>::missing(a))), ...);
        return k;
      },
      t);
}

/// Sends an RPC message. Every few messages this also makes internal
/// progress, so that a long burst of sends does not pile up unfinished MPI
/// requests (the backend's flow control only engages at its byte cap). It
/// leaves the node-local rings' messages to user-level progress, which runs
/// them in place; internal progress would copy each user RPC out to wait.
inline void rpc_send(int rank, am_handler h, std::vector<std::byte>&& msg) {
  ACCRETE_THREAD_LOCAL unsigned since_poll = 0;  // per thread: the PAR mode sends from several
  am_send_owned(rank, h, std::move(msg));
  if (++since_poll == 64) {
    since_poll = 0;
    poll_sends();
  }
}

/// Sends [id][values...] back to the origin of a request.
template <class... V>
void send_reply(int to, std::uint64_t id, const V&... v) {
  std::vector<std::byte> msg = message_buffer(sizeof id + (std::size_t{0} + ... + size_hint(v)));
  writer w(msg);
  w.write(id);
  (w.write(v), ...);
  rpc_send(to, &rpc_reply_handler, std::move(msg));
}

/// Origin-side slot of an rpc returning future<T...>.
template <class... T>
struct reply_slot final : reply_base {
  promise<T...> p;
  void deliver(reader& r) override {
    if constexpr (sizeof...(T) == 0) {
      r.expect_end();
    } else {
      std::tuple<T...> v{r.read<T>()...};
      r.expect_end();
      std::apply([&](auto&... x) { p.fulfill_result(std::move(x)...); }, v);
    }
    p.fulfill_anonymous(1);
  }
};

template <class Fut>
struct reply_slot_for;
template <class... T>
struct reply_slot_for<future<T...>> {
  using type = reply_slot<T...>;
};

/// The active-message handlers for one (callable type, argument types). Both
/// are registered with the backend at static-initialisation time in every
/// process (all run the same executable), as soon as any rpc() naming this
/// combination is compiled into it.
template <class F, class... A>
struct rpc_trampoline {
  using sig = rpc_sig<F, A...>;

  static void fire_and_forget(int src, std::span<const std::byte> p) { run(src, p, false); }
  static void request(int src, std::span<const std::byte> p) { run(src, p, true); }

  static void run(int src, std::span<const std::byte> p, bool reply) {
    using R = typename sig::result;
    if constexpr (is_future_v<R> && sizeof...(A) > 0) {
      // UPC++'s lifetime extension: when f returns a future, its arguments
      // (and the message bytes a view argument reads) live until that future
      // is ready, so f may hand them to asynchronous work. The message is
      // the backend's and is reused once this returns: keep a copy.
      auto held = std::make_shared<kept>();
      held->bytes.assign(p.begin(), p.end());
      run_from(src, std::span<const std::byte>(held->bytes), reply, &held);
    } else {
      run_from(src, p, reply, nullptr);
    }
  }

  struct kept {
    std::vector<std::byte> bytes;
    std::unique_ptr<typename sig::args_t> args;
  };

  static void run_from(int src, std::span<const std::byte> p, bool reply, std::shared_ptr<kept>* held) {
    reader r(p, src, am_header_bytes, "RPC message");
    std::uint64_t id = 0;
    if (reply) id = r.read<std::uint64_t>();
    F f = read_callable<F>(r);
    using R = typename sig::result;
    using args_t = typename sig::args_t;
    // Braces: the arguments are read left to right. They live on the heap
    // only when f returns a future, which may need them after this returns.
    if constexpr (is_future_v<R>) {
      std::unique_ptr<args_t> owned(new args_t{r.read<A>()...});
      r.expect_end();
      invoke_with(src, p, reply, id, f, *owned, held, &owned);
    } else {
      args_t args{r.read<A>()...};
      r.expect_end();
      invoke_with(src, p, reply, id, f, args, held, nullptr);
    }
  }

  static void invoke_with(int src, std::span<const std::byte> p, bool reply, std::uint64_t id, F& f,
                          typename sig::args_t& args, std::shared_ptr<kept>* held,
                          std::unique_ptr<typename sig::args_t>* owned) {
    if (auto k = first_missing(args)) {  // a dist_object not constructed here yet
      rpc_park(*k, reply ? &request : &fire_and_forget, src, p);
      return;
    }
    using R = typename sig::result;
    auto call = [&]() -> R {
      return std::apply(
          [&](auto&... a) -> R { return std::invoke(f, rpc_arg<std::remove_cvref_t<decltype(a)>>::pass(a)...); }, args);
    };
    if constexpr (std::is_void_v<R>) {
      call();
      if (reply) send_reply(src, id);
    } else if constexpr (is_future_v<R>) {
      auto fut = call();
      std::shared_ptr<kept> keep;
      if (held) {
        keep = std::move(*held);
        keep->args = std::move(*owned);
      }
      // The reply may name the arguments (a future of a reference to one):
      // they are released after it is written.
      if (reply)
        fut.then([src, id, keep](const auto&... v) { send_reply(src, id, v...); });
      else if (keep && !fut.ready())
        fut.then([keep](const auto&...) {});
    } else {
      (void)owned;
      if (reply) {
        // A returned reference is serialized from the object it names (no
        // copy: the type may be move-only).
        decltype(auto) v = call();
        send_reply(src, id, v);
      } else {
        call();
      }
    }
  }

  static inline const bool registered = [] {
    am_register(&fire_and_forget, false);
    am_register(&request, false);
    return true;
  }();
};

template <class F, class... A>
void rpc_check_static() {
  using sig = rpc_sig<F, A...>;
  static_assert(!std::is_member_pointer_v<F>, "accrete::rpc: member pointers cannot be called remotely");
  static_assert(sig::callable_ok,
                "accrete::rpc: the callable is not serializable. A lambda may only capture trivially "
                "copyable values (or types with an accrete::serialization<T> specialisation); pass "
                "std::string, std::vector, ... as RPC arguments instead of capturing them");
  static_assert(sig::args_ok,
                "accrete::rpc: an argument type is not serializable (not trivially copyable and no "
                "accrete::serialization<T> specialisation)");
  static_assert(sig::invocable,
                "accrete::rpc: the callable cannot be invoked with the deserialized arguments (each "
                "argument arrives as an rvalue of its deserialized type: take it by value, const& or &&; "
                "a make_view(...) argument arrives as accrete::view<T>)");
}

inline void rpc_check_rank(const char* what, int rank) {
  require_initialized(what);
  if (rank < 0 || rank >= world_size())
    throw error(std::string("accrete::") + what + ": rank " + std::to_string(rank) + " out of range [0, " +
                std::to_string(world_size()) + ")");
}

template <class F>
void rpc_check_callable(const char* what, const F& f) {
  if constexpr (is_function_pointer_v<F>)
    if (f == nullptr) throw error(std::string("accrete::") + what + ": null function pointer");
}

// The checks every RPC-like send makes before it serializes: the handler
// (trampoline Tr) was registered at static initialization, and a function
// pointer is not null.
template <class Tr, class F>
void rpc_check_send(const char* what, const F& f) {
  if (!Tr::registered) throw error(std::string("accrete::") + what + ": handler not registered");
  rpc_check_callable(what, f);
}

template <class F, class... A, class... Args>
std::vector<std::byte> rpc_message(std::uint64_t* id, const F& f, const Args&... args) {
  std::vector<std::byte> msg = message_buffer(sizeof(std::uint64_t) + (size_hint(f) + ... + size_hint(args)));
  writer w(msg);
  if (id) w.write(*id);
  write_callable(w, f);
  (w.write(static_cast<const A&>(args)), ...);
  return msg;
}

}  // namespace detail

/// Runs f(args...) on world rank `rank` during its user-level progress; the
/// returned future becomes ready with f's result during the caller's
/// user-level progress. See the header comment for the full semantics.
template <class F, class... Args>
typename detail::rpc_sig<std::decay_t<F>, detail::rpc_decay_t<Args>...>::future_type rpc(int rank, F&& f,
                                                                                         Args&&... args) {
  using Fd = std::decay_t<F>;
  using sig = detail::rpc_sig<Fd, detail::rpc_decay_t<Args>...>;
  using Fut = typename sig::future_type;
  detail::rpc_check_static<Fd, detail::rpc_decay_t<Args>...>();
  static_assert(detail::future_values<Fut>::serializable,
                "accrete::rpc: the callable's result type is not serializable");
  static_assert(detail::future_values<Fut>::round_trips,
                "accrete::rpc: the callable's result must deserialize to its own type (views cannot be "
                "returned)");
  if constexpr (sig::callable_ok && sig::invocable && detail::future_values<Fut>::serializable &&
                detail::future_values<Fut>::round_trips) {
    using T = detail::rpc_trampoline<Fd, detail::rpc_decay_t<Args>...>;
    detail::rpc_check_rank("rpc", rank);
    const Fd& fn = f;
    detail::rpc_check_send<T>("rpc", fn);
    auto slot = std::make_unique<typename detail::reply_slot_for<Fut>::type>();
    Fut fut = slot->p.get_future();
    std::uint64_t id = detail::reply_register(std::move(slot));
    detail::rpc_send(rank, &T::request, detail::rpc_message<Fd, detail::rpc_decay_t<Args>...>(&id, fn, args...));
    return fut;
  } else {
    return Fut{};
  }
}

/// Runs f(args...) on world rank `rank` during its user-level progress; no
/// completion is reported to the caller (f's result is discarded).
template <class F, class... Args>
void rpc_ff(int rank, F&& f, Args&&... args) {
  using Fd = std::decay_t<F>;
  using sig = detail::rpc_sig<Fd, detail::rpc_decay_t<Args>...>;
  detail::rpc_check_static<Fd, detail::rpc_decay_t<Args>...>();
  if constexpr (sig::callable_ok && sig::invocable) {
    using T = detail::rpc_trampoline<Fd, detail::rpc_decay_t<Args>...>;
    detail::rpc_check_rank("rpc_ff", rank);
    const Fd& fn = f;
    detail::rpc_check_send<T>("rpc_ff", fn);
    detail::rpc_send(rank, &T::fire_and_forget,
                     detail::rpc_message<Fd, detail::rpc_decay_t<Args>...>(nullptr, fn, args...));
  }
}

/// rpc to member `team_rank` of `t` (throws std::out_of_range if invalid).
template <class F, class... Args>
auto rpc(const team& t, int team_rank, F&& f, Args&&... args) {
  return rpc(t.to_world(team_rank), std::forward<F>(f), std::forward<Args>(args)...);
}

/// rpc_ff to member `team_rank` of `t` (throws std::out_of_range if invalid).
template <class F, class... Args>
void rpc_ff(const team& t, int team_rank, F&& f, Args&&... args) {
  rpc_ff(t.to_world(team_rank), std::forward<F>(f), std::forward<Args>(args)...);
}

}  // namespace accrete
