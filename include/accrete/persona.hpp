#pragma once
/// \file
// Personas: queues of work that threads hold (UPC++'s personas).
//
// Every thread holds its own default persona; the thread that called init()
// also holds the master persona, on top, until it calls
// liberate_master_persona(). A thread pushes more with persona_scope. The
// persona on top of a thread's stack is its current persona.
//
// Progress: user-level progress (progress(), every wait()) in a thread runs
// the work of every persona that thread holds. RPC bodies run in the thread
// that holds the master persona.
//
// Completion (init_options::threads = par): an operation's completion
// (its future, promise or callback) is delivered to the persona that was
// current when the operation started, so it runs in the thread holding that
// persona. In the SEQ mode one thread holds everything.
//
// Thread safety: lpc and lpc_ff may be called from any thread, for any
// persona. A persona is held by one thread at a time: persona_scope throws
// accrete::error when another thread holds it. Scopes end in the reverse
// order of their start, in the thread that started them.
// Lets this header include accrete/detail/ headers (see detail/internal.hpp).
#ifndef ACCRETE_PUBLIC_INCLUDE
#define ACCRETE_PUBLIC_INCLUDE
#define ACCRETE_PUBLIC_INCLUDE_PERSONA
#endif

#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

#include "accrete/detail/lpc_queue.hpp"
#include "accrete/error.hpp"
#include "accrete/future.hpp"
#include "accrete/promise.hpp"

#ifdef ACCRETE_PUBLIC_INCLUDE_PERSONA
#undef ACCRETE_PUBLIC_INCLUDE
#undef ACCRETE_PUBLIC_INCLUDE_PERSONA
#endif

namespace accrete {

class persona;
persona& current_persona();

/// A queue of work run by the thread that holds it. Not copyable or
/// movable; it must outlive the work posted to it.
class persona {
 public:
  /// A persona no thread holds yet.
  persona() : q_(std::make_shared<detail::lpc_queue>()) {}
  persona(const persona&) = delete;
  persona& operator=(const persona&) = delete;

  /// Whether the calling thread holds this persona.
  bool active_with_caller() const noexcept { return detail::holds_queue(*q_); }

  /// Runs f() in the holder's user-level progress. The returned future
  /// (of f's result; a returned future is flattened) is fulfilled in the
  /// caller's current persona once f has run. As in UPC++, an lvalue
  /// reference result stays a reference (future<U&>: the referent must
  /// outlive the future's use); any other result is decayed to a value.
  template <class F>
  auto lpc(F&& f) {
    using R = std::invoke_result_t<std::decay_t<F>&>;
    auto home = detail::current_queue();
    auto g = std::make_shared<std::decay_t<F>>(std::forward<F>(f));
    if constexpr (detail::is_future_v<R>) {
      // f's future is this persona's; its values travel back when ready,
      // references as the addresses they name.
      using P = decltype(promise_of(static_cast<std::remove_cvref_t<R>*>(nullptr)));
      auto pr = std::make_shared<P>();
      auto out = pr->get_future();
      detail::post(*q_, [g, home, pr]() mutable {
        (*g)().then([home, pr = std::move(pr)](auto&&... v) mutable {
          auto c = carry(pr.get(), v...);
          detail::post(*home, [pr = std::move(pr), c = std::move(c)]() mutable {
            std::apply([&](auto&... x) { fulfill_carried(*pr, x...); }, c);
            pr->finalize();
          });
        });
      });
      return out;
    } else if constexpr (std::is_void_v<R>) {
      auto pr = std::make_shared<promise<>>();
      future<> out = pr->get_future();
      // The promise travels back by move: the caller's thread alone touches it.
      detail::post(*q_, [g, home, pr]() mutable {
        (*g)();
        detail::post(*home, [pr = std::move(pr)] { pr->finalize(); });
      });
      return out;
    } else {
      using V = std::conditional_t<std::is_lvalue_reference_v<R>, R, std::decay_t<R>>;
      auto pr = std::make_shared<promise<V>>();
      future<V> out = pr->get_future();
      detail::post(*q_, [g, home, pr]() mutable {
        auto c = carry(pr.get(), (*g)());
        detail::post(*home, [pr = std::move(pr), c = std::move(c)]() mutable {
          fulfill_carried(*pr, std::get<0>(c));
          pr->finalize();
        });
      });
      return out;
    }
  }

