#pragma once
/// \file
// Collectives over teams.
//
//   void      barrier(team)                               blocking (makes user-level progress)
//   future<>  barrier_async(team)
//   future<T> broadcast(value, root, team)                T trivially copyable or serializable
//   future<>  broadcast(buffer, count, root, team)        in place, T trivially copyable
//   future<T> reduce_one(value, op, root, team)           result meaningful at root only
//   future<T> reduce_all(value, op, team)                 T trivially copyable or serializable
//   future<>  reduce_one(src, dst, count, op, root, team) element-wise over arrays
//   future<>  reduce_all(src, dst, count, op, team)       (src == dst: in place)
//
// Roots are team ranks. Operators: op_fast_add, op_fast_mul, op_fast_min,
// op_fast_max, op_fast_bit_and, op_fast_bit_or, op_fast_bit_xor (mapped to
// MPI_SUM, ... when T is an arithmetic type with an MPI equivalent), or any
// callable `T op(const T&, const T&)` on a trivially copyable T (a "user
// op", also used for the built-in operators on other types). Operators must
// be associative and commutative: the combination order is unspecified.
// A user op runs inside MPI (during progress on the members that combine);
// it must not call accrete and it may run on a copy of the op object.
//
// Collective rules: every member of the team calls the same collectives on
// it in the same order (as in MPI); calls on different teams, and RPCs, may
// interleave freely. Each call starts the operation at once
// (MPI_Ibarrier, MPI_Ibcast, MPI_Ireduce, MPI_Iallreduce on the team's
// communicator) and returns a future.
//
// Completion: the future becomes ready during user-level progress
// (progress(), wait()) after the operation is complete locally: the value
// (or the buffer `dst`/`buffer`) holds the result, and `src` may be reused.
// Buffers passed by pointer must stay valid and untouched until then.
// barrier_async's future is ready once every member has entered it; like
// barrier(), it fences memory: direct stores made before the call are
// visible to every member after the future is ready.
//
// Progress: the calls make no user-level progress (they never run RPCs or
// callbacks); the operations advance whenever the caller makes progress.
//
// Broadcast of a value that is not trivially copyable (std::vector,
// std::string, nested containers, user types with a serialization<T>
// specialisation): the root serializes it; the size travels by MPI_Ibcast,
// the bytes by point-to-point messages from the root on the team's
// communicator (tags 0x6000-0x7fff are reserved on team communicators for
// this). Non-root members pass any value (e.g. an empty vector); it is
// ignored.
//
// Large counts are split into pieces MPI accepts (int counts).
//
// Errors: a root outside the team throws std::out_of_range, a null buffer
// with a count above 0 std::invalid_argument; MPI errors throw
// accrete::error. The arguments are not compared between members (these
// are hot paths); with ACCRETE_COLLECTIVE_TIMEOUT set, a collective still
// incomplete after that many seconds ends the job naming the call and the
// members that never entered it (docs/semantics.md, "Collective calls:
// agreement and the timeout"). Thread-safety: call from the thread that
// drives the runtime (in the par thread mode, the master persona's holder;
// from another thread a collective throws accrete::error naming it).
// Lets this header include accrete/detail/ headers (see detail/internal.hpp).
#ifndef ACCRETE_PUBLIC_INCLUDE
#define ACCRETE_PUBLIC_INCLUDE
#define ACCRETE_PUBLIC_INCLUDE_COLLECTIVES
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "accrete/detail/scalar_type.hpp"
#include "accrete/detail/backend.hpp"
#include "accrete/future.hpp"
#include "accrete/promise.hpp"
#include "accrete/serialization.hpp"
#include "accrete/team.hpp"

#ifdef ACCRETE_PUBLIC_INCLUDE_COLLECTIVES
#undef ACCRETE_PUBLIC_INCLUDE
#undef ACCRETE_PUBLIC_INCLUDE_COLLECTIVES
#endif

