// Non-blocking collectives on teams: MPI_Ibarrier, MPI_Ibcast, MPI_Ireduce,
// MPI_Iallreduce (and point-to-point legs for serialized values), tracked
// as backend requests whose completions run at user-level progress. (The blocking barrier() lives in team.cpp.)
#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "accrete/collectives.hpp"
#include "accrete/detail/backend.hpp"
#include "accrete/error.hpp"
#include "accrete/promise.hpp"
#include "backend/mpi/mpi_types.hpp"
#include "backend/mpi/state.hpp"

namespace accrete {
namespace detail {

namespace {
int delete_seq(MPI_Comm, int, void* attr, void*) {
  delete static_cast<std::uint32_t*>(attr);
  return MPI_SUCCESS;
}
}  // namespace

std::uint32_t comm_sequence(MPI_Comm comm, int& keyval) {
  if (keyval == MPI_KEYVAL_INVALID)
    ACCRETE_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &delete_seq, &keyval, nullptr));
  void* attr = nullptr;
  int found = 0;
  ACCRETE_MPI(MPI_Comm_get_attr(comm, keyval, &attr, &found));
  auto seq = found ? static_cast<std::uint32_t*>(attr) : nullptr;
  if (!seq) {
    seq = new std::uint32_t(0);
    int rc = MPI_Comm_set_attr(comm, keyval, seq);
    if (rc != MPI_SUCCESS) {
      delete seq;
      mpi_failed("MPI_Comm_set_attr", rc);
    }
  }
  return (*seq)++;
}

namespace {

// Tags reserved on team communicators for variable-size broadcasts.
constexpr int bcast_tag_base = 0x6000;
constexpr int bcast_tag_span = 0x2000;

std::size_t pieces_for(std::size_t bytes) { return bytes == 0 ? 1 : (bytes + max_chunk - 1) / max_chunk; }

// Calls f(offset, length) for each piece of at most max_chunk bytes.
template <class F>
void for_each_piece(std::size_t bytes, F&& f) {
  for (std::size_t off = 0; off < bytes; off += max_chunk) f(off, int(std::min(max_chunk, bytes - off)));
}

/// Runs `done` after `n` calls of the returned completion.
completion countdown(std::size_t n, completion done) {
  auto left = std::make_shared<std::size_t>(n);
  auto d = std::make_shared<completion>(std::move(done));
  return [left, d] {
    if (--*left == 0) (*d)();
  };
}

// ---- user operators ---------------------------------------------------------------
// MPI_User_function has no context argument. Each user reduction gets its
// own datatype (elem bytes, contiguous) carrying the context as an attribute;
// one trampoline reads it back from the datatype MPI passes in.

struct user_ctx {
  coll_user_fn fn;
  const void* ctx;
};

int type_keyval = MPI_KEYVAL_INVALID;

void mpi_user_trampoline(void* in, void* inout, int* len, MPI_Datatype* dt) {
  void* attr = nullptr;
  int found = 0;
  MPI_Type_get_attr(*dt, type_keyval, &attr, &found);
  if (!found || !attr) {
    std::fprintf(stderr, "accrete: user reduction called on a datatype without its operator\n");
    world_abort(4);
  }
  auto u = static_cast<const user_ctx*>(attr);
  try {
    u->fn(in, inout, std::size_t(*len), u->ctx);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "accrete: a user reduction operator threw: %s\n", e.what());
    world_abort(4);
  } catch (...) {
    std::fprintf(stderr, "accrete: a user reduction operator threw\n");
    world_abort(4);
  }
}

// ---- per-team sequence numbers for variable-size broadcasts ---------------------------

int comm_keyval = MPI_KEYVAL_INVALID;

int next_bcast_tag(MPI_Comm comm) { return bcast_tag_base + int(comm_sequence(comm, comm_keyval) % bcast_tag_span); }

