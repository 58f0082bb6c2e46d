#pragma once
/// \file
// UPC++ v1.0 on accrete: namespace upcxx, as the UPC++ v1.0 specification
// (revision 2020.10) names it, implemented by accrete's runtime over MPI.
// One runtime: every upcxx:: call is an accrete call (most names are the
// same entity under both namespaces), so upcxx:: and accrete:: code mix
// freely in one program.
//
// What is here and what differs from the specification, chapter by
// chapter, is in docs/upcxx.md. In short:
//  - Thread mode: SEQ by default; PAR (several threads communicating, each
//    through its personas) with ACCRETE_THREAD_MODE=par or when the program
//    is compiled with UPCXX_THREADMODE defined non-zero.
//  - Completions: operation_cx, source_cx and remote_cx, composed with |,
//    on rput, rget, copy, rpc, rpc_ff, atomics and collectives (the
//    non-contiguous forms take accrete's). Notifications are eager: a future or promise
//    completion whose operation finished inside the call (a node-local
//    target) is delivered before the call returns, as UPC++ 2021.3's
//    as_eager_* completions do.
//  - Source completion happens no earlier than operation completion
//    (source_cx::as_buffered copies the source first, so it is delivered at
//    once; as_blocking waits for the operation with user-level progress).
//  - Memory kinds: host memory only; global_ptr<T, Kind> takes every kind,
//    and pointers of a device kind are always null.
//
// Progress, completion and atomicity are accrete's: see the headers under
// accrete/ that each section names.

// UPC++'s own headers bring these in (its serialization covers the
// containers; GASNet's headers bring <assert.h>), and programs written
// against it use them without including them.
#include <algorithm>
#include <array>
#include <cassert>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <forward_list>
#include <functional>
#include <iostream>
#include <list>
#include <map>
#include <memory>
#include <new>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "accrete/accrete.hpp"
#include "accrete/persona.hpp"

/// The UPC++ release whose API this layer provides, as [YYYY][MM][PP].
#define UPCXX_VERSION 20201000L
/// The UPC++ v1.0 specification revision this layer follows (2020.10).
#define UPCXX_SPEC_VERSION 20201000L
// The network, as UPC++ names its conduit's: accrete talks through MPI.
#ifndef UPCXX_NETWORK_MPI
#define UPCXX_NETWORK_MPI 1
#endif
// UPCXX_THREADMODE is the program's: defined non-zero (-DUPCXX_THREADMODE=1),
// init() asks for the par thread mode (spec: Personas, thread modes).

/// The UPC++ API on accrete (see the file comment).
namespace upcxx {

// ---- Init and finalize ---------------------------------------------------------------

/// A rank in a team (spec: Init and Finalize), and its unsigned
/// counterpart (UPC++'s uintrank_t).
using intrank_t = int;
using uintrank_t = unsigned int;

namespace detail {
struct init_state {
  int count = 0;                                   // init() calls not yet matched by finalize()
  bool owned = false;                              // whether the first init() started accrete
  std::pair<intrank_t, intrank_t> position{0, 1};  // local_team_position()
};
inline init_state& init_counter() {
  static init_state s;
  return s;
}
// Collective over the world: which of the local teams the caller's is (they
// are ordered by their first world rank) and how many there are. One
// element-wise sum of "leads its local team" flags, so that the query
// itself needs no communication.
inline std::pair<intrank_t, intrank_t> find_local_team_position() {
  const accrete::team& lt = accrete::local_team();
  const int n = accrete::rank_n();
  if (lt.rank_n() == n) return {0, 1};  // one local team: every process knows it without asking
  std::vector<int> leads(std::size_t(n), 0), all(std::size_t(n), 0);
  leads[std::size_t(accrete::rank_me())] = lt.rank_me() == 0 ? 1 : 0;
  accrete::reduce_all(leads.data(), all.data(), leads.size(), accrete::op_fast_add).wait();
  const int before = std::accumulate(all.begin(), all.begin() + lt[0], 0);
  return {before, std::accumulate(all.begin(), all.end(), 0)};
}
}  // namespace detail

/// Collective: starts the runtime on the first call (accrete::init with
/// options from the environment); later calls only count. A runtime the
/// program started with accrete::init() is used as it is.
inline void init() {
  auto& s = detail::init_counter();
  if (s.count == 0 && !accrete::initialized()) {
    accrete::init_options o;
#if defined(UPCXX_THREADMODE) && (UPCXX_THREADMODE + 0) != 0
    o.threads = accrete::thread_mode::par;
#endif
    accrete::init(o);
    s.owned = true;
  }
  if (s.count == 0) s.position = detail::find_local_team_position();
  ++s.count;
}

/// Collective: undoes one init(); the last one stops the runtime if init()
/// started it. Throws accrete::collective_misuse without a matching init().
inline void finalize() {
  auto& s = detail::init_counter();
  if (s.count == 0) throw accrete::collective_misuse("upcxx::finalize: called without a matching upcxx::init()");
  if (--s.count == 0 && s.owned) {
    s.owned = false;
    accrete::finalize();
  }
}

/// True between the first init() and the last finalize().
inline bool initialized() noexcept { return detail::init_counter().count > 0; }

/// Where the caller's local team lies among the local teams that make up
/// world() (UPC++ 2022.3): `second` is how many there are (the same on
/// every process), `first` the index in [0, second) of the caller's, equal
/// for two processes exactly when they share a local team. Local teams are
/// numbered in the order of their first world rank. No communication
/// (found at init()); throws accrete::not_initialized outside init() and
/// finalize().
inline std::pair<intrank_t, intrank_t> local_team_position() {
  if (!initialized())
    throw accrete::not_initialized(
        "upcxx::local_team_position() called before upcxx::init() or after upcxx::finalize()");
  return detail::init_counter().position;
}

/// This process's rank and the number of processes (spec: Init and
/// Finalize). After finalize() they keep answering with the values they
/// had, as UPC++ does outside its debug mode: destructors of objects in
/// main's scope, which run after finalize(), often ask. Before init()
/// they throw accrete::not_initialized.
///@{
inline intrank_t rank_me() {
  return accrete::detail::runtime_ended() ? accrete::detail::world_rank() : accrete::rank_me();
}
inline intrank_t rank_n() {
  return accrete::detail::runtime_ended() ? accrete::detail::world_size() : accrete::rank_n();
}
///@}

// ---- Global pointers, storage management -------------------------------------------------------

using accrete::dynamic_kind_cast;
using accrete::global_ptr;
using accrete::memory_kind;
using accrete::reinterpret_pointer_cast;
using accrete::static_kind_cast;
using accrete::to_global_ptr;
using accrete::try_global_ptr;

/// The kind of memory p points to: always host here (spec: Global
/// Pointers; the member `p.dynamic_kind()` says the same).
template <class T, memory_kind K>
constexpr memory_kind dynamic_kind(const global_ptr<T, K>&) noexcept {
  return memory_kind::host;
}

namespace detail {
[[noreturn]] inline void no_device_kinds(const char* what) {
  throw accrete::error(std::string("upcxx on accrete: ") + what +
                       ": device memory kinds (cuda_device, hip_device, ze_device, device_allocator) are not "
                       "supported; only host memory is (docs/upcxx.md, Memory Kinds)");
}
// A device kind that is never active, as in a UPC++ build without that
// device: default-constructed (or made with invalid_device_id) it is an
// inactive placeholder; opening a real device throws accrete::error.
template <memory_kind Kind>
struct device_kind {
  static constexpr int invalid_device_id = -1;
  static constexpr memory_kind kind = Kind;
  template <class T>
  using pointer = T*;
  template <class T>
  static constexpr T* null_pointer() noexcept {
    return nullptr;
  }
  device_kind() noexcept = default;
  template <class... Opts>
  explicit device_kind(int device_id, Opts&&...) {
    if (device_id != invalid_device_id) no_device_kinds("opening a device");
  }
  device_kind(device_kind&&) noexcept = default;
  device_kind& operator=(device_kind&&) noexcept = default;
  bool is_active() const noexcept { return false; }
  void destroy(accrete::entry_barrier = accrete::entry_barrier::user) noexcept {}
  int device_id() const noexcept { return invalid_device_id; }
  /// How many devices of this kind the process can open (UPC++ 2022.3):
  /// none here, so a program that sizes its device work by it runs on
  /// host memory alone.
  static int device_n() noexcept { return 0; }
};
}  // namespace detail

/// Device memory kinds (spec: Memory Kinds): not supported. The types
/// exist so that programs naming them build, and their inactive objects
/// behave as in a UPC++ build without that device (is_active() is false,
/// destroy() does nothing); opening a device or a device_allocator on one
/// throws accrete::error saying that device kinds are not supported.
///@{
using cuda_device = detail::device_kind<memory_kind::cuda_device>;
using hip_device = detail::device_kind<memory_kind::hip_device>;
using ze_device = detail::device_kind<memory_kind::ze_device>;
template <class Device>
class device_allocator {
 public:
  using device_type = Device;
  static constexpr memory_kind kind = Device::kind;
  device_allocator() noexcept = default;
  template <class... A>
  explicit device_allocator(Device&, A&&...) {
    detail::no_device_kinds("making a device_allocator");
  }
  device_allocator(device_allocator&&) noexcept = default;
  device_allocator& operator=(device_allocator&&) noexcept = default;
  bool is_active() const noexcept { return false; }
  void destroy(accrete::entry_barrier = accrete::entry_barrier::user) noexcept {}
  int device_id() const noexcept { return Device::invalid_device_id; }
  /// Never active here: allocating throws.
  template <class T>
  global_ptr<T, kind> allocate(std::size_t = 1, std::size_t = alignof(T)) {
    detail::no_device_kinds("device_allocator::allocate");
  }
  /// Only the null pointer exists in device memory here.
  template <class T>
  void deallocate(global_ptr<T, kind> p) {
    if (p) detail::no_device_kinds("device_allocator::deallocate");
  }
  template <class T>
  global_ptr<T, kind> to_global_ptr(T* p) const {
    if (p) detail::no_device_kinds("device_allocator::to_global_ptr");
    return {};
  }
  template <class T>
  T* local(global_ptr<T, kind> p) const {
    if (p) detail::no_device_kinds("device_allocator::local");
    return nullptr;
  }
};
///@}

namespace detail {
// The global pointer of the member at byte offset `off` of *p.
template <class M, class T, memory_kind K>
global_ptr<M, K> member_at(const global_ptr<T, K>& p, std::size_t off) {
  if (p.is_null()) return {};
  using byte = std::conditional_t<std::is_const_v<T>, const char, char>;
  return accrete::reinterpret_pointer_cast<M>(accrete::reinterpret_pointer_cast<byte>(p) + std::ptrdiff_t(off));
}
}  // namespace detail

/// static_cast between related element types (spec: Global Pointers): the
/// offset moves as static_cast moves an address (to a base class's place in
/// the object, or back to the derived object), so multiple inheritance
/// works. A virtual base is refused at compile time: its place is found
/// through the object, which a global pointer does not reach.
template <class T, class U, memory_kind K>
global_ptr<T, K> static_pointer_cast(const global_ptr<U, K>& p) {
  static_assert(
      requires(U * u) { static_cast<T*>(u); }, "upcxx::static_pointer_cast: static_cast<T*>(U*) is not valid");
  static_assert(accrete::detail::cast_by_arithmetic<T, U>,
                "upcxx::static_pointer_cast: T is a virtual base of U (or U of T); a global pointer cannot be "
                "cast through virtual inheritance");
  if (p.is_null()) return {};
  return accrete::reinterpret_pointer_cast<T>(accrete::reinterpret_pointer_cast<char>(p) +
                                              accrete::detail::cast_delta<T, U>());
}

/// const_cast of the element type (spec: Global Pointers).
template <class T, class U, memory_kind K>
global_ptr<T, K> const_pointer_cast(const global_ptr<U, K>& p) {
  static_assert(std::is_same_v<std::remove_cv_t<T>, std::remove_cv_t<U>>,
                "upcxx::const_pointer_cast: T and U differ in more than cv-qualifiers");
  return accrete::reinterpret_pointer_cast<T>(p);
}

namespace detail {
// A std::bad_alloc that says what failed.
class bad_alloc_saying : public std::bad_alloc {
 public:
  explicit bad_alloc_saying(std::string what) : what_(std::move(what)) {}
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  std::string what_;
};
}  // namespace detail

/// Thrown by new_ and new_array when the shared segment is full (spec: Storage Management).
class bad_shared_alloc : public detail::bad_alloc_saying {
 public:
  using bad_alloc_saying::bad_alloc_saying;
};

/// What UPC++ throws when a device segment cannot be allocated (a
/// device_allocator's construction). No device kind exists here, so
/// accrete never throws it; it is declared for programs that catch it.
class bad_segment_alloc : public detail::bad_alloc_saying {
 public:
  using bad_alloc_saying::bad_alloc_saying;
};

namespace detail {
template <class F>
auto or_bad_shared_alloc(const char* call, F&& f) {
  try {
    return f();
  } catch (const accrete::segment_exhausted& e) {
    throw bad_shared_alloc(std::string("upcxx::") + call + ": " + e.what());
  }
}
template <class F>
auto or_null(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const accrete::segment_exhausted&) {
    return {};
  }
}
}  // namespace detail