namespace accrete {

/// Collective over `t`: returns when every member has entered. Makes
/// user-level progress while waiting (so RPCs other members depend on still
/// run) and acts as a memory fence: direct stores made before the barrier
/// are visible to every member after it. A team of one returns at once,
/// without progress or fence: it has nobody to wait for or order against.
void barrier(const team& t = world());

// ---- operators -------------------------------------------------------------------

namespace detail {
using coll_op = scalar_op;
template <coll_op K>
struct fast_op {
  static constexpr coll_op kind = K;
  template <class T>
  constexpr T operator()(const T& a, const T& b) const {
    if constexpr (K == coll_op::add)
      return a + b;
    else if constexpr (K == coll_op::mul)
      return a * b;
    else if constexpr (K == coll_op::min)
      return b < a ? b : a;
    else if constexpr (K == coll_op::max)
      return a < b ? b : a;
    else if constexpr (K == coll_op::band)
      return a & b;
    else if constexpr (K == coll_op::bor)
      return a | b;
    else
      return a ^ b;
  }
};
}  // namespace detail

/// Built-in reduction operators (also usable as ordinary binary callables).
///@{
inline constexpr detail::fast_op<detail::coll_op::add> op_fast_add{};
inline constexpr detail::fast_op<detail::coll_op::mul> op_fast_mul{};
inline constexpr detail::fast_op<detail::coll_op::min> op_fast_min{};
inline constexpr detail::fast_op<detail::coll_op::max> op_fast_max{};
inline constexpr detail::fast_op<detail::coll_op::band> op_fast_bit_and{};
inline constexpr detail::fast_op<detail::coll_op::bor> op_fast_bit_or{};
inline constexpr detail::fast_op<detail::coll_op::bxor> op_fast_bit_xor{};
///@}

// ---- backend interface (src/backend/mpi/collectives.cpp) ------------------------------

namespace detail {
using coll_type = scalar_type;

template <class Op>
struct builtin_op : std::false_type {};
template <coll_op K>
struct builtin_op<fast_op<K>> : std::true_type {};

/// True when reduce(T, Op) maps onto an MPI type and MPI op (MPI has no
/// bitwise ops on floating point, and min/max/sum/prod on all arithmetic).
template <class T, class Op>
constexpr bool mpi_reducible() {
  if constexpr (!builtin_op<Op>::value || scalar_type_of<T>() == coll_type::none)
    return false;
  else if constexpr (Op::kind == coll_op::band || Op::kind == coll_op::bor || Op::kind == coll_op::bxor)
    return std::is_integral_v<T>;
  else
    return true;
}

/// inout[i] = op(in[i], inout[i]) for i < count (elements of `elem` bytes,
/// possibly unaligned); `ctx` is the operator object.
using coll_user_fn = void (*)(const void* in, void* inout, std::size_t count, const void* ctx);

void coll_check_root(const char* what, int root, const team& t);
// A null buffer with elements to move would fault inside MPI, at this
// member or, for a broadcast, at the others when they unpack.
inline void coll_check_buffer(const char* what, const char* name, const void* p, std::size_t count) {
  if (p == nullptr && count > 0)
    throw std::invalid_argument(std::string("accrete::") + what + ": " + name + " is null with count " +
                                std::to_string(count));
}
/// Each starts the operation and runs `done` at user-level progress once it
/// is complete locally. `root` < 0 means "all" (allreduce).
void coll_ibarrier(const team& t, completion done);
void coll_ibcast(void* buf, std::size_t bytes, int root, const team& t, completion done);
void coll_ireduce(const void* src, void* dst, std::size_t count, coll_type ty, coll_op op, int root, const team& t,
                  completion done);
void coll_ireduce_user(const void* src, void* dst, std::size_t count, std::size_t elem, coll_user_fn fn,
                       const void* ctx, int root, const team& t, completion done);
/// Variable-size broadcast of serialized bytes: the root passes its bytes;
/// at the others `buf` is resized and filled before `done` runs.
void coll_ibcast_bytes(std::shared_ptr<std::vector<std::byte>> buf, int root, const team& t, completion done);
/// Variable-size reduction of serialized values: `mine` goes to the root
/// (team rank 0 when `root` < 0), which calls `fold` with every member's
/// bytes in team-rank order at user-level progress; `done` then gets the
/// folded bytes at the root, and at every member when `root` < 0 (the
/// others of reduce_one get nullopt once their bytes are sent).
using bytes_fold = std::function<std::vector<std::byte>(std::vector<std::vector<std::byte>>&)>;
using bytes_done = std::function<void(std::optional<std::vector<std::byte>>&&)>;
void coll_ireduce_bytes(std::shared_ptr<std::vector<std::byte>> mine, int root, const team& t, bytes_fold fold,
                        bytes_done done);

template <class T, class Op>
void user_op_trampoline(const void* in, void* inout, std::size_t count, const void* ctx) {
  const Op& op = *static_cast<const Op*>(ctx);
  auto a = static_cast<const std::byte*>(in);
  auto b = static_cast<std::byte*>(inout);
  for (std::size_t i = 0; i < count; ++i) {
    T x, y;
    std::memcpy(static_cast<void*>(std::addressof(x)), a + i * sizeof(T), sizeof(T));
    std::memcpy(static_cast<void*>(std::addressof(y)), b + i * sizeof(T), sizeof(T));
    T z = op(x, y);
    std::memcpy(b + i * sizeof(T), static_cast<const void*>(std::addressof(z)), sizeof(T));
  }
}

template <class T, class Op>
inline constexpr bool reduce_ok =
    moves_as_bytes<T>&& std::is_default_constructible_v<T>&& std::is_invocable_r_v<T, const Op&, const T&, const T&>;

/// Starts a reduction of `count` elements; `op` must stay alive until done.
template <class T, class Op>
void start_reduce(const T* src, T* dst, std::size_t count, const Op* op, int root, const team& t, completion done) {
  if constexpr (mpi_reducible<T, Op>())
    coll_ireduce(src, dst, count, scalar_type_of<T>(), Op::kind, root, t, std::move(done));
  else
    coll_ireduce_user(src, dst, count, sizeof(T), &user_op_trampoline<T, Op>, op, root, t, std::move(done));
}

// A value reduced by serialization: neither moved as bytes nor a view.
template <class T, class Op>
inline constexpr bool reduce_serialized_ok =
    !moves_as_bytes<T> && is_serializable_v<T> && std::is_same_v<deserialized_type_t<T>, T> &&
    std::is_invocable_r_v<T, const Op&, const T&, const T&>;

template <class T, class Op>
future<T> reduce_serialized(T value, Op op, int root, const team& t) {
  auto mine = std::make_shared<std::vector<std::byte>>();
  mine->reserve(256);
  {
    writer w(*mine);
    w.write(value);
  }
  auto s = std::make_shared<std::pair<T, promise<T>>>(std::move(value), promise<T>());
  coll_ireduce_bytes(
      mine, root, t,
      [op = std::move(op)](std::vector<std::vector<std::byte>>& parts) {
        T acc = deserialize<T>(parts[0]);
        for (std::size_t i = 1; i < parts.size(); ++i) acc = op(acc, deserialize<T>(parts[i]));
        std::vector<std::byte> out;
        out.reserve(256);
        writer w(out);
        w.write(acc);
        return out;
      },
      [s](std::optional<std::vector<std::byte>>&& folded) {
        s->second.fulfill_result(folded ? deserialize<T>(*folded) : std::move(s->first));
        s->second.fulfill_anonymous(1);
      });
  return s->second.get_future();
}

template <class T, class Op>
struct reduce_state {
  // A constructor, not an aggregate: make_shared's parenthesized aggregate
  // initialization needs clang 16 or later.
  reduce_state(const T& i, const T& o, Op f, promise<T> pr) : in(i), out(o), op(std::move(f)), p(std::move(pr)) {}
  T in, out;
  Op op;
  promise<T> p;
};
}  // namespace detail

// ---- barrier -----------------------------------------------------------------------

/// Non-blocking barrier over `t` (see the header comment for completion).
future<> barrier_async(const team& t = world());

// ---- broadcast ------------------------------------------------------------------------

/// Broadcasts `value` from team rank `root`; every member's future gets the
/// root's value. Trivially copyable T travels as bytes; other serializable
/// types are serialized (non-roots' `value` is ignored).
template <class T>
future<T> broadcast(T value, int root, const team& t = world()) {
  detail::coll_check_root("broadcast", root, t);
  if constexpr (detail::moves_as_bytes<T>) {
    auto s = std::make_shared<std::pair<T, promise<T>>>(std::move(value), promise<T>());
    detail::coll_ibcast(&s->first, sizeof(T), root, t, [s] {
      s->second.fulfill_result(std::move(s->first));
      s->second.fulfill_anonymous(1);
    });
    return s->second.get_future();
  } else {
    static_assert(is_serializable_v<T>, "accrete::broadcast: T is neither trivially copyable nor serializable");
    static_assert(std::is_same_v<deserialized_type_t<T>, T>,
                  "accrete::broadcast: T must deserialize to itself (views cannot be broadcast)");
    auto buf = std::make_shared<std::vector<std::byte>>();
    const bool me_root = t.rank_me() == root;
    if (me_root) {
      buf->reserve(256);  // (also keeps GCC 12's -Wstringop-overflow false positive away)
      writer w(*buf);
      w.write(value);
    }
    auto s = std::make_shared<std::pair<T, promise<T>>>(me_root ? std::move(value) : T(), promise<T>());
    detail::coll_ibcast_bytes(buf, root, t, [s, buf, me_root] {
      if (!me_root) s->first = deserialize<T>(*buf);
      s->second.fulfill_result(std::move(s->first));
      s->second.fulfill_anonymous(1);
    });
    return s->second.get_future();
  }
}

/// Broadcasts `count` elements in place: on completion `buffer` at every
/// member holds the root's elements.
template <class T>
requires detail::moves_as_bytes<T> future<> broadcast(T* buffer, std::size_t count, int root, const team& t = world()) {
  detail::coll_check_root("broadcast", root, t);
  if (count > std::size_t(-1) / sizeof(T)) throw std::length_error("accrete::broadcast: count overflows");
  detail::coll_check_buffer("broadcast", "buffer", buffer, count);
  auto p = std::make_shared<promise<>>();
  detail::coll_ibcast(buffer, count * sizeof(T), root, t, [p] { p->fulfill_anonymous(1); });
  return p->get_future();
}

// ---- reductions -------------------------------------------------------------------------

/// Combines every member's `value` with `op`; the future at team rank `root`
/// holds the result, at the others it holds an unspecified value.
template <class T, class Op>
requires detail::reduce_ok<T, Op> future<T> reduce_one(T value, Op op, int root, const team& t = world()) {
  detail::coll_check_root("reduce_one", root, t);
  auto s = std::make_shared<detail::reduce_state<T, Op>>(value, value, std::move(op), promise<T>());
  detail::start_reduce(&s->in, &s->out, 1, &s->op, root, t, [s] {
    s->p.fulfill_result(s->out);
    s->p.fulfill_anonymous(1);
  });
  return s->p.get_future();
}

/// The same for a value that is serialized (see the header comment).
template <class T, class Op>
requires detail::reduce_serialized_ok<T, Op> future<T> reduce_one(T value, Op op, int root, const team& t = world()) {
  detail::coll_check_root("reduce_one", root, t);
  return detail::reduce_serialized(std::move(value), std::move(op), root, t);
}

/// Combines every member's `value` with `op`; every member gets the result.
template <class T, class Op>
requires detail::reduce_serialized_ok<T, Op> future<T> reduce_all(T value, Op op, const team& t = world()) {
  return detail::reduce_serialized(std::move(value), std::move(op), -1, t);
}

/// Combines every member's `value` with `op`; every member gets the result.
template <class T, class Op>
requires detail::reduce_ok<T, Op> future<T> reduce_all(T value, Op op, const team& t = world()) {
  auto s = std::make_shared<detail::reduce_state<T, Op>>(value, value, std::move(op), promise<T>());
  detail::start_reduce(&s->in, &s->out, 1, &s->op, -1, t, [s] {
    s->p.fulfill_result(s->out);
    s->p.fulfill_anonymous(1);
  });
  return s->p.get_future();
}

/// Element-wise reduction of `count` elements into `dst` at `root` (`dst` is
/// not written elsewhere; it may be null there). `src == dst` reduces in
/// place.
template <class T, class Op>
requires detail::reduce_ok<T, Op> future<> reduce_one(const T* src, T* dst, std::size_t count, Op op, int root,
                                                      const team& t = world()) {
  detail::coll_check_root("reduce_one", root, t);
  detail::coll_check_buffer("reduce_one", "src", src, count);
  if (t.rank_me() == root) detail::coll_check_buffer("reduce_one", "dst at the root", dst, count);
  auto s = std::make_shared<std::pair<Op, promise<>>>(std::move(op), promise<>());
  detail::start_reduce(src, dst, count, &s->first, root, t, [s] { s->second.fulfill_anonymous(1); });
  return s->second.get_future();
}

/// Element-wise reduction of `count` elements into `dst` on every member.
/// `src == dst` reduces in place.
template <class T, class Op>
requires detail::reduce_ok<T, Op> future<> reduce_all(const T* src, T* dst, std::size_t count, Op op,
                                                      const team& t = world()) {
  detail::coll_check_buffer("reduce_all", "src", src, count);
  detail::coll_check_buffer("reduce_all", "dst", dst, count);
  auto s = std::make_shared<std::pair<Op, promise<>>>(std::move(op), promise<>());
  detail::start_reduce(src, dst, count, &s->first, -1, t, [s] { s->second.fulfill_anonymous(1); });
  return s->second.get_future();
}

}  // namespace accrete
