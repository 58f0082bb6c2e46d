#pragma once
/// \file
// Strided one-sided transfers of N-dimensional sections (UPC++ style).
//
//   rput_strided<Dim>(src_base, src_strides, dest_base, dest_strides, extents [, promise] [, remote_cx])
//   rget_strided<Dim>(src_base, src_strides, dest_base, dest_strides, extents [, promise])
//
// A section is extents[0] x ... x extents[Dim-1] elements of T; element
// (i0, ..., iDim-1) lives at base + sum(i_d * strides[d]) bytes on each
// side. Strides are in bytes and may be negative or zero on the local side
// (a zero source stride repeats data); no dimension is assumed contiguous.
// Overlapping destination elements get one of the written values. Runtime
// dimension counts use the std::span overloads (all three spans equal length).
//
// Validation happens before any data moves and throws accrete::bad_global_ptr
// naming the dimension: an extent above PTRDIFF_MAX (a negative count that
// was converted), a section whose size or byte span overflows, a remote
// section that runs outside its segment. A zero extent moves nothing (the
// operation completes at once; a remote completion still runs).
//
// Completion: the returned future<> (or one anonymous dependency registered
// on a promise<> the caller passes, which must stay alive) means operation
// completion: for a put the data is at the target and the source may be
// reused; for a get the data is in the local buffer. The local buffer must
// stay valid and untouched until then. A remote_cx::as_rpc(f, args...)
// passed to a put runs f(args...) on the target, during its user-level
// progress, after the data is visible there: the way to tell a neighbour
// "your halo has arrived" without a barrier.
//
// Paths: a node-local target (global_ptr::is_local) is copied directly,
// complete when the call returns. Other targets use MPI_Put/MPI_Get on the
// segment window, as one derived-datatype operation or a batch of
// contiguous ones, completing at the first user-level progress after the
// backend's next flush; or (under MPICH, whose RMA involves the target
// anyway) one active message that the target's progress unpacks and
// acknowledges, completing at the origin's user-level progress after the
// acknowledgement, a put's remote completion riding in the same message.
// Which one is measured per shape; see docs/noncontig.md.
//
// Progress: only internal progress happens inside these calls. On the
// message path the target must make progress (any accrete call there, or
// its progress thread) for the operation to complete, as for an RPC.
// Thread safety: in the seq thread mode, call from the thread that drives
// the runtime; in par, from any thread (completion in the issuing thread's
// persona, as for rput).
// Lets this header include accrete/detail/ headers (see detail/internal.hpp).
#ifndef ACCRETE_PUBLIC_INCLUDE
#define ACCRETE_PUBLIC_INCLUDE
#define ACCRETE_PUBLIC_INCLUDE_RMA_STRIDED
#endif

#include <array>
#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "accrete/detail/strided_backend.hpp"
#include "accrete/detail/strided_remote_cx.hpp"
#include "accrete/error.hpp"
#include "accrete/future.hpp"
#include "accrete/global_ptr.hpp"
#include "accrete/promise.hpp"
#include "accrete/rma.hpp"

#ifdef ACCRETE_PUBLIC_INCLUDE_RMA_STRIDED
#undef ACCRETE_PUBLIC_INCLUDE
#undef ACCRETE_PUBLIC_INCLUDE_RMA_STRIDED
#endif