/// `size` bytes of this process's segment, aligned to `alignment`, as a raw
/// pointer; nullptr if the segment is full (spec: Storage Management).
inline void* allocate(std::size_t size, std::size_t alignment = alignof(std::max_align_t)) {
  auto g = detail::or_null([&] { return accrete::allocate(size, alignment); });
  return g ? static_cast<void*>(g.local()) : nullptr;
}

/// Room for n objects of type T (not constructed); a null pointer if the
/// segment is full (spec: Storage Management).
template <class T, std::size_t Alignment = alignof(T)>
global_ptr<T> allocate(std::size_t n = 1) {
  return detail::or_null(
      [&] { return accrete::reinterpret_pointer_cast<T>(accrete::allocate(n * sizeof(T), Alignment)); });
}

/// Bytes in this process's shared segment, and bytes of it allocated now
/// (spec: Storage Management).
///@{
inline std::int64_t shared_segment_size() { return std::int64_t(accrete::segment_size()); }
inline std::int64_t shared_segment_used() { return std::int64_t(accrete::segment_used()); }
///@}

/// Releases memory from allocate() (null: nothing).
///@{
inline void deallocate(void* p) {
  if (p && !accrete::detail::runtime_ended()) accrete::deallocate(accrete::to_global_ptr(static_cast<std::byte*>(p)));
}
///@}
using accrete::deallocate;

/// Constructs a T in this process's segment; throws bad_shared_alloc when
/// it is full, or returns null with std::nothrow (spec: Storage Management).
///@{
// The form with arguments names its first one, so that it is more
// specialized than accrete::new_ (a pack alone), which an unqualified
// call with an accrete-typed argument (a global_ptr) also finds by
// argument-dependent lookup.
template <class T>
global_ptr<T> new_() {
  return detail::or_bad_shared_alloc("new_", [&] { return accrete::new_<T>(); });
}
template <class T, class A0, class... Args>
global_ptr<T> new_(A0&& a0, Args&&... args) {
  return detail::or_bad_shared_alloc(
      "new_", [&] { return accrete::new_<T>(std::forward<A0>(a0), std::forward<Args>(args)...); });
}
template <class T, class... Args>
global_ptr<T> new_(const std::nothrow_t&, Args&&... args) {
  return detail::or_null([&] { return accrete::new_<T>(std::forward<Args>(args)...); });
}
///@}

/// n default-constructed Ts in this process's segment (spec: Storage Management).
///@{
template <class T>
global_ptr<T> new_array(std::size_t n) {
  return detail::or_bad_shared_alloc("new_array", [&] { return accrete::new_array<T>(n); });
}
template <class T>
global_ptr<T> new_array(std::size_t n, const std::nothrow_t&) {
  return detail::or_null([&] { return accrete::new_array<T>(n); });
}
///@}

using accrete::delete_;
using accrete::delete_array;

// ---- Futures and promises ---------------------------------------------------------------

using accrete::future;
using accrete::make_future;
using accrete::when_all;

/// UPC++'s promise (spec: Futures and Promises): one dependency counter,
/// initially `dependency_count` (1); fulfill_result(values...) stores the
/// values and fulfills one dependency, so `promise<int> p;
/// p.fulfill_result(3);` is ready, and a promise handed to operations
/// (as_promise) is finished with finalize(). (accrete::promise, which this
/// builds on, counts the values apart from the anonymous dependencies.)
/// Completion, progress and thread safety as accrete::promise.
template <class... T>
class promise : public accrete::promise<T...> {
  using base = accrete::promise<T...>;

 public:
  /// dependency_count >= 1 for a promise of values (they fulfill one).
  explicit promise(std::intptr_t dependency_count = 1) : base(base_count(dependency_count)) {}
  /// Copies are handles on the same state (as UPC++'s): a dependency
  /// fulfilled through one is fulfilled for all, and the future is the same.
  ///@{
  promise(const promise& o) : base(o, typename base::share_t{}) {}
  promise& operator=(const promise& o) {
    if (this != &o) *this = promise(o);
    return *this;
  }
  ///@}
  promise(promise&&) noexcept = default;
  promise& operator=(promise&&) noexcept = default;

  /// Stores the values (once) and fulfills one dependency.
  template <class... U>
  void fulfill_result(U&&... values) {
    base::fulfill_result(std::forward<U>(values)...);
    // accrete's promise<> counts no value: the one dependency is anonymous.
    if constexpr (sizeof...(T) == 0) base::fulfill_anonymous(1);
  }

 private:
  static std::intptr_t base_count(std::intptr_t n) {
    if constexpr (sizeof...(T) == 0) {
      return n;
    } else {
      // The base counts the values as a dependency of their own.
      if (n < 1)
        throw std::logic_error("upcxx::promise: a promise of values needs a dependency count of at least 1 (got " +
                               std::to_string(n) + ")");
      return n - 1;
    }
  }
};

/// A future of x: x itself if it is a future, a ready future<X> otherwise
/// (spec: Futures and Promises).
using accrete::to_future;

// ---- Progress ------------------------------------------------------------------------

using accrete::progress_level;

/// progress() and progress(progress_level::user) run callbacks and
/// incoming RPCs; progress_level::internal only moves data (spec:
/// Progress). accrete's own functions, so that an unqualified call finds
/// one function.
using accrete::progress;
/// Whether the caller is a callback, lpc or RPC body run by user-level
/// progress (spec: Progress, the restricted context).
using accrete::in_progress;
/// Whether the calling thread's personas from `ps` up still need internal
/// progress, and progress until they do not (spec: Progress). The answer
/// and the work cover all of this process's outstanding communication, a
/// superset of what the scope names.
///@{
inline bool progress_required(accrete::persona_scope& = accrete::top_persona_scope()) {
  return accrete::progress_required();
}
inline void discharge(accrete::persona_scope& = accrete::top_persona_scope()) { accrete::discharge(); }
///@}

// ---- Personas -----------------------------------------------------------------------------------

/// Agents that run callbacks, held by threads (spec: Personas;
/// accrete/persona.hpp). In the par thread mode (ACCRETE_THREAD_MODE=par,
/// or a program compiled with UPCXX_THREADMODE=1) several threads
/// communicate, each through the personas it holds.
using accrete::current_persona;
using accrete::default_persona;
using accrete::default_persona_scope;
using accrete::liberate_master_persona;
using accrete::master_persona;
using accrete::persona;
using accrete::persona_scope;
using accrete::top_persona_scope;

// ---- Completion -----------------------------------------------------------------------

namespace detail {
struct op_future {};
// Promise requests hold their own handle on the promise's state (a
// promise is a handle: the one named may be a temporary copy).
template <class... T>
struct op_promise {
  promise<T...> p;
};
struct src_future {};
template <class... T>
struct src_promise {
  promise<T...> p;
};
struct src_blocking {};
struct src_defer_future {};
template <class... T>
struct src_defer_promise {
  promise<T...> p;
};
struct src_buffered {};
// A callback run on a persona at user-level progress after the event;
// Src: a source event (the callback takes no arguments).
template <class Fn, bool Src>
struct lpc_cx {
  static constexpr bool source = Src;
  persona* who;
  Fn fn;
};
// Future or promise notification delivered at the next user-level
// progress even when the operation finished inside the call.
struct op_defer_future {};
template <class... T>
struct op_defer_promise {
  promise<T...> p;
};
struct remote_rpc {
  accrete::remote_cx::rpc_cx cx;
};

}  // namespace detail

/// A set of completion requests (spec: Completion), made by the
/// operation_cx, source_cx and remote_cx factories and combined with |.
/// It is a type of namespace upcxx, as in UPC++, so an unqualified call
/// with completion requests (`rput(v, gp, operation_cx::as_future())`)
/// finds upcxx's functions by argument-dependent lookup.
template <class... C>
struct completions {
  /// The requests, in the order they were combined; internal.
  std::tuple<C...> items;
  /// Completion requests combine with | (spec: Completion).
  template <class... B>
  friend completions<C..., B...> operator|(completions a, completions<B...> b) {
    return {std::tuple_cat(std::move(a.items), std::move(b.items))};
  }
};

namespace detail {
using upcxx::completions;

template <class X>
inline constexpr bool is_completions = false;
template <class... C>
inline constexpr bool is_completions<completions<C...>> = true;

template <class X, class... C>
inline constexpr std::size_t count_of = (std::size_t(std::is_same_v<X, C>) + ... + 0);
template <class X, class Cxs>
inline constexpr std::size_t count_in = 0;
template <class X, class... C>
inline constexpr std::size_t count_in<X, completions<C...>> = count_of<X, C...>;
template <template <class...> class X, class C>
inline constexpr bool is_instance = false;
template <template <class...> class X, class... A>
inline constexpr bool is_instance<X, X<A...>> = true;
}  // namespace detail

// The unnamed forms as_future() and as_promise(p) are the eager ones unless
// the translation unit defines UPCXX_DEFER_COMPLETION non-zero before
// including UPC++ (UPC++'s implementation-defined switch). Each choice is
// its own inline namespace, so translation units that choose differently
// link together without two definitions of one function.
#if defined(UPCXX_DEFER_COMPLETION) && UPCXX_DEFER_COMPLETION
#define UPCXX_DETAIL_CX_DEFAULT defer_default
#define UPCXX_DETAIL_CX_FUTURE as_defer_future
#define UPCXX_DETAIL_CX_PROMISE as_defer_promise
#else
#define UPCXX_DETAIL_CX_DEFAULT eager_default
#define UPCXX_DETAIL_CX_FUTURE as_eager_future
#define UPCXX_DETAIL_CX_PROMISE as_eager_promise
#endif
#define UPCXX_DETAIL_CX_DEFAULTS                               \
  inline namespace UPCXX_DETAIL_CX_DEFAULT {                   \
  inline auto as_future() { return UPCXX_DETAIL_CX_FUTURE(); } \
  template <class... T>                                        \
  auto as_promise(const promise<T...>& p) {                    \
    return UPCXX_DETAIL_CX_PROMISE(p);                         \
  }                                                            \
  }

/// Operation completion: the transfer is complete (spec: Completion).
namespace operation_cx {
/// Eager: ready at return when the operation finished inside the call.
///@{
inline detail::completions<detail::op_future> as_eager_future() { return {}; }
template <class... T>
detail::completions<detail::op_promise<T...>> as_eager_promise(const promise<T...>& p) {
  return {{detail::op_promise<T...>{p}}};
}
///@}
/// Deferred: notified no earlier than the next user-level progress, even
/// when the operation finished inside the call.
///@{
inline detail::completions<detail::op_defer_future> as_defer_future() { return {}; }
template <class... T>
detail::completions<detail::op_defer_promise<T...>> as_defer_promise(const promise<T...>& p) {
  return {{detail::op_defer_promise<T...>{p}}};
}
///@}
/// as_future(): report through a returned future; as_promise(p): report by
/// fulfilling p (one anonymous dependency registered at once). Eager, or
/// deferred where UPCXX_DEFER_COMPLETION is non-zero.
UPCXX_DETAIL_CX_DEFAULTS
/// Run f(values...) on persona `who` during its user-level progress after
/// the operation completes (values: an rget's value; none for a put).
template <class F>
detail::completions<detail::lpc_cx<std::decay_t<F>, false>> as_lpc(persona& who, F&& f) {
  return {{detail::lpc_cx<std::decay_t<F>, false>{&who, std::forward<F>(f)}}};
}
}  // namespace operation_cx