  /// Runs f() in the holder's user-level progress; no notification.
  template <class F>
  void lpc_ff(F&& f) {
    detail::post(*q_, [g = std::make_shared<std::decay_t<F>>(std::forward<F>(f))] { (*g)(); });
  }

  /// Internal: the queue behind this persona.
  const std::shared_ptr<detail::lpc_queue>& queue() const noexcept { return q_; }

 private:
  template <class... T>
  static promise<T...> promise_of(future<T...>*);
  // A result crosses threads by value, or, for a reference, as its address.
  template <class T>
  using carried_t = std::conditional_t<std::is_reference_v<T>, std::remove_reference_t<T>*, T>;
  template <class... T, class... U>
  static std::tuple<carried_t<T>...> carry(promise<T...>*, U&&... v) {
    return {carry_one<T>(std::forward<U>(v))...};
  }
  template <class T, class U>
  static carried_t<T> carry_one(U&& v) {
    if constexpr (std::is_reference_v<T>) return std::addressof(v);
    else return carried_t<T>(std::forward<U>(v));
  }
  template <class... T, class... C>
  static void fulfill_carried(promise<T...>& p, C&... c) {
    p.fulfill_result(static_cast<T&&>(deref_carried<T>(c))...);
  }
  template <class T, class C>
  static decltype(auto) deref_carried(C& c) {
    if constexpr (std::is_reference_v<T>) return *c;
    else return std::move(c);
  }
  friend persona& master_persona();
  friend persona& default_persona();
  explicit persona(std::shared_ptr<detail::lpc_queue> q) : q_(std::move(q)) {}
  std::shared_ptr<detail::lpc_queue> q_;
};

/// The master persona: RPC bodies run in its holder.
persona& master_persona();
/// The calling thread's own persona.
persona& default_persona();
/// The persona on top of the calling thread's stack.
persona& current_persona();

/// Pushes a persona onto the calling thread's stack for the scope (throws
/// accrete::error if another thread holds it); with a mutex, locks it first
/// and unlocks it after the persona is released.
class persona_scope {
 public:
  /// Pushes p (throws accrete::error if another thread holds it).
  explicit persona_scope(persona& p);
  /// Locks m, then pushes p; m is unlocked when the scope ends.
  template <class Mutex>
  persona_scope(Mutex& m, persona& p) : unlock_([&m] { m.unlock(); }) {
    m.lock();
    try {
      enter(p);
    } catch (...) {
      m.unlock();
      throw;
    }
  }
  persona_scope(const persona_scope&) = delete;
  persona_scope& operator=(const persona_scope&) = delete;
  /// Pops the persona (and unlocks the mutex, if any).
  ~persona_scope();

 private:
  friend persona_scope& default_persona_scope();
  friend persona& current_persona();
  struct implicit_t {};
  // The scope a thread starts with: what it holds without a persona_scope
  // (its default persona, and the master persona on the thread that
  // called init()). Pushes nothing, pops nothing.
  explicit persona_scope(implicit_t) noexcept {}
  void enter(persona& p);
  persona* p_ = nullptr;
  std::function<void()> unlock_;
};

/// The calling thread's innermost persona_scope; the scope it started
/// with (default_persona_scope()) when it pushed none.
persona_scope& top_persona_scope();
/// The scope the calling thread started with, holding what it holds
/// without a persona_scope: its default persona (and, on the thread that
/// called init(), the master persona).
persona_scope& default_persona_scope();

/// Lets go of the master persona (it must be on top of the calling
/// thread's stack), so that another thread may take it with persona_scope.
/// Throws accrete::error otherwise.
void liberate_master_persona();

}  // namespace accrete