namespace accrete {

namespace detail {

inline void check_dims(const char* what, std::size_t a, std::size_t b, std::size_t c) {
  if (a != b || a != c)
    throw bad_global_ptr(std::string("accrete::") + what + ": stride and extent lists differ in length (" +
                         std::to_string(a) + ", " + std::to_string(b) + ", " + std::to_string(c) + ")");
}

struct no_remote_cx {};

// One body for every overload: validate, move, then report completion
// through the promise `p` (nullptr: make a future) and the remote completion.
template <class T, class Rcx>
future<> strided_op(bool put, const char* what, int rank, std::uint64_t off, std::byte* local,
                    const std::ptrdiff_t* local_strides, const std::ptrdiff_t* remote_strides,
                    const std::size_t* extents, std::size_t dims, promise<>* p, Rcx rcx) {
  if (rank < 0) throw bad_global_ptr(std::string("accrete::") + what + ": null global pointer");
  strided_plan plan = plan_strided(what, put, rank, off, sizeof(T), dims, local_strides, remote_strides, extents);
  constexpr bool has_rcx = is_remote_cx<Rcx>::value;
  if (plan.empty || segment_base(rank)) {
    // Complete on return: no promise, no completion object to allocate.
    if (put)
      strided_put(rank, off, local, plan, nullptr);
    else
      strided_get(rank, off, local, plan, nullptr);
    if constexpr (has_rcx) fire_remote(rank, rcx);
    return make_future();
  }
  if constexpr (has_rcx) {
    // One message carries the data and the remote completion.
    if (put && strided_by_message(rank, plan)) {
      auto [done, f] = transfer_completion(p, rank, no_remote_cx{});
      std::span<const std::byte> payload(rcx.message());
      strided_put_message(rank, off, local, plan, std::move(done), rcx.handler(), payload.subspan(am_header_bytes));
      return std::move(f);
    }
  }
  auto [done, f] = transfer_completion(p, rank, std::move(rcx));
  if (put)
    strided_put(rank, off, local, plan, std::move(done));
  else
    strided_get(rank, off, local, plan, std::move(done));
  return std::move(f);
}

}  // namespace detail

/// Puts a Dim-dimensional section from local memory to `dest_base`'s rank.
/// See the header comment for layout, completion and errors.
template <std::size_t Dim, class T>
requires detail::rma_ok<T> future<> rput_strided(const T* src_base, const std::array<std::ptrdiff_t, Dim>& src_strides,
                                                 global_ptr<T> dest_base,
                                                 const std::array<std::ptrdiff_t, Dim>& dest_strides,
                                                 const std::array<std::size_t, Dim>& extents) {
  return detail::strided_op<T>(true, "rput_strided", dest_base.where(), dest_base.offset(),
                               reinterpret_cast<std::byte*>(const_cast<T*>(src_base)), src_strides.data(),
                               dest_strides.data(), extents.data(), Dim, nullptr, detail::no_remote_cx{});
}

/// As above; completion fulfils one anonymous dependency registered on `p`.
template <std::size_t Dim, class T>
requires detail::rma_ok<T>
void rput_strided(const T* src_base, const std::array<std::ptrdiff_t, Dim>& src_strides, global_ptr<T> dest_base,
                  const std::array<std::ptrdiff_t, Dim>& dest_strides, const std::array<std::size_t, Dim>& extents,
                  promise<>& p) {
  detail::strided_op<T>(true, "rput_strided", dest_base.where(), dest_base.offset(),
                        reinterpret_cast<std::byte*>(const_cast<T*>(src_base)), src_strides.data(), dest_strides.data(),
                        extents.data(), Dim, &p, detail::no_remote_cx{});
}

/// As the future form, plus a remote completion run on the target.
template <std::size_t Dim, class T>
requires detail::rma_ok<T> future<> rput_strided(const T* src_base, const std::array<std::ptrdiff_t, Dim>& src_strides,
                                                 global_ptr<T> dest_base,
                                                 const std::array<std::ptrdiff_t, Dim>& dest_strides,
                                                 const std::array<std::size_t, Dim>& extents, remote_cx::rpc_cx rcx) {
  return detail::strided_op<T>(true, "rput_strided", dest_base.where(), dest_base.offset(),
                               reinterpret_cast<std::byte*>(const_cast<T*>(src_base)), src_strides.data(),
                               dest_strides.data(), extents.data(), Dim, nullptr, std::move(rcx));
}

/// As the promise form, plus a remote completion run on the target.
template <std::size_t Dim, class T>
requires detail::rma_ok<T>
void rput_strided(const T* src_base, const std::array<std::ptrdiff_t, Dim>& src_strides, global_ptr<T> dest_base,
                  const std::array<std::ptrdiff_t, Dim>& dest_strides, const std::array<std::size_t, Dim>& extents,
                  promise<>& p, remote_cx::rpc_cx rcx) {
  detail::strided_op<T>(true, "rput_strided", dest_base.where(), dest_base.offset(),
                        reinterpret_cast<std::byte*>(const_cast<T*>(src_base)), src_strides.data(), dest_strides.data(),
                        extents.data(), Dim, &p, std::move(rcx));
}

/// Gets a Dim-dimensional section from `src_base`'s rank (which may point
/// to const) into local memory.
template <std::size_t Dim, class S, class T = std::remove_const_t<S>>
requires detail::rma_ok<T> future<> rget_strided(global_ptr<S> src_base,
                                                 const std::array<std::ptrdiff_t, Dim>& src_strides,
                                                 std::type_identity_t<T>* dest_base,
                                                 const std::array<std::ptrdiff_t, Dim>& dest_strides,
                                                 const std::array<std::size_t, Dim>& extents) {
  return detail::strided_op<T>(false, "rget_strided", src_base.where(), src_base.offset(),
                               reinterpret_cast<std::byte*>(dest_base), dest_strides.data(), src_strides.data(),
                               extents.data(), Dim, nullptr, detail::no_remote_cx{});
}

/// As above; completion fulfils one anonymous dependency registered on `p`.
template <std::size_t Dim, class S, class T = std::remove_const_t<S>>
requires detail::rma_ok<T>
void rget_strided(global_ptr<S> src_base, const std::array<std::ptrdiff_t, Dim>& src_strides,
                  std::type_identity_t<T>* dest_base, const std::array<std::ptrdiff_t, Dim>& dest_strides,
                  const std::array<std::size_t, Dim>& extents, promise<>& p) {
  detail::strided_op<T>(false, "rget_strided", src_base.where(), src_base.offset(),
                        reinterpret_cast<std::byte*>(dest_base), dest_strides.data(), src_strides.data(),
                        extents.data(), Dim, &p, detail::no_remote_cx{});
}

/// Runtime dimension count: the three spans must have the same length.
template <class T>
requires detail::rma_ok<T> future<> rput_strided(const T* src_base, std::span<const std::ptrdiff_t> src_strides,
                                                 global_ptr<T> dest_base, std::span<const std::ptrdiff_t> dest_strides,
                                                 std::span<const std::size_t> extents) {
  detail::check_dims("rput_strided", src_strides.size(), dest_strides.size(), extents.size());
  return detail::strided_op<T>(true, "rput_strided", dest_base.where(), dest_base.offset(),
                               reinterpret_cast<std::byte*>(const_cast<T*>(src_base)), src_strides.data(),
                               dest_strides.data(), extents.data(), extents.size(), nullptr, detail::no_remote_cx{});
}

/// Runtime dimension count: the three spans must have the same length.
template <class S, class T = std::remove_const_t<S>>
requires detail::rma_ok<T> future<> rget_strided(global_ptr<S> src_base, std::span<const std::ptrdiff_t> src_strides,
                                                 std::type_identity_t<T>* dest_base,
                                                 std::span<const std::ptrdiff_t> dest_strides,
                                                 std::span<const std::size_t> extents) {
  detail::check_dims("rget_strided", src_strides.size(), dest_strides.size(), extents.size());
  return detail::strided_op<T>(false, "rget_strided", src_base.where(), src_base.offset(),
                               reinterpret_cast<std::byte*>(dest_base), dest_strides.data(), src_strides.data(),
                               extents.data(), extents.size(), nullptr, detail::no_remote_cx{});
}

}  // namespace accrete