/// Source completion: the source buffer may be reused (spec: Completion).
namespace source_cx {
/// Eager: ready at return when the source was released inside the call.
///@{
inline detail::completions<detail::src_future> as_eager_future() { return {}; }
template <class... T>
detail::completions<detail::src_promise<T...>> as_eager_promise(const promise<T...>& p) {
  return {{detail::src_promise<T...>{p}}};
}
///@}
/// Deferred: notified no earlier than the next user-level progress.
///@{
inline detail::completions<detail::src_defer_future> as_defer_future() { return {}; }
template <class... T>
detail::completions<detail::src_defer_promise<T...>> as_defer_promise(const promise<T...>& p) {
  return {{detail::src_defer_promise<T...>{p}}};
}
///@}
/// as_future(): report through a returned future; as_promise(p): report by
/// fulfilling p (one anonymous dependency registered at once). Eager, or
/// deferred where UPCXX_DEFER_COMPLETION is non-zero.
UPCXX_DETAIL_CX_DEFAULTS
/// The call returns only when the source may be reused (it waits for the
/// transfer with user-level progress).
inline detail::completions<detail::src_blocking> as_blocking() { return {}; }
/// The call copies the source first, so it may be reused when the call returns.
inline detail::completions<detail::src_buffered> as_buffered() { return {}; }
/// Run f() on persona `who` during its user-level progress once the source
/// may be reused.
template <class F>
detail::completions<detail::lpc_cx<std::decay_t<F>, true>> as_lpc(persona& who, F&& f) {
  return {{detail::lpc_cx<std::decay_t<F>, true>{&who, std::forward<F>(f)}}};
}
}  // namespace source_cx
#undef UPCXX_DETAIL_CX_DEFAULTS
#undef UPCXX_DETAIL_CX_DEFAULT
#undef UPCXX_DETAIL_CX_FUTURE
#undef UPCXX_DETAIL_CX_PROMISE

/// Remote completion: run f(args...) at the target once the data is there,
/// during its user-level progress (spec: Completion; accrete/remote_completion.hpp).
namespace remote_cx {
template <class F, class... Args>
detail::completions<detail::remote_rpc> as_rpc(F&& f, Args&&... args) {
  return {{detail::remote_rpc{accrete::remote_cx::as_rpc(std::forward<F>(f), std::forward<Args>(args)...)}}};
}
}  // namespace remote_cx

namespace detail {

// The value a call returns for its completion requests: nothing, one
// future, or a tuple of futures in request order.
template <class... F>
auto returned(std::tuple<F...>&& t) {
  if constexpr (sizeof...(F) == 0)
    return;
  else if constexpr (sizeof...(F) == 1)
    return std::get<0>(std::move(t));
  else
    return std::move(t);
}

// A promise request on an operation whose completion is `done`: one
// dependency now, fulfilled at completion, with the value when the
// operation produces one for a promise<T> (rget of one value).
template <class Done, class... P>
void fulfill_when(const Done& done, const promise<P...>& p) {
  promise<P...> h = p;  // the callback's own handle
  h.require_anonymous(1);
  if constexpr (sizeof...(P) > 0 && std::is_same_v<Done, future<P...>>) {
    done.then([h = std::move(h)](const P&... v) mutable { h.fulfill_result(v...); });  // fulfills the one required
  } else {
    done.then([h = std::move(h)](const auto&...) mutable { h.fulfill_anonymous(1); });
  }
}

template <class X>
inline constexpr bool is_lpc = false;
template <class Fn, bool Src>
inline constexpr bool is_lpc<lpc_cx<Fn, Src>> = true;

// A future of these values that becomes ready at the next user-level
// progress, not before.
template <class... V>
future<std::decay_t<V>...> deferred(const V&... v) {
  auto pr = std::make_shared<accrete::promise<std::decay_t<V>...>>();
  auto f = pr->get_future();
  accrete::run_at_progress([pr, v...] {
    if constexpr (sizeof...(V) > 0) pr->fulfill_result(v...);
    pr->finalize();
  });
  return f;
}

// Delivers every request of cxs for an operation whose completion is
// `done` (future<> or future<T>) and returns what the call returns.
template <class Done, class... C>
auto deliver(const Done& done, completions<C...>& cxs) {
  auto one = [&](auto& c) {
    using X = std::remove_cvref_t<decltype(c)>;
    if constexpr (std::is_same_v<X, op_future>)
      return std::tuple<Done>(done);
    else if constexpr (std::is_same_v<X, src_future>)
      return std::tuple<future<>>(done.then([](const auto&...) {}));
    else if constexpr (is_instance<op_promise, X> || is_instance<src_promise, X>) {
      fulfill_when(done, c.p);
      return std::tuple<>();
    } else if constexpr (std::is_same_v<X, op_defer_future>) {
      return std::tuple<Done>(done.then([](const auto&... v) { return deferred(v...); }));
    } else if constexpr (is_instance<op_defer_promise, X>) {
      fulfill_when(done.then([](const auto&... v) { return deferred(v...); }), c.p);
      return std::tuple<>();
    } else if constexpr (std::is_same_v<X, src_defer_future>) {
      return std::tuple<future<>>(done.then([](const auto&...) { return deferred(); }));
    } else if constexpr (is_instance<src_defer_promise, X>) {
      fulfill_when(done.then([](const auto&...) { return deferred(); }), c.p);
      return std::tuple<>();
    } else if constexpr (is_lpc<X>) {
      persona* who = c.who;
      done.then([who, fn = std::move(c.fn)](const auto&... v) mutable {
        if constexpr (X::source)
          who->lpc_ff(std::move(fn));
        else
          who->lpc_ff([fn = std::move(fn), v...]() mutable { fn(v...); });
      });
      return std::tuple<>();
    } else {
      if constexpr (std::is_same_v<X, src_blocking>) done.wait();
      return std::tuple<>();
    }
  };
  return returned(std::apply([&](auto&... c) { return std::tuple_cat(one(c)...); }, cxs.items));
}

// Operation completion requests; rget takes only these, copy these and one
// remote completion.
template <class X>
inline constexpr bool is_op_lpc = false;
template <class Fn>
inline constexpr bool is_op_lpc<lpc_cx<Fn, false>> = true;
template <class C>
inline constexpr bool is_op_cx = std::is_same_v<C, op_future> || is_instance<op_promise, C> ||
                                 std::is_same_v<C, op_defer_future> || is_instance<op_defer_promise, C> || is_op_lpc<C>;
template <class Cxs>
inline constexpr bool has_op_cx = false;
template <class... C>
inline constexpr bool has_op_cx<completions<C...>> = (is_op_cx<C> || ...);
template <class Cxs>
inline constexpr bool get_cx_ok = false;
template <class... C>
inline constexpr bool get_cx_ok<completions<C...>> = (is_op_cx<C> && ...);
template <class Cxs>
inline constexpr bool copy_cx_ok = false;
template <class... C>
inline constexpr bool copy_cx_ok<completions<C...>> = count_of<remote_rpc, C...> <= 1 &&
                                                      ((is_op_cx<C> || std::is_same_v<C, remote_rpc>)&&...);

template <class... C>
void check_put_cx() {
  static_assert(count_of<remote_rpc, C...> <= 1, "upcxx: at most one remote_cx::as_rpc per call");
  static_assert(count_of<src_blocking, C...> + count_of<src_buffered, C...> <= 1,
                "upcxx: at most one of source_cx::as_blocking and source_cx::as_buffered per call");
}

// UPC++'s words for RMA on a type that cannot move as bytes (its own
// static_assert says "TriviallySerializable" too), rather than a list of
// overloads that did not match. A class, so that the assertion fires where
// it is named, before the call that would not match.
template <class T>
struct rma_type {
  static_assert(accrete::detail::rma_ok<T>,
                "upcxx: RMA operations only work on TriviallySerializable types; this type is not trivially "
                "copyable (specialize upcxx::is_trivially_serializable<T> to true if its bytes may be copied)");
  static constexpr bool ok = true;
};

template <class T, class... C>
auto put_value(const T& value, global_ptr<T> dest, completions<C...>& cxs) {
  static_assert(rma_type<T>::ok);
  check_put_cx<C...>();
  future<> done;
  if constexpr (count_of < remote_rpc, C... >> 0)
    done = accrete::rput(value, dest, std::move(std::get<remote_rpc>(cxs.items).cx));
  else
    done = accrete::rput(value, dest);
  return deliver(done, cxs);
}

template <class T, class... C>
auto put(const T* src, global_ptr<T> dest, std::size_t count, completions<C...>& cxs) {
  static_assert(rma_type<T>::ok);
  check_put_cx<C...>();
  std::shared_ptr<std::vector<T>> copy;
  if constexpr (count_of < src_buffered, C... >> 0) {
    copy = std::make_shared<std::vector<T>>(src, src + count);
    src = copy->data();
  }
  future<> done;
  if constexpr (count_of < remote_rpc, C... >> 0)
    done = accrete::rput(src, dest, count, std::move(std::get<remote_rpc>(cxs.items).cx));
  else
    done = accrete::rput(src, dest, count);
  if (copy) done = done.then([copy] {});  // keeps the copy until the transfer completes
  return deliver(done, cxs);
}

// A flood's request, operation_cx::as_promise(promise<>&) alone, goes to
// accrete's counted promise overloads: no future and no callback per
// operation (the general path allocates both).
template <class Cxs>
inline constexpr bool lone_op_promise = std::is_same_v<Cxs, completions<op_promise<>>>;
}  // namespace detail

// ---- One-sided communication -------------------------------------------------------------------------

// Without completion requests each call is accrete's own function (a
// future for operation completion, as operation_cx::as_future() gives),
// so a program with `using namespace upcxx;` that names them unqualified
// finds one function, not accrete's by argument-dependent lookup (the
// pointers are accrete's) and a second one of upcxx's. The overloads
// below take the completion requests.
using accrete::rget;
using accrete::rget_irregular;
using accrete::rget_regular;
using accrete::rget_strided;
using accrete::rput;
using accrete::rput_irregular;
using accrete::rput_regular;
using accrete::rput_strided;

/// RMA of a type that is not TriviallySerializable: a compile-time error
/// naming the requirement (accrete's forms above take only the others).
///@{
template <class T>
requires(!accrete::detail::rma_ok<T>) future<> rput(const T&, global_ptr<T>) {
  static_assert(detail::rma_type<T>::ok);
  return {};
}
template <class T>
requires(!accrete::detail::rma_ok<T>) future<> rput(const T*, global_ptr<T>, std::size_t) {
  static_assert(detail::rma_type<T>::ok);
  return {};
}
template <class S>
requires(!accrete::detail::rma_ok<std::remove_const_t<S>>) future<std::remove_const_t<S>> rget(global_ptr<S>) {
  static_assert(detail::rma_type<std::remove_const_t<S>>::ok);
  return {};
}
template <class S>
requires(!accrete::detail::rma_ok<std::remove_const_t<S>>) future<> rget(global_ptr<S>, std::remove_const_t<S>*,
                                                                         std::size_t) {
  static_assert(detail::rma_type<std::remove_const_t<S>>::ok);
  return {};
}
///@}

/// Copies count elements from src to dest (spec: One-Sided Communication). Completions as
/// requested (default: a future for operation completion).
template <class T, class Cxs>
requires detail::is_completions<std::remove_cvref_t<Cxs>>
auto rput(const T* src, global_ptr<T> dest, std::size_t count, Cxs&& cxs) {
  if constexpr (detail::lone_op_promise<std::remove_cvref_t<Cxs>>)
    accrete::rput(src, dest, count, std::get<0>(cxs.items).p);
  else
    return detail::put(src, dest, count, cxs);
}

