#pragma once
#include "accrete/detail/internal.hpp"
// Glue between the non-contiguous puts and remote completions
// (accrete/remote_completion.hpp: remote_cx::as_rpc), so strided and
// irregular puts accept the same completion objects as rput.
#include <type_traits>
#include <utility>

#include "accrete/detail/backend.hpp"
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

}  // namespace accrete::detail
