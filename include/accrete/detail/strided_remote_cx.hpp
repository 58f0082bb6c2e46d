#pragma once
// Remote completion for the non-contiguous puts: an RPC that runs on the
// target after the data has landed there (UPC++'s remote_cx::as_rpc).
#include <tuple>
#include <type_traits>
#include <utility>

#include "accrete/detail/backend.hpp"
#include "accrete/rpc.hpp"

namespace accrete {

/// A remote completion: f(args...) run on the target of a put, during the
/// target's user-level progress, after the put's data is visible there.
/// Made by remote_cx::as_rpc; f and args follow rpc_ff's rules (function
/// pointers or trivially-copyable lambdas, serializable arguments).
template <class F, class... A>
struct remote_rpc_cx {
  F f;
  std::tuple<A...> args;
};

struct remote_cx {
  template <class F, class... A>
  static remote_rpc_cx<std::decay_t<F>, std::decay_t<A>...> as_rpc(F&& f, A&&... args) {
    return {std::forward<F>(f), std::tuple<std::decay_t<A>...>(std::forward<A>(args)...)};
  }
};

namespace detail {
template <class X>
struct is_remote_cx : std::false_type {};
template <class F, class... A>
struct is_remote_cx<remote_rpc_cx<F, A...>> : std::true_type {};

/// Sends the remote completion. Called only once the data is at the target:
/// directly after a node-local copy (after a fence: the message is what
/// orders the copy for the target), or from the flush completion of an MPI
/// put, whose flush has made the data visible at the target.
template <class F, class... A>
void fire_remote(int rank, const remote_rpc_cx<F, A...>& cx) {
  memory_sync();
  std::apply([&](const A&... a) { rpc_ff(rank, cx.f, a...); }, cx.args);
}
}  // namespace detail

}  // namespace accrete