/// Puts one value (spec: One-Sided Communication). The value is copied at once, so any source
/// completion is delivered before the call returns.
template <class T, class Cxs>
requires detail::is_completions<std::remove_cvref_t<Cxs>>
auto rput(T value, global_ptr<T> dest, Cxs&& cxs) { return detail::put_value(value, dest, cxs); }

/// Copies count elements from src (which may point to const) into dest
/// (spec: One-Sided Communication).
template <class S, class T = std::remove_const_t<S>, class Cxs>
requires detail::is_completions<std::remove_cvref_t<Cxs>>
auto rget(global_ptr<S> src, std::type_identity_t<T>* dest, std::size_t count, Cxs&& cxs) {
  static_assert(detail::rma_type<T>::ok);
  static_assert(detail::get_cx_ok<std::remove_cvref_t<Cxs>>, "upcxx::rget: takes operation completions only");
  if constexpr (detail::lone_op_promise<std::remove_cvref_t<Cxs>>)
    accrete::rget(src, dest, count, std::get<0>(cxs.items).p);
  else
    return detail::deliver(accrete::rget(src, dest, count), cxs);
}

/// The value at src (spec: One-Sided Communication): operation_cx::as_future() gives future<T>,
/// as_promise(promise<T>&) fulfills the promise with it.
template <class S, class Cxs>
requires detail::is_completions<std::remove_cvref_t<Cxs>>
auto rget(global_ptr<S> src, Cxs&& cxs) {
  static_assert(detail::rma_type<std::remove_const_t<S>>::ok);
  static_assert(detail::get_cx_ok<std::remove_cvref_t<Cxs>>, "upcxx::rget: takes operation completions only");
  return detail::deliver(accrete::rget(src), cxs);
}

namespace detail {
// The remote completion of a copy, when one was requested (spec: it runs at
// dest's owner, in its master persona's user-level progress, once the data
// is there; never inside the call, also when dest is the caller's).
template <class C, class Cxs>
std::optional<accrete::remote_cx::rpc_cx> take_remote_cx(Cxs& cxs) {
  static_assert(copy_cx_ok<C>, "upcxx::copy: takes operation completions and at most one remote_cx::as_rpc only");
  std::optional<accrete::remote_cx::rpc_cx> rcx;
  if constexpr (count_in < remote_rpc, C >> 0) rcx.emplace(std::move(std::get<remote_rpc>(cxs.items).cx));
  return rcx;
}
// Sends rcx to `rank` after `data` (the copy's arrival at rank's memory)
// completes: a put of no bytes with the remote completion, so the RPC
// leaves after the data, as for rput.
inline future<> then_remote_cx(future<> data, int rank, std::optional<accrete::remote_cx::rpc_cx> rcx) {
  if (!rcx) return data;
  auto r = std::make_shared<accrete::remote_cx::rpc_cx>(std::move(*rcx));
  return data.then([rank, r] {
    static constexpr std::byte nothing{};
    return accrete::detail::put_then_rpc(rank, 0, &nothing, 0, std::move(*r));
  });
}
// A copy from local memory: one rput (with the remote completion, if any).
template <class T>
future<> copy_from_local(const T* src, global_ptr<T> dest, std::size_t count,
                         std::optional<accrete::remote_cx::rpc_cx> rcx) {
  if (count == 0) {
    if (!rcx) return make_future();
    if (!dest) throw accrete::bad_global_ptr("upcxx::copy: remote completion with a null destination");
    return then_remote_cx(make_future(), dest.where(), std::move(rcx));
  }
  return rcx ? accrete::rput(src, dest, count, std::move(*rcx)) : accrete::rput(src, dest, count);
}
}  // namespace detail

/// Copies count elements between two global pointers (spec: One-Sided
/// Communication, copy): either end may be on any process, the source may
/// point to const, and either may have kind parameter `any` (every pointer
/// names host memory here). A remote completion runs at dest.where().
template <class S, memory_kind Ks, class T, memory_kind Kd, class Cxs = detail::completions<detail::op_future>>
requires(std::is_same_v<std::remove_const_t<S>, T>&& detail::is_completions<std::remove_cvref_t<Cxs>>) auto copy(
    global_ptr<S, Ks> src_any, global_ptr<T, Kd> dest_any, std::size_t count, Cxs&& cxs = operation_cx::as_future()) {
  auto rcx = detail::take_remote_cx<std::remove_cvref_t<Cxs>>(cxs);
  const global_ptr<const T> src = static_kind_cast<memory_kind::host>(src_any);
  const global_ptr<T> dest = static_kind_cast<memory_kind::host>(dest_any);
  if (count > 0 && (!src || !dest))
    throw accrete::bad_global_ptr(std::string("upcxx::copy: null ") + (src ? "destination" : "source") +
                                  " pointer with count " + std::to_string(count));
  if (count > 0) {
    // Both ends before any transfer: a copy between two remote ends would
    // otherwise allocate its bounce buffer for a count no segment holds.
    accrete::detail::checked_bytes("copy", src, count);
    accrete::detail::checked_bytes("copy", dest, count);
  }
  future<> done;
  if (count == 0 || src.is_local()) {
    done = detail::copy_from_local(src.local(), dest, count, std::move(rcx));
  } else if (dest.is_local()) {
    done = detail::then_remote_cx(accrete::rget(src, dest.local(), count), dest.where(), std::move(rcx));
  } else {
    // Neither end is reachable by load/store: through this process, then a put.
    auto buf = std::make_shared<std::vector<T>>(count);
    auto r = std::make_shared<std::optional<accrete::remote_cx::rpc_cx>>(std::move(rcx));
    done = accrete::rget(src, buf->data(), count).then([buf, r, dest, count] {
      return detail::copy_from_local<T>(buf->data(), dest, count, std::move(*r)).then([buf] {});
    });
  }
  return detail::deliver(done, cxs);
}

/// copy with a local end (spec: copy takes a global pointer or a pointer
/// to host memory at either end): an rput or an rget. A remote completion
/// runs at dest's owner: dest.where() for a put, the caller for a get.
///@{
template <class T, memory_kind Kd, class Cxs = detail::completions<detail::op_future>>
requires detail::is_completions<std::remove_cvref_t<Cxs>>
auto copy(const T* src, global_ptr<T, Kd> dest, std::size_t count, Cxs&& cxs = operation_cx::as_future()) {
  auto rcx = detail::take_remote_cx<std::remove_cvref_t<Cxs>>(cxs);
  return detail::deliver(detail::copy_from_local(src, static_kind_cast<memory_kind::host>(dest), count, std::move(rcx)),
                         cxs);
}
template <class S, memory_kind Ks, class Cxs = detail::completions<detail::op_future>>
requires detail::is_completions<std::remove_cvref_t<Cxs>>
auto copy(global_ptr<S, Ks> src, std::remove_const_t<S>* dest, std::size_t count,
          Cxs&& cxs = operation_cx::as_future()) {
  auto rcx = detail::take_remote_cx<std::remove_cvref_t<Cxs>>(cxs);
  return detail::deliver(detail::then_remote_cx(accrete::rget(static_kind_cast<memory_kind::host>(src), dest, count),
                                                accrete::rank_me(), std::move(rcx)),
                         cxs);
}
///@}

namespace detail {
// A non-contiguous put: `start(rcx...)` issues accrete's call, with the
// remote completion when one was requested, and returns its operation
// completion. The source is reusable only at operation completion (the
// fragments are read in place), so source_cx::as_buffered waits for it, as
// as_blocking does.
template <class... C, class Start>
auto put_fragments(completions<C...>& cxs, Start&& start) {
  check_put_cx<C...>();
  future<> done;
  if constexpr (count_of < remote_rpc, C... >> 0)
    done = start(std::move(std::get<remote_rpc>(cxs.items).cx));
  else
    done = start();
  if constexpr (count_of < src_buffered, C... >> 0) done.wait();
  return deliver(done, cxs);
}
// The first Dim elements at p (a null p only for Dim = 0).
template <std::size_t Dim, class X>
std::array<X, Dim> array_of(const X* p) {
  std::array<X, Dim> a{};
  for (std::size_t i = 0; i < Dim; ++i) a[i] = p[i];
  return a;
}
}  // namespace detail

/// Non-contiguous one-sided communication (spec: Non-contiguous One-Sided
/// Communication): irregular, regular and strided puts and gets, with any
/// completion requests (default: a future for operation completion). The
/// layout rules and errors are accrete's (accrete/rma_irregular.hpp,
/// accrete/rma_strided.hpp). For puts, source completion is operation
/// completion.
///@{
template <class SrcIt, class DstIt, class Cxs>
requires detail::is_completions<std::remove_cvref_t<Cxs>>
auto rput_irregular(SrcIt src_begin, SrcIt src_end, DstIt dest_begin, DstIt dest_end, Cxs&& cxs) {
  return detail::put_fragments(cxs, [&](auto&&... rcx) {
    return accrete::rput_irregular(src_begin, src_end, dest_begin, dest_end, std::move(rcx)...);
  });
}
template <class SrcIt, class DstIt, class Cxs>
requires detail::is_completions<std::remove_cvref_t<Cxs>>
auto rget_irregular(SrcIt src_begin, SrcIt src_end, DstIt dest_begin, DstIt dest_end, Cxs&& cxs) {
  static_assert(detail::get_cx_ok<std::remove_cvref_t<Cxs>>, "upcxx::rget_irregular: takes operation completions only");
  return detail::deliver(accrete::rget_irregular(src_begin, src_end, dest_begin, dest_end), cxs);
}
template <class SrcIt, class DstIt, class Cxs>
requires detail::is_completions<std::remove_cvref_t<Cxs>>
auto rput_regular(SrcIt src_begin, SrcIt src_end, std::size_t src_len, DstIt dest_begin, DstIt dest_end,
                  std::size_t dest_len, Cxs&& cxs) {
  return detail::put_fragments(cxs, [&](auto&&... rcx) {
    return accrete::rput_regular(src_begin, src_end, src_len, dest_begin, dest_end, dest_len, std::move(rcx)...);
  });
}
template <class SrcIt, class DstIt, class Cxs>
requires detail::is_completions<std::remove_cvref_t<Cxs>>
auto rget_regular(SrcIt src_begin, SrcIt src_end, std::size_t src_len, DstIt dest_begin, DstIt dest_end,
                  std::size_t dest_len, Cxs&& cxs) {
  static_assert(detail::get_cx_ok<std::remove_cvref_t<Cxs>>, "upcxx::rget_regular: takes operation completions only");
  return detail::deliver(accrete::rget_regular(src_begin, src_end, src_len, dest_begin, dest_end, dest_len), cxs);
}
template <std::size_t Dim, class T, class Cxs>
requires detail::is_completions<std::remove_cvref_t<Cxs>>
auto rput_strided(const T* src_base, const std::array<std::ptrdiff_t, Dim>& src_strides, global_ptr<T> dest_base,
                  const std::array<std::ptrdiff_t, Dim>& dest_strides, const std::array<std::size_t, Dim>& extents,
                  Cxs&& cxs) {
  return detail::put_fragments(cxs, [&](auto&&... rcx) {
    return accrete::rput_strided<Dim>(src_base, src_strides, dest_base, dest_strides, extents, std::move(rcx)...);
  });
}
template <std::size_t Dim, class S, class T = std::remove_const_t<S>, class Cxs>
requires detail::is_completions<std::remove_cvref_t<Cxs>>
auto rget_strided(global_ptr<S> src_base, const std::array<std::ptrdiff_t, Dim>& src_strides,
                  std::type_identity_t<T>* dest_base, const std::array<std::ptrdiff_t, Dim>& dest_strides,
                  const std::array<std::size_t, Dim>& extents, Cxs&& cxs) {
  static_assert(detail::get_cx_ok<std::remove_cvref_t<Cxs>>, "upcxx::rget_strided: takes operation completions only");
  return detail::deliver(accrete::rget_strided<Dim, S>(src_base, src_strides, dest_base, dest_strides, extents), cxs);
}
///@}
/// The strided forms with the strides and extents as arrays of Dim
/// elements given by pointer (the spec's other form).
///@{
template <std::size_t Dim, class T, class Cxs = detail::completions<detail::op_future>>
requires detail::is_completions<std::remove_cvref_t<Cxs>>
auto rput_strided(const T* src_base, const std::ptrdiff_t* src_strides, global_ptr<T> dest_base,
                  const std::ptrdiff_t* dest_strides, const std::size_t* extents,
                  Cxs&& cxs = operation_cx::as_future()) {
  return rput_strided<Dim>(src_base, detail::array_of<Dim>(src_strides), dest_base, detail::array_of<Dim>(dest_strides),
                           detail::array_of<Dim>(extents), std::forward<Cxs>(cxs));
}
template <std::size_t Dim, class S, class T = std::remove_const_t<S>,
          class Cxs = detail::completions<detail::op_future>>