MPI_Comm comm_of(const char* what, const team& t) {
  require_initialized(what);
  MPI_Comm c = t.mpi_comm();
  if (c == MPI_COMM_NULL) throw error(std::string("accrete::") + what + ": empty team (moved-from or not a member)");
  return c;
}

}  // namespace

void coll_check_root(const char* what, int root, const team& t) {
  comm_of(what, t);
  if (root < 0 || root >= t.rank_n())
    throw std::out_of_range(std::string("accrete::") + what + ": root " + std::to_string(root) + " out of range [0, " +
                            std::to_string(t.rank_n()) + ")");
}

void coll_ibarrier(const team& t, completion done) {
  MPI_Comm c = comm_of("barrier_async", t);
  const auto ticket = team_collective_begin("accrete::barrier_async", t, false);
  memory_sync();
  MPI_Request r;
  ibarrier(c, &r);
  track_collective(
      r,
      [d = std::move(done)] {
        memory_sync();
        d();
      },
      ticket);
}

void coll_ibcast(void* buf, std::size_t bytes, int root, const team& t, completion done) {
  MPI_Comm c = comm_of("broadcast", t);
  const auto ticket = team_collective_begin("accrete::broadcast", t, false);
  const std::size_t n = pieces_for(bytes);
  completion each = n == 1 ? std::move(done) : countdown(n, std::move(done));
  auto p = static_cast<std::byte*>(buf);
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t off = i * max_chunk;
    int len = int(std::min(max_chunk, bytes - std::min(bytes, off)));
    MPI_Request r;
    ACCRETE_MPI(MPI_Ibcast(p + off, len, MPI_BYTE, root, c, &r));
    track_collective(r, each, ticket);
  }
}

namespace {
// Shared body of the built-in and user reductions: `count` elements of
// `elem` bytes of `ty`, in pieces of at most max_chunk bytes.
void ireduce(const void* src, void* dst, std::size_t count, std::size_t elem, MPI_Datatype ty, MPI_Op op, int root,
             MPI_Comm c, int me, completion done, const collective_ticket& ticket) {
  const std::size_t per = std::max<std::size_t>(1, std::min<std::size_t>(max_chunk / elem, INT_MAX));
  const std::size_t n = count == 0 ? 1 : (count + per - 1) / per;
  completion each = n == 1 ? std::move(done) : countdown(n, std::move(done));
  const bool in_place = src == dst;
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t first = i * per;
    int len = int(std::min(per, count - std::min(count, first)));
    const void* s = static_cast<const std::byte*>(src) + first * elem;
    void* d = dst ? static_cast<std::byte*>(dst) + first * elem : nullptr;
    MPI_Request r;
    if (root < 0) {
      ACCRETE_MPI(MPI_Iallreduce(in_place ? MPI_IN_PLACE : s, d, len, ty, op, c, &r));
    } else if (me == root) {
      ACCRETE_MPI(MPI_Ireduce(in_place ? MPI_IN_PLACE : s, d, len, ty, op, root, c, &r));
    } else {
      ACCRETE_MPI(MPI_Ireduce(s, nullptr, len, ty, op, root, c, &r));
    }
    track_collective(r, each, ticket);
  }
}
}  // namespace

void coll_ireduce(const void* src, void* dst, std::size_t count, coll_type ty, coll_op op, int root, const team& t,
                  completion done) {
  MPI_Comm c = comm_of(root < 0 ? "reduce_all" : "reduce_one", t);
  const auto ticket = team_collective_begin(root < 0 ? "accrete::reduce_all" : "accrete::reduce_one", t, false);
  ireduce(src, dst, count, scalar_bytes(ty), mpi_type(ty), mpi_op(op), root, c, t.rank_me(), std::move(done), ticket);
}

