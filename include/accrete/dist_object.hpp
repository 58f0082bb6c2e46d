#pragma once
/// \file
// dist_object<T>: one T per member of a team, under one name.
//
// Construction is collective over the team: every member constructs its
// dist_objects on that team in the same order (the i-th construction on a
// team names the same object everywhere). The first dist_object on a team
// other than world() makes one non-blocking allreduce over the team, during
// which user-level progress is made; later constructions do not
// communicate.
//
// Passing a dist_object<T> (by reference) as an RPC argument sends its name;
// the callable receives the target's own instance as dist_object<T>&. An RPC
// that arrives before the target has constructed its instance is kept and
// run during the target's first user-level progress after the construction.
//
// fetch(r) copies member r's value to the caller as a future (an RPC;
// completes during the caller's user-level progress; T must be
// serializable).
//
// Lifetime: an instance must stay alive while RPCs for it may still arrive
// (typically: destroy after a barrier); an RPC that arrives for an instance
// its target has destroyed throws accrete::error on the target, from the
// progress call that received it, naming the object and the sender. The
// team must outlive it, and all dist_objects should be destroyed before
// finalize() (one that outlives it is forgotten by the runtime).
//
// Moves (UPC++ 2023.3's semantics): a default-constructed dist_object is
// inactive (no value, no name; constructing one is not collective and may
// precede init()). Moving an active one, by construction or assignment,
// moves its value and its name: RPCs that arrive afterwards, and pending
// when_here() futures, reach the new instance; the source becomes
// inactive. Assigning onto an active instance first destroys it (as its
// destructor does); moving an object onto itself changes nothing. Not
// copyable. Only destruction and is_active() may be called on an inactive
// instance; fetch() throws accrete::error.
//
// Thread-safety: call from the thread that drives the runtime (in the par
// thread mode, construction off the master persona's thread throws
// accrete::error; fetch and rpc to it work from any thread).
// Lets this header include accrete/detail/ headers (see detail/internal.hpp).
#ifndef ACCRETE_PUBLIC_INCLUDE
#define ACCRETE_PUBLIC_INCLUDE
#define ACCRETE_PUBLIC_INCLUDE_DIST_OBJECT
#endif

#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "accrete/detail/rpc_runtime.hpp"
#include "accrete/future.hpp"
#include "accrete/promise.hpp"
#include "accrete/rpc.hpp"
#include "accrete/serialization.hpp"
#include "accrete/team.hpp"

#ifdef ACCRETE_PUBLIC_INCLUDE_DIST_OBJECT
#undef ACCRETE_PUBLIC_INCLUDE
#undef ACCRETE_PUBLIC_INCLUDE_DIST_OBJECT
#endif

namespace accrete {

template <class T>
class dist_object;

namespace detail {
/// The element type of an initializer list that only `{}` produces.
struct empty_braces {
  empty_braces() = delete;
};
}  // namespace detail

/// A dist_object's name, the same on every member and trivially copyable,
/// so it can travel in an RPC or be stored (UPC++'s dist_id). here() finds
/// the caller's instance.
template <class T>
class dist_id {
 public:
  /// The null id (names no object).
  dist_id() = default;
  /// The caller's instance; throws accrete::error if it has none alive
  /// (not constructed yet, or destroyed).
  dist_object<T>& here() const {
    void* p = detail::dist_find(key_);
    if (!p)
      throw error(
          "accrete::dist_id::here: this process has no live dist_object with that id (not constructed "
          "yet, or destroyed)");
    return *static_cast<dist_object<T>*>(p);
  }
  /// A future of the caller's instance: ready at once if it exists,
  /// otherwise during the user-level progress after its construction.
  /// Throws accrete::error if the caller has destroyed it already.
  future<dist_object<T>&> when_here() const {
    auto p = std::make_shared<promise<dist_object<T>&>>();
    future<dist_object<T>&> f = p->get_future();
    detail::dist_when(
        key_,
        [p](void* obj) {
          p->fulfill_result(*static_cast<dist_object<T>*>(obj));
          p->finalize();
        },
        "dist_id::when_here");
    return f;
  }
  /// Ids compare by the object they name, in an order that is the same on
  /// every process (so ids can key a std::map or, hashed, an unordered one).
  ///@{
  friend bool operator==(const dist_id&, const dist_id&) = default;
  friend auto operator<=>(const dist_id&, const dist_id&) = default;
  ///@}
  /// Writes the id as `dist_id(team:object)`, both in hexadecimal.
  friend std::ostream& operator<<(std::ostream& os, const dist_id& id) {
    return detail::print_id(os, "dist_id", {id.key_.team, id.key_.object});
  }

 private:
  friend class dist_object<T>;
  friend struct std::hash<dist_id<T>>;
  explicit dist_id(const detail::dist_key& k) noexcept : key_(k) {}
  detail::dist_key key_;
};

/// One object per member of a team, found by the others through this
/// object (RPC arguments, fetch): UPC++'s dist_object. Its constructor and
/// destructor are collective over the team, and members must create their
/// dist_objects in the same order.
template <class T>
class dist_object {
 public:
  /// The type of each member's value.
  using value_type = T;