requires detail::is_completions<std::remove_cvref_t<Cxs>>
auto rget_strided(global_ptr<S> src_base, const std::ptrdiff_t* src_strides, std::type_identity_t<T>* dest_base,
                  const std::ptrdiff_t* dest_strides, const std::size_t* extents,
                  Cxs&& cxs = operation_cx::as_future()) {
  return rget_strided<Dim, S>(src_base, detail::array_of<Dim>(src_strides), dest_base,
                              detail::array_of<Dim>(dest_strides), detail::array_of<Dim>(extents),
                              std::forward<Cxs>(cxs));
}
///@}

// ---- RPC, distributed objects, serialization----------------------------------------------

using accrete::dist_id;
using accrete::dist_object;
using accrete::make_view;
using accrete::rpc;
using accrete::rpc_ff;
using accrete::view;
/// The iterator of a received view<T> (spec: Serialization): the
/// deserialized type of view<T, Iter> is view<deserialized_type_t<T>,
/// deserializing_iterator<T>>, which is view<deserialized_type_t<T>>:
/// const T* for a trivially serializable T, else an iterator over the
/// elements read back, with deserialize_into(storage).
using accrete::deserializing_iterator;
/// upcxx::optional (UPC++ 2022.9: "the interface of std::optional") is
/// std::optional itself, with its helpers, so the two never clash under
/// `using namespace std;`. Reader::read_into and
/// deserializing_iterator::deserialize_into take one as storage.
using std::bad_optional_access;
using std::make_optional;
using std::nullopt;
using std::nullopt_t;
using std::optional;

/// rpc with completion requests (spec: Remote Procedure Call): operation
/// completion is the arrival of f's result (operation_cx::as_future gives
/// the future<R> plain rpc returns; as_promise(promise<R>&) receives R);
/// source completion is immediate, the arguments being serialized at the
/// call.
template <class Cxs, class F, class... Args>
requires detail::is_completions<std::remove_cvref_t<Cxs>>
auto rpc(intrank_t recipient, Cxs&& cxs, F&& f, Args&&... args) {
  auto done = accrete::rpc(recipient, std::forward<F>(f), std::forward<Args>(args)...);
  return detail::deliver(done, cxs);
}

/// rpc_ff with source completion requests (immediate: the arguments are
/// serialized at the call); rpc_ff has no operation completion.
template <class Cxs, class F, class... Args>
requires detail::is_completions<std::remove_cvref_t<Cxs>>
auto rpc_ff(intrank_t recipient, Cxs&& cxs, F&& f, Args&&... args) {
  static_assert(!detail::has_op_cx<std::remove_cvref_t<Cxs>>, "upcxx::rpc_ff: takes source completions only");
  accrete::rpc_ff(recipient, std::forward<F>(f), std::forward<Args>(args)...);
  return detail::deliver(accrete::make_future(), cxs);
}

/// rpc and rpc_ff to the member of rank `recipient` in `t`, with
/// completion requests (spec: Remote Procedure Call): as above, the rank
/// translated as for rpc(t, recipient, f, args...).
///@{
template <class Cxs, class F, class... Args>
requires detail::is_completions<std::remove_cvref_t<Cxs>>
auto rpc(const accrete::team& t, intrank_t recipient, Cxs&& cxs, F&& f, Args&&... args) {
  auto done = accrete::rpc(t, recipient, std::forward<F>(f), std::forward<Args>(args)...);
  return detail::deliver(done, cxs);
}
template <class Cxs, class F, class... Args>
requires detail::is_completions<std::remove_cvref_t<Cxs>>
auto rpc_ff(const accrete::team& t, intrank_t recipient, Cxs&& cxs, F&& f, Args&&... args) {
  static_assert(!detail::has_op_cx<std::remove_cvref_t<Cxs>>, "upcxx::rpc_ff: takes source completions only");
  accrete::rpc_ff(t, recipient, std::forward<F>(f), std::forward<Args>(args)...);
  return detail::deliver(accrete::make_future(), cxs);
}
///@}

/// The UPC++ serialization protocol (spec: Serialization): specialize
///
///   template <> struct upcxx::serialization<T> {
///     template <class Writer> static void serialize(Writer& w, const T& x);
///     template <class Reader, class Storage> static T* deserialize(Reader& r, Storage storage);
///   };
///
/// Writer has write(x) and write_sequence(begin, end[, n]); Reader has
/// read<U>(), read_into<U>(storage) (raw storage, or an optional),
/// read_sequence_into<U>(storage, n), read_overwrite<U>(obj),
/// read_sequence_overwrite<U>(objs, n), skip<U>() and skip_sequence<U>(n)
/// (accrete::writer and accrete::reader).
/// deserialize constructs the object with `storage.construct(args...)`,
/// which returns it (UPC++ 2022.9's form). The earlier form,
/// `template <class Reader> static T* deserialize(Reader& r, void* storage)`
/// with a placement new into `storage`, works as well: the storage
/// converts to the address.
///
/// Or give the class a public member type `upcxx_serialization` with the
/// same two static members. deserialize may construct another type than T
/// (its pointer's type is then what an RPC argument of type T reads back
/// as, deserialized_type_t<T>); with the storage form, name that type as
/// a member `using deserialized_type = ...;` of the rule, for
/// storage.construct to make it.
template <class T>
struct serialization {
  /// Marks the primary template (no rule for T); internal.
  using upcxx_no_rule_ = void;
};
template <class T>
requires requires { typename T::upcxx_serialization; }
struct serialization<T> : T::upcxx_serialization {};

namespace detail {
template <class T>
concept user_rule = !requires {
  typename upcxx::serialization<T>::upcxx_no_rule_;
};
// What a rule's storage.construct makes: T, or the rule's deserialized_type.
template <class T>
struct declared_deserialized {
  using type = T;
};
template <class T>
requires requires { typename upcxx::serialization<T>::deserialized_type; }
struct declared_deserialized<T> {
  using type = typename upcxx::serialization<T>::deserialized_type;
};
// The storage a rule's deserialize receives: construct(args...) makes a U
// there and returns it; it also converts to the raw address, the
// parameter of the earlier `deserialize(Reader&, void*)` form, so one call
// serves both forms.
template <class U>
struct construct_storage {
  void* where;
  template <class... A>
  U* construct(A&&... a) const {
    return ::new (where) U(std::forward<A>(a)...);
  }
  operator void*() const noexcept { return where; }
};
// What a user rule's deserialize constructs.
template <class T>
using user_deserialized_t = std::remove_pointer_t<decltype(upcxx::serialization<T>::deserialize(
    std::declval<accrete::reader&>(), std::declval<construct_storage<typename declared_deserialized<T>::type>&>()))>;
}  // namespace detail

/// A callable with some leading arguments bound (spec: RPC, bind): calling
/// it with `more...` calls f(bound..., more...). Serializable when f and
/// the bound values are (a function pointer travels as accrete's RPCs send
/// one), so it may be the function of an rpc or remote_cx::as_rpc; the
/// bound values are serialized and read back at the target.
template <class F, class... B>
struct bound_function {
  F fn;
  std::tuple<B...> bound;
  template <class... A>
  decltype(auto) operator()(A&&... more) {
    return std::apply([&](B&... b) -> decltype(auto) { return std::invoke(fn, b..., std::forward<A>(more)...); },
                      bound);
  }
  template <class... A>
  decltype(auto) operator()(A&&... more) const {
    return std::apply([&](const B&... b) -> decltype(auto) { return std::invoke(fn, b..., std::forward<A>(more)...); },
                      bound);
  }
};

/// f with `args` bound as its first arguments (decayed copies).
template <class F, class... Args>
bound_function<std::decay_t<F>, std::decay_t<Args>...> bind(F&& f, Args&&... args) {
  return {std::forward<F>(f), std::tuple<std::decay_t<Args>...>(std::forward<Args>(args)...)};
}

/// Whether T is serialized as its bytes / at all / what it reads back as
/// (spec: Serialization).
///@{
namespace detail {
template <class T>
struct bytewise_no_rule : std::bool_constant<accrete::detail::bytewise<T> && !user_rule<T>> {};
// The standard types accrete's own rules cover, bytes or not.
template <class T>
struct std_composite : std::false_type {};
template <class A, class B>
struct std_composite<std::pair<A, B>> : std::true_type {};
template <class... T>
struct std_composite<std::tuple<T...>> : std::true_type {};
template <class T, std::size_t N>
struct std_composite<std::array<T, N>> : std::true_type {};
}  // namespace detail
/// A program may specialize it to true for a type that is not trivially
/// copyable but may travel as its bytes (spec: Serialization): such a type
/// is then serialized bytewise. (The conjunction keeps the default from
/// looking for a rule when T is not trivially copyable.)
template <class T>
struct is_trivially_serializable : std::conjunction<std::is_trivially_copyable<T>, detail::bytewise_no_rule<T>> {};
/// A pair, tuple or array is trivially serializable when its elements are
/// (UPC++'s implementation-defined rule): it travels as its bytes, a
/// received view of it is walked by pointer, and RMA moves it.
///@{
template <class A, class B>
struct is_trivially_serializable<std::pair<A, B>> : std::bool_constant<accrete::detail::flat_bytes<std::pair<A, B>>> {};
template <class... T>
struct is_trivially_serializable<std::tuple<T...>> : std::bool_constant<accrete::detail::flat_bytes<std::tuple<T...>>> {
};
template <class T, std::size_t N>
struct is_trivially_serializable<std::array<T, N>> : std::bool_constant<accrete::detail::flat_bytes<std::array<T, N>>> {
};
///@}
template <class T>
struct is_serializable : std::bool_constant<accrete::is_serializable_v<T>> {};
template <class T>
struct deserialized_type {
  using type = accrete::deserialized_type_t<T>;
};
using accrete::deserialized_type_t;
///@}

/// The iterator a received view<T> is walked with (view's default
/// iterator): `const T*` when T travels as its bytes, else UPC++'s
/// deserializing_iterator<T>.
///@{
template <class T>
struct view_default_iterator {
  using type = accrete::deserializing_iterator<T>;
};
template <class T>
using view_default_iterator_t = typename view_default_iterator<T>::type;
///@}

namespace detail {
// Whether a value read back as T may point into the message it came from:
// a view of elements that travel as their bytes does (no copy), and so
// does a pair, tuple, array, optional or vector holding one.
template <class T>
struct references_buffer : std::false_type {};
template <class T, class It>
struct references_buffer<accrete::view<T, It>>
    : std::bool_constant<accrete::serialization<accrete::view<T, It>>::flat> {};
template <class A, class B>
struct references_buffer<std::pair<A, B>> : std::disjunction<references_buffer<A>, references_buffer<B>> {};
template <class... T>
struct references_buffer<std::tuple<T...>> : std::disjunction<references_buffer<T>...> {};
template <class T, std::size_t N>
struct references_buffer<std::array<T, N>> : references_buffer<T> {};
template <class T>
struct references_buffer<std::optional<T>> : references_buffer<T> {};
template <class T, class A>
struct references_buffer<std::vector<T, A>> : references_buffer<T> {};
}  // namespace detail