void coll_ireduce_user(const void* src, void* dst, std::size_t count, std::size_t elem, coll_user_fn fn,
                       const void* ctx, int root, const team& t, completion done) {
  MPI_Comm c = comm_of(root < 0 ? "reduce_all" : "reduce_one", t);
  const auto ticket = team_collective_begin(root < 0 ? "accrete::reduce_all" : "accrete::reduce_one", t, false);
  if (type_keyval == MPI_KEYVAL_INVALID)
    ACCRETE_MPI(MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN, &type_keyval, nullptr));
  if (elem > std::size_t(INT_MAX)) throw error("accrete: reduction element larger than INT_MAX bytes");
  auto u = std::make_shared<user_ctx>(user_ctx{fn, ctx});
  auto ty = std::make_shared<MPI_Datatype>(MPI_DATATYPE_NULL);
  auto op = std::make_shared<MPI_Op>(MPI_OP_NULL);
  ACCRETE_MPI(MPI_Type_contiguous(int(elem), MPI_BYTE, ty.get()));
  ACCRETE_MPI(MPI_Type_commit(ty.get()));
  ACCRETE_MPI(MPI_Type_set_attr(*ty, type_keyval, u.get()));
  ACCRETE_MPI(MPI_Op_create(&mpi_user_trampoline, 1, op.get()));
  // The datatype (and its attribute) must outlive the operation: free both
  // when it is complete.
  completion fin = [u, ty, op, d = std::move(done)] {
    MPI_Op_free(op.get());
    MPI_Type_free(ty.get());
    d();
  };
  ireduce(src, dst, count, elem, *ty, *op, root, c, t.rank_me(), std::move(fin), ticket);
}

namespace {
// The bytes of the variable-size collectives travel point to point, in
// pieces of at most max_chunk, on a tag reserved when the collective
// started: members agree on it whatever order they reach this step in,
// and messages from one process on one tag do not overtake each other.
// send_pieces calls `each` once per piece sent.
void send_pieces(MPI_Comm c, int dest, int tag, const std::shared_ptr<const std::vector<std::byte>>& buf,
                 const completion& each) {
  for_each_piece(buf->size(), [&](std::size_t off, int len) {
    MPI_Request q;
    ACCRETE_MPI(MPI_Isend(buf->data() + off, len, MPI_BYTE, dest, tag, c, &q));
    track_request(q, [buf, each] { each(); });
  });
}
// Fills *buf (already sized) from src; `done` runs after the last piece.
void recv_pieces(MPI_Comm c, int src, int tag, const std::shared_ptr<std::vector<std::byte>>& buf, completion done) {
  if (buf->empty()) {
    done();
    return;
  }
  completion each = countdown(pieces_for(buf->size()), std::move(done));
  for_each_piece(buf->size(), [&](std::size_t off, int len) {
    MPI_Request q;
    ACCRETE_MPI(MPI_Irecv(buf->data() + off, len, MPI_BYTE, src, tag, c, &q));
    track_request(q, [buf, each] { each(); });
  });
}
}  // namespace

void coll_ibcast_bytes(std::shared_ptr<std::vector<std::byte>> buf, int root, const team& t, completion done) {
  MPI_Comm c = comm_of("broadcast", t);
  const auto ticket = team_collective_begin("accrete::broadcast", t, false);
  const int tag = next_bcast_tag(c);
  const int me = t.rank_me(), n = t.rank_n();
  auto size = std::make_shared<std::uint64_t>(me == root ? buf->size() : 0);
  MPI_Request r;
  ACCRETE_MPI(MPI_Ibcast(size.get(), 1, MPI_UINT64_T, root, c, &r));
  if (me == root) {
    const std::size_t pieces = buf->empty() ? 0 : pieces_for(buf->size());
    completion each = countdown(1 + pieces * std::size_t(n - 1), std::move(done));
    track_collective(
        r, [size, each] { each(); }, ticket);
    for (int dest = 0; dest < n; ++dest)
      if (dest != root) send_pieces(c, dest, tag, buf, each);
    return;
  }
  // Non-root: learn the size, then receive the bytes from the root. Matching
  // is by tag, so the order in which members reach this step does not matter.
  track_collective(
      r,
      [size, buf, root, c, tag, d = std::move(done)]() mutable {
        buf->resize(*size);
        recv_pieces(c, root, tag, buf, std::move(d));
      },
      ticket);
}

