#pragma once
/// \file
// Contiguous one-sided transfers: rput and rget.
//
// Completion: each call reports operation completion (put: the data is in
// the target's memory and visible to later operations and to the target
// after synchronisation; get: the data is in the caller's buffer) through
// the returned future, or by fulfilling a promise the caller passes (the
// call registers one anonymous dependency on it; the promise must stay alive
// until then). A put's source buffer (and a get's destination) must stay
// valid and untouched until completion, except for the single-value rput,
// which copies its value.
//
// Paths: a node-local target is reached by memcpy through the shared
// segment, and the operation is complete when the call returns (the future
// is ready). Other targets use MPI_Put/MPI_Get on the world window; those
// complete during progress (internal progress issues one MPI_Win_flush per
// target for everything outstanding, and a flood completing one promise
// shares one counter, not one callback per operation). Transfers of any
// size are split as MPI requires.
//
// Thread safety: in the seq thread mode, call from the thread that drives
// the runtime; in par, from any thread, each completion running in the
// persona current at issue (docs/semantics.md, "Threads").
// Lets this header include accrete/detail/ headers (see detail/internal.hpp).
#ifndef ACCRETE_PUBLIC_INCLUDE
#define ACCRETE_PUBLIC_INCLUDE
#define ACCRETE_PUBLIC_INCLUDE_RMA
#endif

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>
#include <type_traits>

#include "accrete/detail/backend.hpp"
#include "accrete/future.hpp"
#include "accrete/global_ptr.hpp"
#include "accrete/promise.hpp"

#ifdef ACCRETE_PUBLIC_INCLUDE_RMA
#undef ACCRETE_PUBLIC_INCLUDE
#undef ACCRETE_PUBLIC_INCLUDE_RMA
#endif