/// What UPC++ knows of how T is serialized, and a round trip through it
/// (UPC++'s serialization_traits<T>):
/// - `deserialized_type`: what a value written as T reads back as;
/// - `is_serializable`; `is_actually_trivially_serializable`: T travels as
///   its bytes (trivially copyable without a rule, or declared trivially
///   serializable);
/// - `references_buffer`: a value read back may point into the buffer it
///   was read from (a view of trivially serializable elements, or a pair,
///   tuple, array, optional or vector of such views);
/// - `serialize(w, x)`, `deserialize(r, storage)` (returns the object
///   constructed in raw `storage`), `skip(r)`: T's rule, for use inside
///   other rules;
/// - `deserialized_value(x)`: x serialized and read back, as a receiver
///   would see it (not for a type whose value references the buffer, or
///   an array type).
template <class T>
struct serialization_traits {
  using type = T;
  using deserialized_type = accrete::deserialized_type_t<T>;
  static constexpr bool is_serializable = accrete::is_serializable_v<T>;
  static constexpr bool is_actually_trivially_serializable =
      is_serializable && accrete::detail::flat_bytes<std::remove_cv_t<T>>;
  static constexpr bool references_buffer = detail::references_buffer<std::remove_cv_t<T>>::value;

  template <class Writer>
  static void serialize(Writer& w, const T& x) {
    w.template write<T>(x);
  }
  template <class Reader>
  static deserialized_type* deserialize(Reader& r, void* storage) {
    return r.template read_into<T>(storage);
  }
  template <class Reader>
  static void skip(Reader& r) {
    r.template skip<T>();
  }
  static deserialized_type deserialized_value(const T& x) requires(!std::is_array_v<T>) {
    static_assert(!references_buffer,
                  "upcxx::serialization_traits<T>::deserialized_value: the value read back would point into a "
                  "buffer that is gone on return (a view of trivially serializable elements); serialize into "
                  "a buffer you keep instead");
    std::vector<std::byte> buf;
    accrete::writer w(buf);
    w.write(x);
    accrete::reader r(buf, -1, 0, "deserialized_value buffer");
    deserialized_type v = r.read<T>();
    r.expect_end();
    return v;
  }
};

// ---- Teams and collectives -----------------------------------------------------------------

using accrete::barrier;
using accrete::barrier_async;
using accrete::broadcast;
using accrete::entry_barrier;
using accrete::local_team;
using accrete::reduce_all;
using accrete::reduce_one;
using accrete::team;
using accrete::team_id;
using accrete::world;

/// The collectives with completion requests (spec: Collectives): the team
/// must be named when completions are; operation completions only
/// (operation_cx::as_future, as_promise, as_lpc, as_defer_*), each
/// delivered when the collective completes at the caller.
///@{
namespace detail {
template <class Cxs, class Start>
auto collective(Cxs& cxs, Start&& start) {
  static_assert(get_cx_ok<std::remove_cvref_t<Cxs>>, "upcxx: a collective takes operation completions only");
  return deliver(start(), cxs);
}
}  // namespace detail
template <class Cxs>
requires detail::is_completions<std::remove_cvref_t<Cxs>>
auto barrier_async(const team& t, Cxs&& cxs) {
  return detail::collective(cxs, [&] { return accrete::barrier_async(t); });
}
template <class T, class Cxs>
requires detail::is_completions<std::remove_cvref_t<Cxs>>
auto broadcast(T value, intrank_t root, const team& t, Cxs&& cxs) {
  return detail::collective(cxs, [&] { return accrete::broadcast(std::move(value), root, t); });
}
template <class T, class Cxs>
requires detail::is_completions<std::remove_cvref_t<Cxs>>
auto broadcast(T* buffer, std::size_t count, intrank_t root, const team& t, Cxs&& cxs) {
  return detail::collective(cxs, [&] { return accrete::broadcast(buffer, count, root, t); });
}
template <class T, class Op, class Cxs>
requires detail::is_completions<std::remove_cvref_t<Cxs>>
auto reduce_one(T value, Op op, intrank_t root, const team& t, Cxs&& cxs) {
  return detail::collective(cxs, [&] { return accrete::reduce_one(std::move(value), op, root, t); });
}
template <class T, class Op, class Cxs>
requires detail::is_completions<std::remove_cvref_t<Cxs>>
auto reduce_all(T value, Op op, const team& t, Cxs&& cxs) {
  return detail::collective(cxs, [&] { return accrete::reduce_all(std::move(value), op, t); });
}
template <class T, class Op, class Cxs>
requires detail::is_completions<std::remove_cvref_t<Cxs>>
auto reduce_one(const T* src, T* dst, std::size_t count, Op op, intrank_t root, const team& t, Cxs&& cxs) {
  return detail::collective(cxs, [&] { return accrete::reduce_one(src, dst, count, op, root, t); });
}
template <class T, class Op, class Cxs>
requires detail::is_completions<std::remove_cvref_t<Cxs>>
auto reduce_all(const T* src, T* dst, std::size_t count, Op op, const team& t, Cxs&& cxs) {
  return detail::collective(cxs, [&] { return accrete::reduce_all(src, dst, count, op, t); });
}
///@}

/// Whether world rank r shares the caller's node, so that its segment is
/// reached by load and store (spec: Teams).
inline bool local_team_contains(intrank_t r) { return accrete::local_team().from_world(r) >= 0; }

using accrete::op_fast_add;
using accrete::op_fast_bit_and;
using accrete::op_fast_bit_or;
using accrete::op_fast_bit_xor;
using accrete::op_fast_max;
using accrete::op_fast_min;
using accrete::op_fast_mul;
/// The general operators (spec: Collectives): the same callables as op_fast_*.
///@{
inline constexpr auto op_add = accrete::op_fast_add;
inline constexpr auto op_mul = accrete::op_fast_mul;
inline constexpr auto op_min = accrete::op_fast_min;
inline constexpr auto op_max = accrete::op_fast_max;
inline constexpr auto op_bit_and = accrete::op_fast_bit_and;
inline constexpr auto op_bit_or = accrete::op_fast_bit_or;
inline constexpr auto op_bit_xor = accrete::op_fast_bit_xor;
///@}

// ---- Atomics --------------------------------------------------------------------------

/// The atomic operations a domain may be asked to support (spec: Atomics).
enum class atomic_op : int {
  load,
  store,
  compare_exchange,
  add,
  fetch_add,
  sub,
  fetch_sub,
  inc,
  fetch_inc,
  dec,
  fetch_dec,
  mul,
  fetch_mul,
  min,
  fetch_min,
  max,
  fetch_max,
  bit_and,
  fetch_bit_and,
  bit_or,
  fetch_bit_or,
  bit_xor,
  fetch_bit_xor
};

/// Atomic operations on T in shared segments, over a team (spec: Atomics).
/// Collective construction; every call names its memory order, as the spec
/// requires. Using an operation the domain was not created with throws
/// accrete::error naming it. Operations are non-blocking: each completes
/// during later progress (accrete/atomic.hpp), and its completion request
/// is delivered then.
template <class T>
class atomic_domain {
  using Default = detail::completions<detail::op_future>;

 public:
  /// Collective over tm: the operations this domain will perform.
  explicit atomic_domain(std::vector<atomic_op> const& ops, const team& tm = world()) : d_(tm) {
    for (atomic_op o : ops) allowed_ |= bit(o);
  }
  /// An inactive domain (not collective; may precede init()): it performs
  /// no operations until an active one is moved into it.
  atomic_domain() noexcept : d_(accrete::inactive) {}
  /// Moves take the domain and leave the source inactive. The receiver of
  /// a move assignment must be inactive (accrete::error otherwise), as the
  /// spec requires; assigning a domain to itself changes nothing.
  ///@{
  atomic_domain(atomic_domain&& o) noexcept : d_(std::move(o.d_)), allowed_(std::exchange(o.allowed_, 0)) {}
  atomic_domain& operator=(atomic_domain&& o) {
    if (this != &o) {
      if (d_.is_active())
        throw accrete::error(
            "upcxx::atomic_domain: move assignment onto an active domain (the spec requires an "
            "inactive receiver: destroy() it first)");
      d_ = std::move(o.d_);
      allowed_ = std::exchange(o.allowed_, 0);
    }
    return *this;
  }
  ///@}
  atomic_domain(const atomic_domain&) = delete;
  atomic_domain& operator=(const atomic_domain&) = delete;

  /// Whether the domain can perform operations.
  bool is_active() const noexcept { return d_.is_active(); }

  /// Collective: releases the domain (spec: before the team is destroyed),
  /// after a barrier unless `lev` is entry_barrier::none. On an inactive
  /// domain: nothing.
  void destroy(entry_barrier lev = entry_barrier::user) {
    if (!d_.is_active()) return;
    if (lev != entry_barrier::none) accrete::barrier();
    d_.destroy();
  }

  // Every operation takes an optional completion request (default: a
  // future for operation completion); fetching ones deliver their value to
  // an operation_cx::as_future() future or as_promise(promise<T>&).
  template <class Cxs = Default>
  auto load(global_ptr<const T> p, std::memory_order o, Cxs&& cxs = Default{}) {
    use(atomic_op::load);
    return detail::deliver(d_.load(accrete::reinterpret_pointer_cast<T>(p), o), cxs);
  }
  template <class Cxs = Default>
  auto store(global_ptr<T> p, T v, std::memory_order o, Cxs&& cxs = Default{}) {
    use(atomic_op::store);
    return plain(
        cxs, [&] { return d_.store(p, v, o); }, [&](promise<>& pr) { d_.store(p, v, pr, o); });
  }
  template <class Cxs = Default>
  auto compare_exchange(global_ptr<T> p, T expected, T desired, std::memory_order o, Cxs&& cxs = Default{}) {
    use(atomic_op::compare_exchange);
    return detail::deliver(d_.compare_exchange(p, expected, desired, o), cxs);
  }
  template <class Cxs = Default>
  auto add(global_ptr<T> p, T v, std::memory_order o, Cxs&& cxs = Default{}) {
    use(atomic_op::add);
    return plain(
        cxs, [&] { return d_.add(p, v, o); }, [&](promise<>& pr) { d_.add(p, v, pr, o); });
  }
  template <class Cxs = Default>
  auto fetch_add(global_ptr<T> p, T v, std::memory_order o, Cxs&& cxs = Default{}) {
    use(atomic_op::fetch_add);
    return detail::deliver(d_.fetch_add(p, v, o), cxs);
  }
  template <class Cxs = Default>
  auto sub(global_ptr<T> p, T v, std::memory_order o, Cxs&& cxs = Default{}) {
    use(atomic_op::sub);
    return plain(
        cxs, [&] { return d_.sub(p, v, o); }, [&](promise<>& pr) { d_.sub(p, v, pr, o); });
  }
  template <class Cxs = Default>
  auto fetch_sub(global_ptr<T> p, T v, std::memory_order o, Cxs&& cxs = Default{}) {
    use(atomic_op::fetch_sub);
    return detail::deliver(d_.fetch_sub(p, v, o), cxs);
  }
  template <class Cxs = Default>
  auto inc(global_ptr<T> p, std::memory_order o, Cxs&& cxs = Default{}) {
    use(atomic_op::inc);
    return plain(
        cxs, [&] { return d_.add(p, T(1), o); }, [&](promise<>& pr) { d_.add(p, T(1), pr, o); });
  }
  template <class Cxs = Default>
  auto fetch_inc(global_ptr<T> p, std::memory_order o, Cxs&& cxs = Default{}) {
    use(atomic_op::fetch_inc);
    return detail::deliver(d_.fetch_add(p, T(1), o), cxs);
  }
  template <class Cxs = Default>
  auto dec(global_ptr<T> p, std::memory_order o, Cxs&& cxs = Default{}) {
    use(atomic_op::dec);
    return plain(
        cxs, [&] { return d_.sub(p, T(1), o); }, [&](promise<>& pr) { d_.sub(p, T(1), pr, o); });
  }
  template <class Cxs = Default>
  auto fetch_dec(global_ptr<T> p, std::memory_order o, Cxs&& cxs = Default{}) {
    use(atomic_op::fetch_dec);
    return detail::deliver(d_.fetch_sub(p, T(1), o), cxs);
  }
  template <class Cxs = Default>
  auto mul(global_ptr<T> p, T v, std::memory_order o, Cxs&& cxs = Default{}) {
    use(atomic_op::mul);
    return plain(
        cxs, [&] { return d_.mul(p, v, o); }, [&](promise<>& pr) { d_.mul(p, v, pr, o); });
  }
  template <class Cxs = Default>
  auto fetch_mul(global_ptr<T> p, T v, std::memory_order o, Cxs&& cxs = Default{}) {
    use(atomic_op::fetch_mul);
    return detail::deliver(d_.fetch_mul(p, v, o), cxs);
  }
  template <class Cxs = Default>
  auto min(global_ptr<T> p, T v, std::memory_order o, Cxs&& cxs = Default{}) {
    use(atomic_op::min);
    return detail::deliver(d_.min(p, v, o), cxs);
  }
  template <class Cxs = Default>
  auto fetch_min(global_ptr<T> p, T v, std::memory_order o, Cxs&& cxs = Default{}) {
    use(atomic_op::fetch_min);
    return detail::deliver(d_.fetch_min(p, v, o), cxs);
  }
  template <class Cxs = Default>
  auto max(global_ptr<T> p, T v, std::memory_order o, Cxs&& cxs = Default{}) {
    use(atomic_op::max);
    return detail::deliver(d_.max(p, v, o), cxs);
  }
  template <class Cxs = Default>
  auto fetch_max(global_ptr<T> p, T v, std::memory_order o, Cxs&& cxs = Default{}) {
    use(atomic_op::fetch_max);
    return detail::deliver(d_.fetch_max(p, v, o), cxs);
  }
  template <class Cxs = Default, class U = T>
  requires std::is_integral_v<U>
  auto bit_and(global_ptr<T> p, T v, std::memory_order o, Cxs&& cxs = Default{}) {
    use(atomic_op::bit_and);
    return detail::deliver(d_.bit_and(p, v, o), cxs);
  }
  template <class Cxs = Default, class U = T>
  requires std::is_integral_v<U>
  auto fetch_bit_and(global_ptr<T> p, T v, std::memory_order o, Cxs&& cxs = Default{}) {
    use(atomic_op::fetch_bit_and);
    return detail::deliver(d_.fetch_bit_and(p, v, o), cxs);
  }
  template <class Cxs = Default, class U = T>
  requires std::is_integral_v<U>
  auto bit_or(global_ptr<T> p, T v, std::memory_order o, Cxs&& cxs = Default{}) {
    use(atomic_op::bit_or);
    return detail::deliver(d_.bit_or(p, v, o), cxs);
  }
  template <class Cxs = Default, class U = T>
  requires std::is_integral_v<U>
  auto fetch_bit_or(global_ptr<T> p, T v, std::memory_order o, Cxs&& cxs = Default{}) {
    use(atomic_op::fetch_bit_or);
    return detail::deliver(d_.fetch_bit_or(p, v, o), cxs);
  }
  template <class Cxs = Default, class U = T>
  requires std::is_integral_v<U>
  auto bit_xor(global_ptr<T> p, T v, std::memory_order o, Cxs&& cxs = Default{}) {
    use(atomic_op::bit_xor);
    return detail::deliver(d_.bit_xor(p, v, o), cxs);
  }
  template <class Cxs = Default, class U = T>
  requires std::is_integral_v<U>
  auto fetch_bit_xor(global_ptr<T> p, T v, std::memory_order o, Cxs&& cxs = Default{}) {
    use(atomic_op::fetch_bit_xor);
    return detail::deliver(d_.fetch_bit_xor(p, v, o), cxs);
  }

