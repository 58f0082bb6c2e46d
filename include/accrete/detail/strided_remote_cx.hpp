#pragma once
// Glue between the non-contiguous puts and remote completions
// (accrete/remote_completion.hpp: remote_cx::as_rpc), so strided and
// irregular puts accept the same completion objects as rput.
#include "accrete/detail/internal.hpp"
#include <memory>
#include <type_traits>
#include <utility>

#include "accrete/detail/backend.hpp"
#include "accrete/promise.hpp"
#include "accrete/remote_completion.hpp"

namespace accrete::detail {

template <class X>
struct is_remote_cx : std::false_type {};
template <>
struct is_remote_cx<remote_cx::rpc_cx> : std::true_type {};

/// Sends the remote completion. Called only once the data is at the target:
/// right after a node-local copy (the fence orders the copy before the
/// message), or from the flush completion of an MPI put, whose flush has
/// made the data visible at the target. The target fences again on receipt.
inline void fire_remote(int rank, remote_cx::rpc_cx& cx) {
  memory_sync();
  rpc_send(rank, cx.handler(), std::move(cx.message()));
}

/// The completion of a non-contiguous transfer to `rank` that is not
/// complete on return: it fulfils `p` (or, when `p` is null, a promise of
/// its own whose future is returned alongside) and then fires `rcx`.
template <class Rcx>
std::pair<completion, future<>> transfer_completion(promise<>* p, int rank, Rcx rcx) {
  std::shared_ptr<promise<>> own;
  promise<>* target = p;
  future<> f = make_future();  // p given: the caller waits on p, not on this
  if (!p) {
    own = std::make_shared<promise<>>();
    target = own.get();
    f = own->get_future();
  } else {
    p->require_anonymous(1);
  }
  completion done = [own, target, rank, rcx = std::move(rcx)]() mutable {
    if constexpr (is_remote_cx<Rcx>::value)
      fire_remote(rank, rcx);
    else
      (void)rank;
    target->fulfill_anonymous(1);
  };
  return {std::move(done), std::move(f)};
}

}  // namespace accrete::detail