  /// Collective over `t`: this member's instance holds `value`. Not
  /// explicit, as in UPC++ (`dist_object<int> steps = 0;`).
  dist_object(T value, const accrete::team& t = world())
      : team_(&t), key_(detail::dist_next_key(t)), value_(std::move(value)) {
    detail::dist_add(key_, this);
  }
  /// Collective over `t`: `dist_object<T> d({})` holds T{}. UPC++ programs
  /// write this for "a value-initialized T"; with the default (inactive)
  /// constructor it would otherwise be ambiguous between T{} and a moved
  /// inactive object. Only an empty brace list matches.
  dist_object(std::initializer_list<detail::empty_braces>,
              const accrete::team& t = world()) requires std::is_default_constructible_v<T> : dist_object(T{}, t) {}
  /// Collective over `t`: constructs this member's value from `args...`.
  template <class... Args>
  dist_object(const accrete::team& t, std::in_place_t, Args&&... args)
      : team_(&t), key_(detail::dist_next_key(t)), value_(std::in_place, std::forward<Args>(args)...) {
    detail::dist_add(key_, this);
  }
  /// Collective over `t`: constructs this member's value from `args...`
  /// (UPC++'s form, without std::in_place).
  template <class... Args>
  requires std::is_constructible_v<T, Args...>
  explicit dist_object(const accrete::team& t, Args&&... args)
      : team_(&t), key_(detail::dist_next_key(t)), value_(std::in_place, std::forward<Args>(args)...) {
    detail::dist_add(key_, this);
  }
  /// An inactive instance (see the header comment): not collective.
  dist_object() noexcept : generation_(0) {}
  /// Takes `o`'s value and name (see the header comment); `o` becomes inactive.
  dist_object(dist_object&& o) noexcept(std::is_nothrow_move_constructible_v<T>) { take(o); }
  /// Destroys this instance if active, then takes `o`'s value and name.
  dist_object& operator=(dist_object&& o) noexcept(std::is_nothrow_move_constructible_v<T>) {
    if (this != &o) {
      release();
      take(o);
    }
    return *this;
  }
  dist_object(const dist_object&) = delete;
  dist_object& operator=(const dist_object&) = delete;
  /// Under a runtime other than the one it was made in (after finalize,
  /// maybe init again) this only frees the value.
  ~dist_object() { release(); }

  /// Whether this instance holds a value and a name (not default-constructed
  /// or moved from).
  bool is_active() const noexcept { return team_ != nullptr; }

  /// This member's value (an active instance's).
  ///@{
  T& operator*() noexcept { return *value_; }
  const T& operator*() const noexcept { return *value_; }
  T* operator->() noexcept { return &*value_; }
  const T* operator->() const noexcept { return &*value_; }
  ///@}

  /// The team this object lives on (an active instance's).
  const accrete::team& get_team() const noexcept { return *team_; }
  /// The same, under UPC++'s name.
  accrete::team& team() const noexcept { return const_cast<accrete::team&>(*team_); }
  /// This object's name on every member (see dist_id); the null id when
  /// inactive.
  dist_id<T> id() const noexcept { return dist_id<T>(key_); }

  /// A copy of team member `team_rank`'s value (throws std::out_of_range for
  /// a bad rank, accrete::error on an inactive instance).
  future<T> fetch(int team_rank) const {
    static_assert(is_serializable_v<T>, "accrete::dist_object::fetch: T is not serializable");
    if (!is_active())
      throw error("accrete::dist_object::fetch: this dist_object is inactive (default-constructed or moved from)");
    return rpc(
        team_->to_world(team_rank), [](dist_object<T>& d) -> const T& { return *d; }, *this);  // serialized in place
  }

  /// Internal: the name shared by all members.
  const detail::dist_key& key() const noexcept { return key_; }

 private:
  void take(dist_object& o) noexcept(std::is_nothrow_move_constructible_v<T>) {
    if (!o.is_active()) return;
    value_.emplace(std::move(*o.value_));
    team_ = o.team_;
    key_ = o.key_;
    generation_ = o.generation_;
    o.value_.reset();
    o.team_ = nullptr;
    o.key_ = {};
    if (generation_ == detail::runtime_generation()) detail::dist_move(key_, this);
  }
  void release() noexcept {
    if (!is_active()) return;
    if (generation_ == detail::runtime_generation()) detail::dist_remove(key_);
    value_.reset();
    team_ = nullptr;
    key_ = {};
  }

  const accrete::team* team_ = nullptr;
  detail::dist_key key_;
  std::uint64_t generation_ = detail::runtime_generation();
  std::optional<T> value_;
};

namespace detail {
/// What a dist_object<T> argument deserializes to: its name. The RPC
/// machinery resolves it to the local instance (or waits for it).
template <class T>
struct dist_object_ref {
  dist_key key;
};

template <class T>
struct rpc_arg<dist_object_ref<T>> {
  static dist_object<T>& pass(dist_object_ref<T>& r) noexcept {
    return *static_cast<dist_object<T>*>(dist_find(r.key));
  }
  static std::optional<dist_key> missing(const dist_object_ref<T>& r) noexcept {
    if (dist_find(r.key)) return std::nullopt;
    return r.key;
  }
};
}  // namespace detail

/// A dist_object passed to an RPC travels as its name; the callee receives
/// its own member's object.
template <class T>
struct serialization<dist_object<T>> {
  /// The rule's protocol (see serialization<T>).
  ///@{
  using deserialized_type = detail::dist_object_ref<T>;
  static void serialize(writer& w, const dist_object<T>& d) {
    w.write(d.key().team);
    w.write(d.key().object);
  }
  static deserialized_type deserialize(reader& r) {
    detail::dist_key k;
    k.team = r.read<std::uint64_t>();
    k.object = r.read<std::uint64_t>();
    return {k};
  }
  ///@}
};

}  // namespace accrete

// Doxygen 1.9 cannot place this specialization of std::hash: hidden from it.
/// \cond
/// Hashes a dist_id (UPC++'s dist_id is hashable).
template <class T>
struct std::hash<accrete::dist_id<T>> {
  std::size_t operator()(const accrete::dist_id<T>& id) const noexcept {
    return std::hash<std::uint64_t>{}(id.key_.team * 0x9e3779b97f4a7c15ull ^ id.key_.object);
  }
};
/// \endcond