 private:
  // A non-fetching operation: a lone promise request takes accrete's
  // counted promise form (no allocation per operation in a flood); any
  // other request goes through the operation's future.
  template <class Cxs, class ByFuture, class ByPromise>
  static auto plain(Cxs& cxs, ByFuture&& by_future, ByPromise&& by_promise) {
    using C = std::remove_cvref_t<Cxs>;
    static_assert(detail::get_cx_ok<C>, "upcxx::atomic_domain: takes operation completions only");
    if constexpr (std::is_same_v<C, detail::completions<detail::op_promise<>>>)
      by_promise(std::get<0>(cxs.items).p);
    else
      return detail::deliver(by_future(), cxs);
  }
  static constexpr std::uint32_t bit(atomic_op o) { return std::uint32_t(1) << int(o); }
  static const char* name(atomic_op o) {
    static const char* const names[] = {
        "load",      "store",   "compare_exchange", "add",    "fetch_add",    "sub",     "fetch_sub",    "inc",
        "fetch_inc", "dec",     "fetch_dec",        "mul",    "fetch_mul",    "min",     "fetch_min",    "max",
        "fetch_max", "bit_and", "fetch_bit_and",    "bit_or", "fetch_bit_or", "bit_xor", "fetch_bit_xor"};
    return names[int(o)];
  }
  void use(atomic_op o) const {
    if (!d_.is_active())
      throw accrete::error(std::string("upcxx::atomic_domain::") + name(o) +
                           ": the domain is not active (default-constructed, moved from or destroyed)");
    if ((allowed_ & bit(o)) == 0)
      throw accrete::error(std::string("upcxx::atomic_domain::") + name(o) +
                           ": the domain was not created with atomic_op::" + name(o));
  }
  accrete::atomic_domain<T> d_;
  std::uint32_t allowed_ = 0;
};

// ---- Utilities ------------------------------------------------------------------------

namespace detail {
// UPCXX_ASSERT's failure: one line on stderr, then abort.
[[noreturn]] inline void assert_failed(const char* cond, const char* file, int line, const std::string& msg) {
  std::ostringstream os;
  os << "UPCXX_ASSERT failed on rank " << (accrete::initialized() ? accrete::rank_me() : -1) << ": " << cond << " ("
     << file << ":" << line << ")";
  if (!msg.empty()) os << ": " << msg;
  os << "\n";
  std::cerr << os.str() << std::flush;
  std::abort();
}
}  // namespace detail

/// Prints "UPC++ fatal error on rank r" with `msg` (and where, when given)
/// on stderr, then aborts: the implementation function some UPC++ programs
/// call (upcxx::fatal_error before 2021.3, upcxx::detail::fatal_error since).
[[noreturn]] inline void fatal_error(const std::string& msg, const char* title = nullptr, const char* func = nullptr,
                                     const char* file = nullptr, int line = 0) {
  std::ostringstream os;
  os << (title ? title : "UPC++ fatal error") << " on rank " << (accrete::initialized() ? accrete::rank_me() : -1)
     << ": " << msg;
  if (file) os << " (" << file << ":" << line << (func ? std::string(", ") + func : std::string()) << ")";
  os << "\n";
  std::cerr << os.str() << std::flush;
  std::abort();
}
namespace detail {
using upcxx::fatal_error;
}  // namespace detail

/// Writes one line to standard output, prefixed with this process's rank,
/// when the statement ends: `upcxx::say() << "x = " << x;` (as in the
/// UPC++ programmer's guide).
class say {
 public:
  /// `prefix` is written first, with "%d" in it replaced by the rank.
  explicit say(const char* prefix = "[%d] ") : say(std::cout, prefix) {}
  /// The same, written to `output` (which must outlive the statement), as
  /// one write.
  explicit say(std::ostream& output, const char* prefix = "[%d] ") : dest_(&output) {
    std::string head = prefix ? prefix : "";
    if (auto at = head.find("%d"); at != std::string::npos)
      head.replace(at, 2, std::to_string(accrete::initialized() ? accrete::rank_me() : -1));
    out_ << head;
  }
  say(const say&) = delete;
  say& operator=(const say&) = delete;
  ~say() {
    out_ << '\n';
    *dest_ << out_.str() << std::flush;
  }
  /// Appends x as std::ostream would print it.
  template <class X>
  say& operator<<(const X& x) {
    out_ << x;
    return *this;
  }

 private:
  std::ostream* dest_;
  std::ostringstream out_;
};

/// The environment variable `name` read as a T (std::string: the whole
/// value; other types as `std::istream >>` reads them), in this process.
/// Unset: `otherwise`. A value that does not read as a T throws
/// accrete::error naming the variable and the value. (UPC++'s os_env.)
///@{
template <class T>
std::optional<T> os_env(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (!v) return std::nullopt;
  if constexpr (std::is_same_v<T, std::string>) {
    return std::string(v);
  } else {
    std::istringstream in(v);
    T x{};
    if (!(in >> x) || !(in >> std::ws).eof())
      throw accrete::error("upcxx::os_env: " + name + "=" + v + " is not a value of the type asked for");
    return x;
  }
}
template <class T>
T os_env(const std::string& name, const T& otherwise) {
  std::optional<T> v = os_env<T>(name);
  return v ? *v : otherwise;
}
/// A memory size: digits with an optional K, M, G or T suffix (B or iB
/// may follow: 512MB, 4GiB); a bare number counts units of
/// `mem_size_multiplier` bytes.
template <class T>
T os_env(const std::string& name, const T& otherwise, std::size_t mem_size_multiplier) {
  std::optional<std::string> v = os_env<std::string>(name);
  if (!v) return otherwise;
  std::size_t used = 0;
  unsigned long long n = 0;
  try {
    n = std::stoull(*v, &used);
  } catch (const std::exception&) {
    throw accrete::error("upcxx::os_env: " + name + "=" + *v + " is not a memory size (like 512M or 4GB)");
  }
  std::string unit = v->substr(used);
  for (char& c : unit) c = char(std::toupper(static_cast<unsigned char>(c)));
  if (unit.size() > 1 && (unit.ends_with("IB") || unit.ends_with("B")))
    unit.erase(unit.size() - (unit.ends_with("IB") ? 2 : 1));
  unsigned long long mult = mem_size_multiplier;
  if (unit == "K")
    mult = 1ull << 10;
  else if (unit == "M")
    mult = 1ull << 20;
  else if (unit == "G")
    mult = 1ull << 30;
  else if (unit == "T")
    mult = 1ull << 40;
  else if (!unit.empty() && unit != "B")
    throw accrete::error("upcxx::os_env: " + name + "=" + *v + " is not a memory size (like 512M or 4GB)");
  else if (unit == "B")
    mult = 1;
  return T(n * mult);
}
///@}

/// broadcast_nontrivial, reduce_one_nontrivial and reduce_all_nontrivial:
/// the names UPC++ releases before 2020.10 gave the broadcast and
/// reductions of serializable values that are not trivially serializable
/// (in upcxx::, later in upcxx::experimental::). broadcast, reduce_one and
/// reduce_all take such values themselves; these forward to them, with or
/// without completion requests.
///@{
template <class... Args>
auto broadcast_nontrivial(Args&&... args) -> decltype(upcxx::broadcast(std::forward<Args>(args)...)) {
  return upcxx::broadcast(std::forward<Args>(args)...);
}
template <class... Args>
auto reduce_one_nontrivial(Args&&... args) -> decltype(upcxx::reduce_one(std::forward<Args>(args)...)) {
  return upcxx::reduce_one(std::forward<Args>(args)...);
}
template <class... Args>
auto reduce_all_nontrivial(Args&&... args) -> decltype(upcxx::reduce_all(std::forward<Args>(args)...)) {
  return upcxx::reduce_all(std::forward<Args>(args)...);
}
///@}

/// UPC++'s destroy_heap and restore_heap (in upcxx:: in 2020.10, then in
/// upcxx::experimental::, unsupported there). Both are collective over
/// world() and called as the other collectives are.
/// - destroy_heap(): a barrier with user-level progress, then every
///   process's shared heap is dead: allocate, new_ and new_array throw
///   accrete::error naming destroy_heap until restore_heap(). Objects still
///   allocated (undefined behaviour in UPC++) keep their memory and stay
///   valid, and a warning on stderr counts them; deallocating works
///   throughout.
/// - restore_heap(): the heap is live again, then a barrier.
/// Each throws accrete::error, before any communication, when the heap is
/// not in the state it changes (destroyed twice, restored while live).
///@{
inline void destroy_heap() {
  if (accrete::detail::heap_closed())
    throw accrete::error("upcxx::destroy_heap: the shared heap is already destroyed (restore_heap() first)");
  upcxx::barrier();
  if (const std::size_t n = accrete::detail::heap_live_objects())
    upcxx::say(std::cerr) << "upcxx::destroy_heap: " << n << " object" << (n == 1 ? "" : "s")
                          << " still allocated in the shared heap; they keep their memory";
  accrete::detail::close_heap("upcxx::destroy_heap()");
}
inline void restore_heap() {
  if (!accrete::detail::heap_closed())
    throw accrete::error("upcxx::restore_heap: the shared heap is live (restore_heap() follows destroy_heap())");
  accrete::detail::reopen_heap();
  upcxx::barrier();
}
///@}

