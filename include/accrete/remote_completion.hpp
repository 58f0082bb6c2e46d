#pragma once
/// \file
// Remote completion for RMA: a put that runs an RPC at the target once the
// data has landed there (UPC++'s remote_cx::as_rpc).
//
//   auto cx = accrete::remote_cx::as_rpc(f, args...);
//   future<> done = accrete::rput(src, dest, count, std::move(cx));
//   future<> done = accrete::rput(value, dest, accrete::remote_cx::as_rpc(f, args...));
//
// Semantics: f(args...) runs on dest.where() during that process's
// user-level progress, after all `count` elements are in its segment and
// visible to it (f may read them through dest.local()). f's result is
// discarded (as with rpc_ff); f may issue RPCs and communication.
//
// Callable and arguments follow rpc_ff's rules (serializable captures and
// arguments, view<T>, dist_object<T>&, ...); they are serialized when
// as_rpc() is called, so the caller's objects may be reused at once.
//
// Paths: for a node-local target the data is copied, a memory fence is
// issued, and then the RPC message is sent, all inside rput(). For other
// targets the put is issued with MPI_Put; once it is complete at the
// target (after the backend's flush) the RPC message is sent, from the
// caller's user-level progress: the caller must keep making progress (any
// wait() will do) for the RPC to leave. The target fences memory before
// running f.
//
// Completion at the origin: the returned future is ready once the data is
// in the target's memory and the RPC message has been handed to the
// transport; the source buffer may be reused then (for a node-local target:
// when rput returns). It does not wait for f to run: for an acknowledgement,
// have f reply (e.g. by rpc_ff back to the origin) or use rpc() instead.
//
// Progress: rput itself makes only internal progress (flow control of the
// RPC message may wait for earlier messages to drain).
//
// Errors: as for rput (bad_global_ptr for null/out-of-range pointers) and
// rpc_ff (accrete::error for a null function pointer).
//
// Thread-safety: call from the thread that drives the runtime.
// Lets this header include accrete/detail/ headers (see detail/internal.hpp).
#ifndef ACCRETE_PUBLIC_INCLUDE
#define ACCRETE_PUBLIC_INCLUDE
#define ACCRETE_PUBLIC_INCLUDE_REMOTE_COMPLETION
#endif

#include <cstddef>
#include <cstring>
#include <memory>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "accrete/detail/backend.hpp"
#include "accrete/future.hpp"
#include "accrete/global_ptr.hpp"
#include "accrete/promise.hpp"
#include "accrete/rma.hpp"
#include "accrete/rpc.hpp"

#ifdef ACCRETE_PUBLIC_INCLUDE_REMOTE_COMPLETION
#undef ACCRETE_PUBLIC_INCLUDE
#undef ACCRETE_PUBLIC_INCLUDE_REMOTE_COMPLETION
#endif

namespace accrete {

namespace detail {
/// Target side of a remote completion: fence (the data arrived by direct
/// store or MPI_Put, not through the message), then run it like rpc_ff.
template <class F, class... A>
struct rcx_trampoline {
  static void run(int src, std::span<const std::byte> p) {
    memory_sync();
    rpc_trampoline<F, A...>::fire_and_forget(src, p);
  }
  static inline const bool registered = [] {
    am_register(&run, false);
    return rpc_trampoline<F, A...>::registered;
  }();
};
}  // namespace detail

namespace remote_cx {

/// A remote-completion RPC, ready to send: made by as_rpc(), consumed by
/// rput(). Move-only in spirit (it is sent once).
class rpc_cx {
 public:
  /// Internal (as_rpc() makes it; rput() sends it): the handler to run at
  /// the target and its serialized arguments.
  ///@{
  rpc_cx(detail::am_handler h, std::vector<std::byte>&& msg) : h_(h), msg_(std::move(msg)) {}
  detail::am_handler handler() const noexcept { return h_; }
  std::vector<std::byte>& message() noexcept { return msg_; }
  ///@}

 private:
  detail::am_handler h_;
  std::vector<std::byte> msg_;
};

/// Packages f(args...) to run at the target of a put after its data has
/// landed. Checks and serializes like rpc_ff(); see the header comment.
template <class F, class... Args>
rpc_cx as_rpc(F&& f, Args&&... args) {
  using Fd = std::decay_t<F>;
  using sig = detail::rpc_sig<Fd, detail::rpc_decay_t<Args>...>;
  detail::rpc_check_static<Fd, detail::rpc_decay_t<Args>...>();
  if constexpr (sig::callable_ok && sig::invocable) {
    using T = detail::rcx_trampoline<Fd, detail::rpc_decay_t<Args>...>;
    const Fd& fn = f;
    detail::rpc_check_send<T>("remote_cx::as_rpc", fn);
    return rpc_cx(&T::run, detail::rpc_message<Fd, detail::rpc_decay_t<Args>...>(nullptr, fn, args...));
  } else {
    return rpc_cx(nullptr, {});
  }
}

}  // namespace remote_cx

namespace detail {
inline future<> put_then_rpc(int rank, std::uint64_t off, const void* src, std::size_t bytes, remote_cx::rpc_cx&& cx) {
  am_handler h = cx.handler();
  if (std::byte* base = segment_base(rank)) {
    local_copy(base + off, src, bytes);
    memory_sync();
    rpc_send(rank, h, std::move(cx.message()));
    return make_future();
  }
  auto p = std::make_shared<promise<>>();
  auto msg = std::make_shared<std::vector<std::byte>>(std::move(cx.message()));
  put_remote(rank, off, src, bytes, [p, rank, h, msg] {
    rpc_send(rank, h, std::move(*msg));
    p->fulfill_anonymous(1);
  });
  return p->get_future();
}
}  // namespace detail

/// Copies `count` elements from `src` to `dest`, then runs the remote
/// completion `cx` at dest.where() (see the header comment). `src` must stay
/// valid until the returned future is ready.
template <class T>
requires detail::rma_ok<T> future<> rput(const T* src, global_ptr<T> dest, std::size_t count, remote_cx::rpc_cx cx) {
  std::size_t bytes = detail::checked_bytes("rput", dest, count);
  return detail::put_then_rpc(dest.where(), dest.offset(), src, bytes, std::move(cx));
}

/// Writes one value to `dest` (copied: nothing to keep alive), then runs
/// the remote completion `cx` at dest.where().
template <class T>
requires detail::rma_ok<T> future<> rput(const T& value, global_ptr<T> dest, remote_cx::rpc_cx cx) {
  std::size_t bytes = detail::checked_bytes("rput", dest, 1);
  if (detail::is_node_local(dest.where()))
    return detail::put_then_rpc(dest.where(), dest.offset(), &value, bytes, std::move(cx));
  auto keep = std::make_shared<T>(value);
  return detail::put_then_rpc(dest.where(), dest.offset(), keep.get(), bytes, std::move(cx)).then([keep] {});
}

}  // namespace accrete
