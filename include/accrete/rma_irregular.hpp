#pragma once
/// \file
// Irregular and regular one-sided transfers over lists of fragments (UPC++
// style).
//
//   rput_irregular(src_begin, src_end, dest_begin, dest_end [, promise] [, remote_cx])
//       *src  is pair-like (const T*, count), *dest is (global_ptr<T>, count)
//   rget_irregular(src_begin, src_end, dest_begin, dest_end [, promise])
//       *src  is (global_ptr<T>, count),      *dest is (T*, count)
//   rput_regular(src_begin, src_end, src_len, dest_begin, dest_end, dest_len [, promise] [, remote_cx])
//   rget_regular(...)   the same with every fragment of one side the same length;
//                       *src / *dest are plain pointers / global pointers
//
// The fragments of each side, taken in order, form one stream of elements;
// the two streams are matched element by element, so fragment boundaries
// need not line up. Source fragments may overlap (data is read twice);
// overlapping destination fragments get one of the written values. Every
// global fragment must be on one rank.
//
// Validation before any data moves (accrete::bad_global_ptr naming the
// fragment): totals that differ (the first fragment whose data has no
// counterpart is named), global fragments on different ranks or null, a
// remote fragment outside its segment, a null local fragment, lengths that
// overflow.
//
// Completion, paths, progress and thread safety: as for rput_strided /
// rget_strided (rma_strided.hpp). The MPI path issues one hindexed-datatype
// operation or a batch of contiguous ones, chosen by the measured threshold.
// Lets this header include accrete/detail/ headers (see detail/internal.hpp).
#ifndef ACCRETE_PUBLIC_INCLUDE
#define ACCRETE_PUBLIC_INCLUDE
#define ACCRETE_PUBLIC_INCLUDE_RMA_IRREGULAR
#endif

#include <cstddef>
#include <iterator>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "accrete/detail/strided_backend.hpp"
#include "accrete/detail/strided_remote_cx.hpp"
#include "accrete/error.hpp"
#include "accrete/future.hpp"
#include "accrete/global_ptr.hpp"
#include "accrete/promise.hpp"
#include "accrete/rma.hpp"
#include "accrete/rma_strided.hpp"

#ifdef ACCRETE_PUBLIC_INCLUDE_RMA_IRREGULAR
#undef ACCRETE_PUBLIC_INCLUDE
#undef ACCRETE_PUBLIC_INCLUDE_RMA_IRREGULAR
#endif