/// Names other UPC++ releases keep here (os_env and say after 2020.10; the
/// general reduction operators and broadcast_nontrivial before it; the
/// broadcast and reductions of serializable values that are not trivially
/// serializable, which upcxx's own broadcast and reductions take too).
namespace experimental {
using upcxx::broadcast;
using upcxx::broadcast_nontrivial;
using upcxx::destroy_heap;
using upcxx::op_add;
using upcxx::op_bit_and;
using upcxx::op_bit_or;
using upcxx::op_bit_xor;
using upcxx::op_max;
using upcxx::op_min;
using upcxx::op_mul;
using upcxx::os_env;
using upcxx::reduce_all;
using upcxx::reduce_all_nontrivial;
using upcxx::reduce_one;
using upcxx::reduce_one_nontrivial;
using upcxx::restore_heap;
using upcxx::say;
}  // namespace experimental

}  // namespace upcxx

/// Serialize a class by its members or by values a constructor takes back
/// (spec: Serialization): accrete's macros under their UPC++ names.
///@{
#define UPCXX_SERIALIZED_FIELDS(...) ACCRETE_SERIALIZED_FIELDS(__VA_ARGS__)
#define UPCXX_SERIALIZED_VALUES(...) ACCRETE_SERIALIZED_VALUES(__VA_ARGS__)
#define UPCXX_SERIALIZED_DELETE() ACCRETE_SERIALIZED_DELETE()
#define UPCXX_SERIALIZED_BASE(B) ACCRETE_SERIALIZED_BASE(B)
///@}

/// A upcxx::serialization<T> specialization (or T::upcxx_serialization) is
/// how accrete serializes T.
template <class T>
requires upcxx::detail::user_rule<T>
struct accrete::serialization<T> {
  /// accrete's rule protocol over the UPC++ one.
  ///@{
  using deserialized_type = upcxx::detail::user_deserialized_t<T>;
  static void serialize(accrete::writer& w, const T& x) { upcxx::serialization<T>::serialize(w, x); }
  static deserialized_type deserialize(accrete::reader& r) {
    using U = deserialized_type;
    alignas(U) std::byte storage[sizeof(U)];
    upcxx::detail::construct_storage<typename upcxx::detail::declared_deserialized<T>::type> at{storage};
    U* p = upcxx::serialization<T>::deserialize(r, at);
    struct destroy {
      U* p;
      ~destroy() { p->~U(); }
    } d{p};
    return U(std::move(*p));
  }
  ///@}
};

/// A type the program declared trivially serializable (a specialization of
/// upcxx::is_trivially_serializable) that is not trivially copyable travels
/// as its bytes, as UPC++ sends it.
template <class T>
requires(!upcxx::detail::std_composite<T>::value && !std::is_trivially_copyable_v<T> &&
         upcxx::is_trivially_serializable<T>::value && !upcxx::detail::user_rule<T>) struct accrete::serialization<T> {
  /// accrete's rule protocol: the object's bytes (so a received view of T
  /// is walked by `const T*`, as in UPC++).
  ///@{
  static constexpr bool object_bytes = true;
  static void serialize(accrete::writer& w, const T& x) { w.write_bytes(std::addressof(x), sizeof(T)); }
  static T deserialize(accrete::reader& r) {
    return accrete::detail::read_object_bytes<T>(r, "trivially serializable value");
  }
  ///@}
};

/// Such a type also moves by RMA and the byte-wise collectives (rput, rget,
/// copy, broadcast of a buffer, reductions), as UPC++ allows for any
/// DefinitelyTriviallySerializable type.
template <class T>
requires(!std::is_trivially_copyable_v<T> &&
         upcxx::is_trivially_serializable<T>::value) struct accrete::detail::declared_bytewise<T> : std::true_type {
};

/// upcxx::bind's result travels as its function, then its bound values.
template <class F, class... B>
struct accrete::serialization<upcxx::bound_function<F, B...>> {
  /// accrete's rule protocol.
  ///@{
  static constexpr bool enabled = (accrete::detail::is_function_pointer_v<F> ||
                                   accrete::is_serializable_v<F>)&&(accrete::is_serializable_v<B> && ...);
  using deserialized_type = upcxx::bound_function<F, accrete::deserialized_type_t<B>...>;
  static void serialize(accrete::writer& w, const upcxx::bound_function<F, B...>& b) {
    accrete::detail::write_callable(w, b.fn);
    std::apply([&](const B&... v) { (w.write(v), ...); }, b.bound);
  }
  static deserialized_type deserialize(accrete::reader& r) {
    F f = accrete::detail::read_callable<F>(r);
    // Braces: the values are read left to right.
    return deserialized_type{std::move(f), std::tuple<accrete::deserialized_type_t<B>...>{r.read<B>()...}};
  }
  ///@}
};

/// Checks `cond` and, when it is false, prints the condition, where it is,
/// the rank and the optional message (anything `std::ostream <<` takes,
/// `"x = " << x` too, evaluated only then) to stderr and aborts. Each is an
/// expression of type void. UPCXX_ASSERT checks only when
/// UPCXX_ASSERT_ENABLED is non-zero (by default: unless NDEBUG is defined
/// or UPCXX_CODEMODE is non-zero, the "opt" codemode the upcxx wrapper
/// selects by default) and otherwise does not evaluate its arguments;
/// UPCXX_ASSERT_ALWAYS always checks.
///@{
#ifndef UPCXX_ASSERT_ENABLED
#if defined(NDEBUG) || (defined(UPCXX_CODEMODE) && UPCXX_CODEMODE)
#define UPCXX_ASSERT_ENABLED 0
#else
#define UPCXX_ASSERT_ENABLED 1
#endif
#endif
#define UPCXX_ASSERT_ALWAYS(cond, ...)                                                                 \
  ((cond) ? void(0) : ::upcxx::detail::assert_failed(#cond, __FILE__, __LINE__, [&]() -> std::string { \
    std::ostringstream upcxx_assert_msg_;                                                              \
    upcxx_assert_msg_ << "" __VA_OPT__(<< __VA_ARGS__);                                                \
    return upcxx_assert_msg_.str();                                                                    \
  }()))
#if UPCXX_ASSERT_ENABLED
#define UPCXX_ASSERT(cond, ...) UPCXX_ASSERT_ALWAYS(cond __VA_OPT__(, ) __VA_ARGS__)
#else
#define UPCXX_ASSERT(cond, ...) ((void)0)
#endif
///@}

namespace upcxx::detail {
template <class GP>
using memberof_element_t = typename std::remove_cvref_t<GP>::element_type;

template <class T, memory_kind K>
const global_ptr<T, K>& require_standard_layout(const global_ptr<T, K>& p) {
  static_assert(std::is_standard_layout_v<T>,
                "upcxx_memberof requires a global_ptr to a standard-layout class; for any other class use "
                "upcxx_memberof_general (a future) or upcxx_memberof_unsafe");
  return p;
}

// upcxx_memberof_general. A standard-layout class has its member's offset
// from offsetof, with no object needed: a ready future. Any other class has
// it only from an object, so it is measured on the object, here when it is
// local and otherwise by its owner (one RPC). D is the member's declared
// type, Offset gives offsetof (a generic lambda, so that offsetof is never
// instantiated for a class that is not standard-layout), Member names the
// member of an object.
template <class D, class T, memory_kind K, class Offset, class Member>
auto member_general(const global_ptr<T, K>& p, Offset, Member) {
  static_assert(!std::is_reference_v<D>,
                "upcxx_memberof_general: the member is a reference, and a global_ptr to a reference does not exist");
  using M = std::remove_reference_t<decltype(Member{}(std::declval<T*>()))>;
  if constexpr (std::is_standard_layout_v<T>) {
    return make_future(member_at<M>(p, Offset{}(std::type_identity<std::remove_cv_t<T>>{})));
  } else {
    constexpr auto measure = [](T* o) {
      return std::size_t(reinterpret_cast<const volatile char*>(std::addressof(Member{}(o))) -
                         reinterpret_cast<const volatile char*>(o));
    };
    if (p.is_null() || p.is_local()) return make_future(member_at<M>(p, p.is_null() ? 0 : measure(p.local())));
    return rpc(
               p.where(), [](const global_ptr<T, K>& q) { return decltype(measure){}(q.local()); }, p)
        .then([p](std::size_t off) { return member_at<M>(p, off); });
  }
}
}  // namespace upcxx::detail

// The type of gp's member `field` (const when the object is), and the
// class's std::type_identity (for the offset lambdas below).
#define UPCXX_DETAIL_MEMBER_TYPE(gp, field) \
  std::remove_reference_t<decltype((std::declval<::upcxx::detail::memberof_element_t<decltype(gp)>&>().field))>
#define UPCXX_DETAIL_CLASS_IDENTITY(gp) \
  std::type_identity<std::remove_cv_t<::upcxx::detail::memberof_element_t<decltype(gp)>>> {}
// A generic lambda giving offsetof(C, field) for a standard-layout class C
// (called with std::type_identity<C>), and 0 for any other: offsetof is then
// never instantiated, so such a class gets only the error it should.
#define UPCXX_DETAIL_STANDARD_OFFSET(field)                    \
  [](auto upcxx_type_) {                                       \
    using upcxx_class_ = typename decltype(upcxx_type_)::type; \
    if constexpr (std::is_standard_layout_v<upcxx_class_>)     \
      return std::size_t(offsetof(upcxx_class_, field));       \
    else                                                       \
      return std::size_t(0);                                   \
  }
/// A global pointer to member `field` of the object gp points to (spec:
/// Global Pointers, upcxx_memberof). The class must be standard-layout
/// (checked at compile time: offsetof is defined only for those); nothing is
/// communicated. gp is evaluated once.
#define upcxx_memberof(gp, field)                                   \
  (::upcxx::detail::member_at<UPCXX_DETAIL_MEMBER_TYPE(gp, field)>( \
      ::upcxx::detail::require_standard_layout(gp),                 \
      UPCXX_DETAIL_STANDARD_OFFSET(field)(UPCXX_DETAIL_CLASS_IDENTITY(gp))))
/// upcxx_memberof for a class of any layout (spec: upcxx_memberof_general):
/// a ready future for a standard-layout class or an object on this process's
/// node, otherwise one RPC to gp.where(), which measures the member on the
/// object. A reference member does not compile. gp is evaluated once.
#define upcxx_memberof_general(gp, field)                                                  \
  (::upcxx::detail::member_general<                                                        \
      decltype(std::declval<::upcxx::detail::memberof_element_t<decltype(gp)>&>().field)>( \
      (gp), UPCXX_DETAIL_STANDARD_OFFSET(field),                                           \
      [](auto* upcxx_object_) -> decltype(auto) { return (upcxx_object_->field); }))
/// upcxx_memberof without the standard-layout check (UPC++'s
/// implementation-defined upcxx_memberof_unsafe): offsetof where the
/// compiler supports it for the class (GCC and Clang do for classes without
/// virtual bases); otherwise the result is undefined. Nothing is
/// communicated; gp is evaluated once.
#define upcxx_memberof_unsafe(gp, field)                                                                            \
  (::upcxx::detail::member_at<UPCXX_DETAIL_MEMBER_TYPE(gp, field)>((gp), [](auto upcxx_type_) {                     \
    using upcxx_class_ = typename decltype(upcxx_type_)::type;                                                      \
    _Pragma("GCC diagnostic push")                                                                                  \
        _Pragma("GCC diagnostic ignored \"-Winvalid-offsetof\"") return std::size_t(offsetof(upcxx_class_, field)); \
    _Pragma("GCC diagnostic pop")                                                                                   \
  }(UPCXX_DETAIL_CLASS_IDENTITY(gp))))