namespace {
// The legs of the variable-size reductions: a size, then the pieces, on one
// reserved tag.
void send_bytes(MPI_Comm c, int dest, int tag, std::shared_ptr<const std::vector<std::byte>> buf, completion done) {
  auto size = std::make_shared<std::uint64_t>(buf->size());
  completion each = countdown(1 + (buf->empty() ? 0 : pieces_for(buf->size())), std::move(done));
  MPI_Request r;
  ACCRETE_MPI(MPI_Isend(size.get(), 1, MPI_UINT64_T, dest, tag, c, &r));
  track_request(r, [size, each] { each(); });
  send_pieces(c, dest, tag, buf, each);
}

// Posts the receive of the size at once (before any later collective on
// the team can post one on the same tag); `done` gets the bytes.
using bytes_in = std::function<void(std::vector<std::byte>&&)>;
void recv_bytes(MPI_Comm c, int src, int tag, const collective_ticket& ticket, bytes_in done) {
  auto size = std::make_shared<std::uint64_t>(0);
  MPI_Request r;
  ACCRETE_MPI(MPI_Irecv(size.get(), 1, MPI_UINT64_T, src, tag, c, &r));
  track_collective(
      r,
      [size, c, src, tag, d = std::move(done)]() mutable {
        auto buf = std::make_shared<std::vector<std::byte>>(*size);
        auto fin = std::make_shared<bytes_in>(std::move(d));
        recv_pieces(c, src, tag, buf, [buf, fin] { (*fin)(std::move(*buf)); });
      },
      ticket);
}
}  // namespace

void coll_ireduce_bytes(std::shared_ptr<std::vector<std::byte>> mine, int root, const team& t, bytes_fold fold,
                        bytes_done done) {
  const bool all = root < 0;
  MPI_Comm c = comm_of(all ? "reduce_all" : "reduce_one", t);
  const auto ticket = team_collective_begin(all ? "accrete::reduce_all" : "accrete::reduce_one", t, false);
  // Both tags on every member, so that the sequences stay in step.
  const int up = next_bcast_tag(c), down = next_bcast_tag(c);
  const int me = t.rank_me(), n = t.rank_n(), at = all ? 0 : root;
  auto d = std::make_shared<bytes_done>(std::move(done));
  if (me != at) {
    send_bytes(c, at, up, mine, all ? completion([] {}) : completion([d] { (*d)(std::nullopt); }));
    if (all) recv_bytes(c, at, down, ticket, [d](std::vector<std::byte>&& r) { (*d)(std::move(r)); });
    return;
  }
  auto parts = std::make_shared<std::vector<std::vector<std::byte>>>(std::size_t(n));
  (*parts)[std::size_t(me)] = std::move(*mine);
  auto f = std::make_shared<bytes_fold>(std::move(fold));
  completion gathered = countdown(std::size_t(n), [parts, f, d, all, c, down, me, n] {
    auto result = std::make_shared<const std::vector<std::byte>>((*f)(*parts));
    parts->clear();
    if (all)
      for (int dest = 0; dest < n; ++dest)
        if (dest != me) send_bytes(c, dest, down, result, [] {});
    (*d)(std::vector<std::byte>(*result));
  });
  for (int src = 0; src < n; ++src)
    if (src != me)
      recv_bytes(c, src, up, ticket, [parts, src, gathered](std::vector<std::byte>&& b) {
        (*parts)[std::size_t(src)] = std::move(b);
        gathered();
      });
  gathered();  // the root's own part
}

}  // namespace detail

future<> barrier_async(const team& t) {
  auto p = std::make_shared<promise<>>();
  detail::coll_ibarrier(t, [p] { p->fulfill_anonymous(1); });
  return p->get_future();
}

}  // namespace accrete