namespace accrete {

namespace detail {
template <class T>
inline constexpr bool rma_ok = moves_as_bytes<T>;

template <class T>
std::size_t checked_bytes(const char* what, global_ptr<T> g, std::size_t count) {
  if (g.is_null()) throw bad_global_ptr(std::string("accrete::") + what + ": null global pointer");
  if (count > std::size_t(-1) / sizeof(T))
    throw bad_global_ptr(std::string("accrete::") + what + ": element count " + std::to_string(count) + " overflows");
  std::size_t bytes = count * sizeof(T);
  check_range(what, g.where(), g.offset(), bytes);
  return bytes;
}

// Node-local copy. Large copies go in 256 KiB pieces: glibc's memcpy
// switches to a slower method for single copies beyond the L2 size, while
// pieces stay on the fast path (measured: 1 MiB 20.6 vs 17.3 us).
inline void local_copy(void* dst, const void* src, std::size_t bytes) {
  constexpr std::size_t piece = std::size_t{256} << 10;
  auto d = static_cast<std::byte*>(dst);
  auto s = static_cast<const std::byte*>(src);
  if (bytes <= piece || (d < s + bytes && s < d + bytes)) {
    if (bytes) std::memmove(d, s, bytes);
    return;
  }
  for (std::size_t off = 0; off < bytes; off += piece) std::memcpy(d + off, s + off, std::min(piece, bytes - off));
}

// A pending future<> whose state the backend completes by counting.
inline std::pair<future<>, state_base*> pending_op() {
  auto* st = new state<>(1);
  return {future_access::adopt(st), st};
}

// Shared body of the bulk put (put = true: local -> rank) and get with
// future completion: copies directly when node-local (the future is ready),
// else starts the MPI transfer, completed by counting.
inline future<> contiguous_op(bool put, int rank, std::uint64_t off, void* local, std::size_t bytes) {
  if (std::byte* base = segment_base(rank)) {
    put ? local_copy(base + off, local, bytes) : local_copy(local, base + off, bytes);
    return make_future();
  }
  auto [f, s] = pending_op();
  put ? put_remote(rank, off, local, bytes, s) : get_remote(rank, off, local, bytes, s);
  return f;
}

// Shared body of the bulk put/get with promise completion: copies directly
// when node-local, else starts the MPI transfer, which fulfils one
// dependency of `p` when complete.
template <class P>
void put_bytes(int rank, std::uint64_t off, const void* src, std::size_t bytes, P& p) {
  if (std::byte* base = segment_base(rank)) {
    p.require_anonymous(0);  // still rejects a promise that is already ready
    local_copy(base + off, src, bytes);
    return;
  }
  p.require_anonymous(1);
  put_remote(rank, off, src, bytes, promise_access::state(p));
}
template <class P>
void get_bytes(int rank, std::uint64_t off, void* dst, std::size_t bytes, P& p) {
  if (std::byte* base = segment_base(rank)) {
    p.require_anonymous(0);
    local_copy(dst, base + off, bytes);
    return;
  }
  p.require_anonymous(1);
  get_remote(rank, off, dst, bytes, promise_access::state(p));
}
}  // namespace detail

/// Copies `count` elements from local `src` to `dest`.
template <class T>
requires detail::rma_ok<T> future<> rput(const T* src, global_ptr<T> dest, std::size_t count) {
  std::size_t bytes = detail::checked_bytes("rput", dest, count);
  return detail::contiguous_op(true, dest.where(), dest.offset(), const_cast<T*>(src), bytes);
}

/// As above; completion fulfils one anonymous dependency registered on `p`.
template <class T>
requires detail::rma_ok<T>
void rput(const T* src, global_ptr<T> dest, std::size_t count, promise<>& p) {
  std::size_t bytes = detail::checked_bytes("rput", dest, count);
  detail::put_bytes(dest.where(), dest.offset(), src, bytes, p);
}

/// Writes one value to `dest`. The value is copied: nothing to keep alive.
template <class T>
requires detail::rma_ok<T> future<> rput(const T& value, global_ptr<T> dest) {
  std::size_t bytes = detail::checked_bytes("rput", dest, 1);
  if (std::byte* base = detail::segment_base(dest.where())) {
    std::memcpy(base + dest.offset(), static_cast<const void*>(std::addressof(value)), bytes);
    return make_future();
  }
  auto keep = std::make_shared<std::pair<T, promise<>>>(value, promise<>());
  detail::put_remote(dest.where(), dest.offset(), &keep->first, bytes, [keep] { keep->second.fulfill_anonymous(1); });
  return keep->second.get_future();
}

/// Copies `count` elements from `src` (which may point to const) into
/// local `dest`.
template <class S, class T = std::remove_const_t<S>>
requires detail::rma_ok<T> future<> rget(global_ptr<S> src, std::type_identity_t<T>* dest, std::size_t count) {
  std::size_t bytes = detail::checked_bytes("rget", src, count);
  return detail::contiguous_op(false, src.where(), src.offset(), dest, bytes);
}

/// As above; completion fulfils one anonymous dependency registered on `p`.
template <class S, class T = std::remove_const_t<S>>
requires detail::rma_ok<T>
void rget(global_ptr<S> src, std::type_identity_t<T>* dest, std::size_t count, promise<>& p) {
  std::size_t bytes = detail::checked_bytes("rget", src, count);
  detail::get_bytes(src.where(), src.offset(), dest, bytes, p);
}

/// Reads one value.
template <class S, class T = std::remove_const_t<S>>
requires detail::rma_ok<T> future<T> rget(global_ptr<S> src) {
  std::size_t bytes = detail::checked_bytes("rget", src, 1);
  if (std::byte* base = detail::segment_base(src.where())) {
    T v;
    std::memcpy(static_cast<void*>(std::addressof(v)), base + src.offset(), bytes);
    return make_future(v);
  }
  auto keep = std::make_shared<std::pair<T, promise<T>>>();
  detail::get_remote(src.where(), src.offset(), &keep->first, bytes, [keep] {
    keep->second.fulfill_result(keep->first);
    keep->second.finalize();
  });
  return keep->second.get_future();
}

}  // namespace accrete