namespace accrete {

namespace detail {

template <class It>
using frag_ptr_t = std::remove_cvref_t<decltype(std::get<0>(*std::declval<It&>()))>;
template <class G>
struct gptr_elem;
template <class T>
struct gptr_elem<global_ptr<T>> {
  using type = T;
};

// Fragment lists are usually vectors: size the copies once.
template <class It, class V>
void reserve_for(It b, It e, V& v) {
  if constexpr (std::forward_iterator<It>) v.reserve(std::size_t(std::distance(b, e)));
}

[[noreturn]] inline void frag_fail(const char* what, const std::string& msg) {
  throw bad_global_ptr(std::string("accrete::") + what + ": " + msg);
}

inline std::size_t frag_bytes(const char* what, const char* side, std::size_t i, std::size_t n, std::size_t elem) {
  if (n > std::size_t(-1) / elem)
    frag_fail(what,
              std::string(side) + " fragment " + std::to_string(i) + ": length " + std::to_string(n) + " overflows");
  return n * elem;
}

/// Collects global fragments (all on one rank) as segment offsets.
template <class T>
struct remote_list {
  int rank = -1;
  std::vector<remote_frag> frags;
  void add(const char* what, const char* side, global_ptr<T> g, std::size_t n) {
    std::size_t i = frags.size();
    if (g.is_null())
      frag_fail(what, std::string(side) + " fragment " + std::to_string(i) + " is a null global pointer");
    if (rank < 0)
      rank = g.where();
    else if (g.where() != rank)
      frag_fail(what, std::string(side) + " fragment " + std::to_string(i) + " is on rank " +
                          std::to_string(g.where()) + ", earlier fragments on rank " + std::to_string(rank));
    frags.push_back({g.offset(), frag_bytes(what, side, i, n, sizeof(T))});
  }
};

template <class T, class Rcx>
future<> irregular_op(bool put, const char* what, const std::vector<local_frag>& local, remote_list<T>& remote,
                      promise<>* p, Rcx rcx) {
  // Not `remote.rank < 0`: after a program's `using namespace std;` that
  // parses as the start of std::rank<...>.
  const int rank = remote.rank >= 0 ? remote.rank : world_rank();
  check_irregular(what, put, rank, sizeof(T), local, remote.frags);
  constexpr bool has_rcx = is_remote_cx<Rcx>::value;
  if (segment_base(rank)) {
    if (put)
      irregular_put(rank, local, remote.frags, nullptr);
    else
      irregular_get(rank, remote.frags, local, nullptr);
    if constexpr (has_rcx) fire_remote(rank, rcx);
    return make_future();
  }
  auto [done, f] = transfer_completion(p, rank, std::move(rcx));
  bool eager = put ? irregular_put(rank, local, remote.frags, done) : irregular_get(rank, remote.frags, local, done);
  if (eager) defer(std::move(done));  // nothing to move: all fragments were empty
  return std::move(f);
}

// Builds both fragment lists and runs the transfer. The local side's
// fragments come from [lb, le), the remote side's from [rb, re); `ptr` and
// `len` read a fragment's pointer and element count (a (pointer, length)
// tuple, or a bare pointer with the regular forms' fixed length).
template <class T, class LIt, class RIt, class LPtr, class LLen, class RPtr, class RLen, class Rcx>
future<> fragments_op(bool put, const char* what, LIt lb, LIt le, LPtr lptr, LLen llen, RIt rb, RIt re, RPtr rptr,
                      RLen rlen, promise<>* p, Rcx rcx) {
  static_assert(rma_ok<T>, "irregular transfers: element type must be trivially copyable (or declared trivially serializable)");
  const char* lside = put ? "source" : "destination";
  const char* rside = put ? "destination" : "source";
  std::vector<local_frag> l;
  remote_list<T> r;
  reserve_for(lb, le, l);
  reserve_for(rb, re, r.frags);
  for (std::size_t i = 0; lb != le; ++lb, ++i)
    l.push_back({reinterpret_cast<const std::byte*>(lptr(*lb)), frag_bytes(what, lside, i, llen(*lb), sizeof(T))});
  for (; rb != re; ++rb) r.add(what, rside, rptr(*rb), rlen(*rb));
  return irregular_op<T>(put, what, l, r, p, std::move(rcx));
}

inline constexpr auto tuple_ptr = [](const auto& f) { return std::get<0>(f); };
inline constexpr auto tuple_len = [](const auto& f) { return std::size_t(std::get<1>(f)); };
inline constexpr auto bare_ptr = [](const auto& f) { return f; };
inline auto fixed_len(std::size_t n) {
  return [n](const auto&) { return n; };
}

template <class SrcIt, class DstIt, class Rcx>
future<> rput_irregular_impl(SrcIt sb, SrcIt se, DstIt db, DstIt de, promise<>* p, Rcx rcx) {
  using T = typename gptr_elem<frag_ptr_t<DstIt>>::type;
  return fragments_op<T>(true, "rput_irregular", sb, se, tuple_ptr, tuple_len, db, de, tuple_ptr, tuple_len, p,
                         std::move(rcx));
}

template <class SrcIt, class DstIt>
future<> rget_irregular_impl(SrcIt sb, SrcIt se, DstIt db, DstIt de, promise<>* p) {
  using T = typename gptr_elem<frag_ptr_t<SrcIt>>::type;
  return fragments_op<T>(false, "rget_irregular", db, de, tuple_ptr, tuple_len, sb, se, tuple_ptr, tuple_len, p,
                         no_remote_cx{});
}

template <class SrcIt, class DstIt, class Rcx>
future<> rput_regular_impl(SrcIt sb, SrcIt se, std::size_t sl, DstIt db, DstIt de, std::size_t dl, promise<>* p,
                           Rcx rcx) {
  using T = typename gptr_elem<std::remove_cvref_t<decltype(*db)>>::type;
  return fragments_op<T>(true, "rput_regular", sb, se, bare_ptr, fixed_len(sl), db, de, bare_ptr, fixed_len(dl), p,
                         std::move(rcx));
}

template <class SrcIt, class DstIt>
future<> rget_regular_impl(SrcIt sb, SrcIt se, std::size_t sl, DstIt db, DstIt de, std::size_t dl, promise<>* p) {
  using T = typename gptr_elem<std::remove_cvref_t<decltype(*sb)>>::type;
  return fragments_op<T>(false, "rget_regular", db, de, bare_ptr, fixed_len(dl), sb, se, bare_ptr, fixed_len(sl), p,
                         no_remote_cx{});
}

}  // namespace detail

/// Puts the source fragments' elements, in order, into the destination
/// fragments (all on one rank). Returns operation completion.
template <class SrcIt, class DstIt>
future<> rput_irregular(SrcIt src_begin, SrcIt src_end, DstIt dest_begin, DstIt dest_end) {
  return detail::rput_irregular_impl(src_begin, src_end, dest_begin, dest_end, nullptr, detail::no_remote_cx{});
}
/// As above; completion fulfils one anonymous dependency on `p`.
template <class SrcIt, class DstIt>
void rput_irregular(SrcIt src_begin, SrcIt src_end, DstIt dest_begin, DstIt dest_end, promise<>& p) {
  detail::rput_irregular_impl(src_begin, src_end, dest_begin, dest_end, &p, detail::no_remote_cx{});
}
/// As the future form, plus f(args...) run on the target after the data landed.
template <class SrcIt, class DstIt>
future<> rput_irregular(SrcIt src_begin, SrcIt src_end, DstIt dest_begin, DstIt dest_end, remote_cx::rpc_cx rcx) {
  return detail::rput_irregular_impl(src_begin, src_end, dest_begin, dest_end, nullptr, std::move(rcx));
}

/// Gets the source fragments' elements (all on one rank), in order, into the
/// local destination fragments. Returns operation completion.
template <class SrcIt, class DstIt>
future<> rget_irregular(SrcIt src_begin, SrcIt src_end, DstIt dest_begin, DstIt dest_end) {
  return detail::rget_irregular_impl(src_begin, src_end, dest_begin, dest_end, nullptr);
}
/// As above; completion fulfils one anonymous dependency on `p`.
template <class SrcIt, class DstIt>
void rget_irregular(SrcIt src_begin, SrcIt src_end, DstIt dest_begin, DstIt dest_end, promise<>& p) {
  detail::rget_irregular_impl(src_begin, src_end, dest_begin, dest_end, &p);
}

/// Regular fragments: every source fragment is `src_len` elements, every
/// destination fragment `dest_len`; iterators yield plain pointers
/// (const T*) and global pointers (global_ptr<T>). Completion: the future,
/// a promise, or a remote-completion RPC, as for rput.
///@{
template <class SrcIt, class DstIt>
future<> rput_regular(SrcIt src_begin, SrcIt src_end, std::size_t src_len, DstIt dest_begin, DstIt dest_end,
                      std::size_t dest_len) {
  return detail::rput_regular_impl(src_begin, src_end, src_len, dest_begin, dest_end, dest_len, nullptr,
                                   detail::no_remote_cx{});
}
template <class SrcIt, class DstIt>
void rput_regular(SrcIt src_begin, SrcIt src_end, std::size_t src_len, DstIt dest_begin, DstIt dest_end,
                  std::size_t dest_len, promise<>& p) {
  detail::rput_regular_impl(src_begin, src_end, src_len, dest_begin, dest_end, dest_len, &p, detail::no_remote_cx{});
}
template <class SrcIt, class DstIt>
future<> rput_regular(SrcIt src_begin, SrcIt src_end, std::size_t src_len, DstIt dest_begin, DstIt dest_end,
                      std::size_t dest_len, remote_cx::rpc_cx rcx) {
  return detail::rput_regular_impl(src_begin, src_end, src_len, dest_begin, dest_end, dest_len, nullptr,
                                   std::move(rcx));
}
///@}
/// Regular fragments, get direction: iterators yield global_ptr<T> (source)
/// and T* (destination). Completion: the future or a promise.
///@{
template <class SrcIt, class DstIt>
future<> rget_regular(SrcIt src_begin, SrcIt src_end, std::size_t src_len, DstIt dest_begin, DstIt dest_end,
                      std::size_t dest_len) {
  return detail::rget_regular_impl(src_begin, src_end, src_len, dest_begin, dest_end, dest_len, nullptr);
}
template <class SrcIt, class DstIt>
void rget_regular(SrcIt src_begin, SrcIt src_end, std::size_t src_len, DstIt dest_begin, DstIt dest_end,
                  std::size_t dest_len, promise<>& p) {
  detail::rget_regular_impl(src_begin, src_end, src_len, dest_begin, dest_end, dest_len, &p);
}
///@}

}  // namespace accrete
