// Non-contiguous one-sided transfers: validation, node-local copies, the
// MPI path (derived datatypes or batched contiguous MPI_Put/MPI_Get on the
// segment window, completed by the backend's next flush), and the message
// path (a section packed into one active message, unpacked at the target).
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "accrete/detail/strided_backend.hpp"
#include "accrete/detail/env.hpp"
#include "accrete/error.hpp"
#include "backend/mpi/state.hpp"
#include "backend/mpi/type_cache.hpp"

namespace accrete::detail {
namespace {

constexpr std::size_t int_max = std::size_t(INT_MAX);

std::string str(std::uint64_t v) { return std::to_string(v); }
std::string sstr(std::int64_t v) { return std::to_string(v); }

[[noreturn]] void fail(const char* what, const std::string& msg) {
  throw bad_global_ptr(std::string("accrete::") + what + ": " + msg);
}

// ---- method selection ----------------------------------------------------------

}  // namespace

noncontig_method noncontig_method_from_env() {
  const auto e = env_word("ACCRETE_NONCONTIG");
  if (!e || *e == "auto") return noncontig_method::automatic;
  if (*e == "datatype") return noncontig_method::datatype;
  if (*e == "batched") return noncontig_method::batched;
  if (*e == "message") return noncontig_method::message;
  throw error("accrete: ACCRETE_NONCONTIG='" + *e + "' is not auto, datatype, batched or message");
}

namespace {

noncontig_method& method_setting() {
  static noncontig_method m = noncontig_method_from_env();
  return m;
}

// Measured with bench/rma_noncontig (docs/noncontig.md), P = 2 on one VM with
// pretend nodes. MPICH (ch3) processes every RMA operation at the target's
// progress, so a batch of N contiguous operations costs up to N times one
// derived-datatype operation (37x for 1024 8-byte pieces); Open MPI showed
// no consistent difference below 1 KiB runs. Batching only wins once runs
// are large enough to be bandwidth-bound (>= 8 KiB pieces were 2-5x faster
// batched on both), where the datatype engine's packing adds a copy.
constexpr std::size_t batched_max_runs = 2;
constexpr std::size_t batched_min_run_bytes = 8192;
// Irregular lists build their hindexed types per call (commit costs several
// microseconds), so a few pieces go out as separate operations.
constexpr std::size_t irregular_min_pieces = 16;
constexpr std::size_t irregular_max_piece_bytes = 4096;

// MPICH 4.0 (ch4:ucx) moves an RMA operation with derived datatypes by
// messages that the target handles at its progress, so the target is
// involved either way. bench/rma_noncontig with ACCRETE_NODE_SIZE=1, five
// runs, one accrete message against one datatype operation: for 2 KiB
// sections 0.79-1.0x (puts) and 0.53-1.0x (gets) of its speed, so those
// stay datatype operations; from 32 KiB puts 1.07-3.3x faster, gets 0.94-
// 2.3x. bench_heat3d's 128 KiB faces: the exchange 0.52x of the best MPI
// variant -> 1.22x (gets), 0.53x -> 1.28x (puts). Open MPI's RMA reached
// the target without it and was 10-200x faster than messages that wait for
// the target's progress, so there the datatype path stays. Up to 4 MiB: the
// message path copies the section twice and holds it in one buffer.
constexpr std::size_t message_min_bytes = std::size_t{16} << 10;
constexpr std::size_t message_max_bytes = std::size_t{4} << 20;
bool rma_needs_target_progress() noexcept {
  static const bool mpich = mpi_library_version().starts_with("MPICH");
  return mpich;
}

// ---- derived datatypes -------------------------------------------------------------

// A section's committed type on one side (type_cache.hpp), a nest of
// hvectors over a contiguous run.
MPI_Datatype section_type(const strided_plan& p, bool local_side) {
  // Reused: the cache looks up by span, so a hit allocates nothing.
  ACCRETE_THREAD_LOCAL std::vector<std::int64_t> key;
  key.clear();
  key.push_back(0);  // kind: byte sections
  key.push_back(std::int64_t(p.run));
  for (auto& d : p.dims) {
    key.push_back(std::int64_t(d.extent));
    key.push_back(local_side ? d.local_stride : d.remote_stride);
  }
  return datatype_cache().get(key, [&] {
    MPI_Datatype t;
    ACCRETE_MPI(MPI_Type_contiguous(int(p.run), MPI_BYTE, &t));
    // Innermost dimension (last in the plan) nests first so that the type
    // map visits runs in the same order on both sides.
    for (std::size_t i = p.dims.size(); i-- > 0;) {
      const auto& d = p.dims[i];
      MPI_Datatype outer;
      ACCRETE_MPI(MPI_Type_create_hvector(int(d.extent), 1, MPI_Aint(local_side ? d.local_stride : d.remote_stride), t,
                                          &outer));
      MPI_Type_free(&t);
      t = outer;
    }
    ACCRETE_MPI(MPI_Type_commit(&t));
    return t;
  });
}

bool datatype_fits(const strided_plan& p) {
  if (p.run > int_max) return false;
  for (auto& d : p.dims)
    if (d.extent > int_max) return false;
  return true;
}

// ---- iteration over runs -----------------------------------------------------------

// Calls f(local_byte_offset, remote_byte_offset) for every run, innermost
// dimension fastest.
template <class F>
void for_each_run(const strided_plan& p, F&& f) {
  const std::size_t nd = p.dims.size();
  if (nd == 0) {
    f(std::ptrdiff_t(0), std::ptrdiff_t(0));
    return;
  }
  std::vector<std::size_t> idx(nd, 0);
  std::ptrdiff_t lo = 0, ro = 0;
  const auto& in = p.dims[nd - 1];
  for (;;) {
    std::ptrdiff_t l = lo, r = ro;
    for (std::size_t i = 0; i < in.extent; ++i, l += in.local_stride, r += in.remote_stride) f(l, r);
    // Odometer over the outer dimensions.
    std::size_t d = nd - 1;
    for (;;) {
      if (d == 0) return;
      --d;
      if (++idx[d] < p.dims[d].extent) {
        lo += p.dims[d].local_stride;
        ro += p.dims[d].remote_stride;
        break;
      }
      lo -= std::ptrdiff_t(idx[d] - 1) * p.dims[d].local_stride;
      ro -= std::ptrdiff_t(idx[d] - 1) * p.dims[d].remote_stride;
      idx[d] = 0;
    }
  }
}

// Small runs (one element of a transposed or column section) are copied by
// fixed-size loads and stores, which the compiler inlines; a load before the
// store also keeps overlapping runs well-defined.
template <std::size_t K>
void copy_fixed(std::byte* dst, const std::byte* src, const strided_plan& p, bool dst_remote) {
  for_each_run(p, [&](std::ptrdiff_t l, std::ptrdiff_t r) {
    unsigned char tmp[K];
    const std::byte* s = src + (dst_remote ? l : r);
    std::byte* d = dst + (dst_remote ? r : l);
    std::memcpy(tmp, s, K);
    std::memcpy(d, tmp, K);
  });
}

void copy_section(std::byte* dst, const std::byte* src, const strided_plan& p, bool dst_remote) {
  switch (p.run) {
    case 1:
      return copy_fixed<1>(dst, src, p, dst_remote);
    case 2:
      return copy_fixed<2>(dst, src, p, dst_remote);
    case 4:
      return copy_fixed<4>(dst, src, p, dst_remote);
    case 8:
      return copy_fixed<8>(dst, src, p, dst_remote);
    case 16:
      return copy_fixed<16>(dst, src, p, dst_remote);
    default:
      break;
  }
  const std::size_t n = p.run;
  for_each_run(p, [&](std::ptrdiff_t l, std::ptrdiff_t r) {
    std::memmove(dst + (dst_remote ? r : l), src + (dst_remote ? l : r), n);
  });
}

void put_or_get(bool put, std::byte* local, std::size_t n, int rank, std::uint64_t off) {
  MPI_Win w = segment_window();
  for (std::size_t o = 0; o < n; o += int_max) {
    int c = int(std::min(int_max, n - o));
    if (put)
      ACCRETE_MPI(MPI_Put(local + o, c, MPI_BYTE, rank, MPI_Aint(off + o), c, MPI_BYTE, w));
    else
      ACCRETE_MPI(MPI_Get(local + o, c, MPI_BYTE, rank, MPI_Aint(off + o), c, MPI_BYTE, w));
  }
}

// ---- the message path ----------------------------------------------------------------
// A section as one active message: packed at the origin, unpacked by the
// target's progress, acknowledged to complete the operation. MPICH 4.0
// (ch4:ucx) carries an RMA operation with derived datatypes as messages
// that the target processes at its progress anyway; this was faster from
// 16 KiB (rma_needs_target_progress above; docs/noncontig.md).
//
// A message: wire_head, then `dims` wire_dim (the remote side of the plan,
// in its order), then the remote completion's payload (puts), then the
// data (puts). The token is the origin's pending record.
struct wire_head {
  std::uint64_t token;
  std::uint64_t offset;
  std::uint64_t run;
  std::uint64_t dims;
  std::uint64_t rcx_bytes;
  std::int64_t rcx_id;
};
struct wire_dim {
  std::uint64_t extent;
  std::int64_t stride;
};

struct pending_section {
  completion done;
  std::byte* local;  // get: where the data goes, through plan's local strides
  strided_plan plan;
};

std::uint64_t make_token(completion done, std::byte* local, const strided_plan* plan) {
  auto* r = new pending_section{to_caller(std::move(done)), local, plan ? *plan : strided_plan{}};
  return std::uint64_t(reinterpret_cast<std::uintptr_t>(r));
}

std::unique_ptr<pending_section> take_token(std::uint64_t t) {
  return std::unique_ptr<pending_section>(reinterpret_cast<pending_section*>(std::uintptr_t(t)));
}

template <class T>
T read_pod(std::span<const std::byte>& in) {
  T v;
  std::memcpy(&v, in.data(), sizeof v);
  in = in.subspan(sizeof v);
  return v;
}

template <class T>
void append_pod(std::vector<std::byte>& out, const T& v) {
  const auto* b = reinterpret_cast<const std::byte*>(&v);
  out.insert(out.end(), b, b + sizeof v);
}

std::size_t wire_bytes(const strided_plan& p) { return sizeof(wire_head) + p.dims.size() * sizeof(wire_dim); }

void append_head(std::vector<std::byte>& out, std::uint64_t token, std::uint64_t off, const strided_plan& p,
                 std::size_t rcx_bytes, std::intptr_t rcx_id) {
  append_pod(out, wire_head{token, off, p.run, p.dims.size(), rcx_bytes, std::int64_t(rcx_id)});
  for (auto& d : p.dims) append_pod(out, wire_dim{d.extent, d.remote_stride});
}

// The remote side of a plan, as the message gives it (local strides 0).
strided_plan read_plan(std::span<const std::byte>& in, wire_head& h) {
  h = read_pod<wire_head>(in);
  strided_plan p;
  p.run = h.run;
  p.dims.resize(h.dims);
  for (auto& d : p.dims) {
    auto w = read_pod<wire_dim>(in);
    d = {w.extent, 0, w.stride};
  }
  return p;
}

// Copies the runs between a packed buffer and one side of the plan, in
// for_each_run's order on both ends.
void pack(std::byte* out, const std::byte* base, const strided_plan& p, bool remote_side) {
  for_each_run(p, [&](std::ptrdiff_t l, std::ptrdiff_t r) {
    std::memcpy(out, base + (remote_side ? r : l), p.run);
    out += p.run;
  });
}
void unpack(std::byte* base, const std::byte* in, const strided_plan& p, bool remote_side) {
  for_each_run(p, [&](std::ptrdiff_t l, std::ptrdiff_t r) {
    std::memcpy(base + (remote_side ? r : l), in, p.run);
    in += p.run;
  });
}

void section_done(int, std::span<const std::byte> in) { take_token(read_pod<std::uint64_t>(in))->done(); }

// Target, internal progress: the data goes into the segment; the remote
// completion waits in this process's own queue for user-level progress.
void section_put(int source, std::span<const std::byte> in) {
  wire_head h;
  const strided_plan p = read_plan(in, h);
  std::span<const std::byte> rcx = in.first(h.rcx_bytes);
  unpack(segment_base(st.rank) + h.offset, in.data() + h.rcx_bytes, p, true);
  // The origin may read the section back by RMA once it has the
  // acknowledgement: the stores must be visible to the window first.
  memory_sync();
  if (h.rcx_id != 0) am_send(st.rank, am_handler_of(h.rcx_id, source), rcx);
  am_send(source, &section_done, std::as_bytes(std::span(&h.token, 1)));
}

// Origin, user-level progress: the data of a get goes into the caller's
// buffer, then the operation is complete.
void section_data(int, std::span<const std::byte> in) {
  auto r = take_token(read_pod<std::uint64_t>(in));
  unpack(r->local, in.data(), r->plan, false);
  r->done();
}

// Target, internal progress: the section goes back in one message.
void section_get(int source, std::span<const std::byte> in) {
  wire_head h;
  const strided_plan p = read_plan(in, h);
  std::vector<std::byte> out = message_buffer(sizeof h.token + p.bytes());
  append_pod(out, h.token);
  const std::size_t at = out.size();
  out.resize(at + p.bytes());
  pack(out.data() + at, segment_base(st.rank) + h.offset, p, true);
  am_send_owned(source, &section_data, std::move(out));
}

const bool section_handlers_registered = [] {
  am_register(&section_put, true);
  am_register(&section_get, true);
  am_register(&section_done, false);
  am_register(&section_data, false);
  return true;
}();

void get_message(int rank, std::uint64_t off, std::byte* dst, const strided_plan& p, completion done) {
  std::vector<std::byte> msg = message_buffer(wire_bytes(p));
  append_head(msg, make_token(std::move(done), dst, &p), off, p, 0, 0);
  am_send_owned(rank, &section_get, std::move(msg));
}

bool strided_transfer(bool put, int rank, std::uint64_t off, std::byte* local, const strided_plan& p, completion done) {
  if (p.empty) return true;
  if (std::byte* base = segment_base(rank)) {
    // Direct copy through the shared segment; the caller's later
    // synchronisation (barrier, message) orders it for the target.
    if (put)
      copy_section(base + off, local, p, true);
    else
      copy_section(local, base + off, p, false);
    return true;
  }
  if (strided_by_message(rank, p)) {
    if (put)
      strided_put_message(rank, off, local, p, std::move(done), nullptr, {});
    else
      get_message(rank, off, local, p, std::move(done));
    return false;
  }
  // In par (or with the progress thread) other threads use the type cache
  // and the flush queue at the same time: the lookup, the MPI call and the
  // completion's entry in the queue go in under one hold of the backend
  // lock, as for contiguous puts.
  backend_guard g;
  bool dt =
      p.dims.empty() ? false : (datatype_fits(p) && choose_noncontig(p.runs(), p.run) == noncontig_method::datatype);
  if (dt) {
    MPI_Datatype lt = section_type(p, true), rt = section_type(p, false);
    if (put)
      ACCRETE_MPI(MPI_Put(local, 1, lt, rank, MPI_Aint(off), 1, rt, segment_window()));
    else
      ACCRETE_MPI(MPI_Get(local, 1, lt, rank, MPI_Aint(off), 1, rt, segment_window()));
  } else {
    for_each_run(p, [&](std::ptrdiff_t l, std::ptrdiff_t r) {
      put_or_get(put, local + l, p.run, rank, std::uint64_t(std::int64_t(off) + r));
    });
  }
  // MPI_Win_flush completes gets as well as puts at the origin, so both
  // directions share the backend's one flush per poll.
  after_flush(std::move(done), rank);
  return false;
}

// ---- irregular -----------------------------------------------------------------------

struct piece {
  std::size_t local_frag, remote_frag;
  std::size_t local_pos, remote_pos;  // byte position inside each fragment
  std::size_t bytes;
};

// Splits the two fragment lists into pieces that are contiguous on both
// sides (the merge of the two sets of fragment boundaries).
template <class F>
void for_each_piece(const std::vector<local_frag>& l, const std::vector<remote_frag>& r, F&& f) {
  std::size_t i = 0, j = 0, pi = 0, pj = 0;
  for (;;) {
    while (i < l.size() && pi == l[i].bytes) ++i, pi = 0;
    while (j < r.size() && pj == r[j].bytes) ++j, pj = 0;
    if (i == l.size() || j == r.size()) return;
    std::size_t n = std::min(l[i].bytes - pi, r[j].bytes - pj);
    f(piece{i, j, pi, pj, n});
    pi += n;
    pj += n;
  }
}

bool irregular_transfer(bool put, int rank, const std::vector<local_frag>& l, const std::vector<remote_frag>& r,
                        completion done) {
  if (std::byte* base = segment_base(rank)) {
    for_each_piece(l, r, [&](const piece& p) {
      std::byte* lp = const_cast<std::byte*>(l[p.local_frag].ptr) + p.local_pos;
      std::byte* rp = base + r[p.remote_frag].offset + p.remote_pos;
      if (put)
        std::memmove(rp, lp, p.bytes);
      else
        std::memmove(lp, rp, p.bytes);
    });
    return true;
  }
  backend_guard g;  // as in strided_transfer
  std::size_t nl = 0, nr = 0, total = 0, pieces = 0;
  bool fits = true;
  for (auto& f : l)
    if (f.bytes) ++nl, total += f.bytes, fits = fits && f.bytes <= int_max;
  for (auto& f : r)
    if (f.bytes) ++nr, fits = fits && f.bytes <= int_max;
  for_each_piece(l, r, [&](const piece&) { ++pieces; });
  if (pieces == 0) return true;
  fits = fits && nl <= int_max && nr <= int_max;
  bool dt;
  switch (get_noncontig_method()) {
    case noncontig_method::datatype:
      dt = true;
      break;
    case noncontig_method::batched:
      dt = false;
      break;
    default:
      dt = pieces >= irregular_min_pieces && total / pieces <= irregular_max_piece_bytes;
  }
  dt = dt && fits && pieces > 1;
  if (dt) {
    // Origin: absolute addresses from MPI_BOTTOM; target: offsets relative
    // to the lowest fragment, which becomes the target displacement.
    std::vector<int> ll, rl;
    std::vector<MPI_Aint> ld, rd;
    ll.reserve(nl), ld.reserve(nl), rl.reserve(nr), rd.reserve(nr);
    for (auto& f : l)
      if (f.bytes) {
        MPI_Aint a;
        MPI_Get_address(f.ptr, &a);
        ll.push_back(int(f.bytes));
        ld.push_back(a);
      }
    std::uint64_t lo = UINT64_MAX;
    for (auto& f : r)
      if (f.bytes) lo = std::min(lo, f.offset);
    for (auto& f : r)
      if (f.bytes) {
        rl.push_back(int(f.bytes));
        rd.push_back(MPI_Aint(f.offset - lo));
      }
    MPI_Datatype lt, rt;
    ACCRETE_MPI(MPI_Type_create_hindexed(int(nl), ll.data(), ld.data(), MPI_BYTE, &lt));
    ACCRETE_MPI(MPI_Type_create_hindexed(int(nr), rl.data(), rd.data(), MPI_BYTE, &rt));
    MPI_Type_commit(&lt);
    MPI_Type_commit(&rt);
    if (put)
      ACCRETE_MPI(MPI_Put(MPI_BOTTOM, 1, lt, rank, MPI_Aint(lo), 1, rt, segment_window()));
    else
      ACCRETE_MPI(MPI_Get(MPI_BOTTOM, 1, lt, rank, MPI_Aint(lo), 1, rt, segment_window()));
    MPI_Type_free(&lt);
    MPI_Type_free(&rt);
  } else {
    for_each_piece(l, r, [&](const piece& p) {
      put_or_get(put, const_cast<std::byte*>(l[p.local_frag].ptr) + p.local_pos, p.bytes, rank,
                 r[p.remote_frag].offset + p.remote_pos);
    });
  }
  after_flush(std::move(done), rank);
  return false;
}

}  // namespace

// ---- public to the runtime --------------------------------------------------------------

void set_noncontig_method(noncontig_method m) noexcept { method_setting() = m; }
noncontig_method get_noncontig_method() noexcept { return method_setting(); }

noncontig_method choose_noncontig(std::size_t runs, std::size_t run_bytes) noexcept {
  noncontig_method m = method_setting();
  if (m != noncontig_method::automatic) return m;
  if (runs <= batched_max_runs || run_bytes >= batched_min_run_bytes) return noncontig_method::batched;
  const std::size_t bytes = runs * run_bytes;
  if (rma_needs_target_progress() && bytes >= message_min_bytes && bytes <= message_max_bytes)
    return noncontig_method::message;
  return noncontig_method::datatype;
}

strided_plan plan_strided(const char* what, bool put, int rank, std::uint64_t remote_offset, std::size_t elem,
                          std::size_t dims, const std::ptrdiff_t* local_strides, const std::ptrdiff_t* remote_strides,
                          const std::size_t* extents) {
  require_initialized(what);
  const char* lname = put ? "source" : "destination";
  const char* rname = put ? "destination" : "source";
  // Rank and base offset first (a zero-byte range checks only those).
  check_range(what, rank, remote_offset, 0);
  strided_plan p;
  p.run = elem;
  std::size_t total = elem;
  for (std::size_t d = 0; d < dims; ++d) {
    if (extents[d] > std::size_t(PTRDIFF_MAX))
      fail(what, "dimension " + str(d) + ": extent " + sstr(std::int64_t(extents[d])) +
                     " is negative (or exceeds PTRDIFF_MAX)");
    if (extents[d] == 0) p.empty = true;
    std::size_t t;
    if (extents[d] != 0 && __builtin_mul_overflow(total, extents[d], &t))
      fail(what, "dimension " + str(d) + ": extent " + str(extents[d]) + " makes the section size overflow");
    if (extents[d] != 0) total = t;
  }
  // Byte span of the section on each side, dimension by dimension, so the
  // dimension that first leaves the segment (or overflows) is the one named.
  std::int64_t rlo = 0, rhi = 0, llo = 0, lhi = 0;
  const std::uint64_t seg = segment_bytes();
  if (!p.empty && (remote_offset > seg || elem > seg - remote_offset))
    fail(what, "the first element of the " + std::string(rname) + " section (offset " + str(remote_offset) + ", " +
                   str(elem) + " bytes) lies outside rank " + std::to_string(rank) + "'s segment of " + str(seg) +
                   " bytes");
  for (std::size_t d = 0; d < dims && !p.empty; ++d) {
    std::int64_t n = std::int64_t(extents[d]) - 1, rs, ls;
    if (__builtin_mul_overflow(n, std::int64_t(remote_strides[d]), &rs) ||
        __builtin_add_overflow(rs > 0 ? rhi : rlo, rs, rs > 0 ? &rhi : &rlo))
      fail(what, "dimension " + str(d) + ": " + rname + " stride " + sstr(remote_strides[d]) + " times extent " +
                     str(extents[d]) + " overflows");
    if (__builtin_mul_overflow(n, std::int64_t(local_strides[d]), &ls) ||
        __builtin_add_overflow(ls > 0 ? lhi : llo, ls, ls > 0 ? &lhi : &llo))
      fail(what, "dimension " + str(d) + ": " + lname + " stride " + sstr(local_strides[d]) + " times extent " +
                     str(extents[d]) + " overflows");
    // Remote bounds: [offset + rlo, offset + rhi + elem) must lie in the segment.
    if (rlo < 0 && std::uint64_t(-rlo) > remote_offset)
      fail(what, "dimension " + str(d) + " (extent " + str(extents[d]) + ", stride " + sstr(remote_strides[d]) +
                     " bytes) of the " + rname + " section reaches " + str(std::uint64_t(-rlo) - remote_offset) +
                     " bytes before the start of rank " + std::to_string(rank) + "'s segment");
    if (rhi > 0 && (std::uint64_t(rhi) > seg || remote_offset + elem > seg - std::uint64_t(rhi)))
      fail(what, "dimension " + str(d) + " (extent " + str(extents[d]) + ", stride " + sstr(remote_strides[d]) +
                     " bytes) of the " + rname + " section runs past the end of rank " + std::to_string(rank) +
                     "'s segment of " + str(seg) + " bytes (to byte " + str(remote_offset + std::uint64_t(rhi) + elem) +
                     ")");
  }
  if (p.empty) return p;
  for (std::size_t d = 0; d < dims; ++d)
    if (extents[d] > 1) p.dims.push_back({extents[d], local_strides[d], remote_strides[d]});
  // Fold dimensions that continue a run on both sides (a whole row, plane, ...).
  for (bool folded = true; folded;) {
    folded = false;
    for (auto it = p.dims.begin(); it != p.dims.end(); ++it)
      if (it->local_stride == std::ptrdiff_t(p.run) && it->remote_stride == std::ptrdiff_t(p.run)) {
        p.run *= it->extent;
        p.dims.erase(it);
        folded = true;
        break;
      }
  }
  // Outermost first by remote stride, so copies and MPI types walk the
  // target (the side that pays for misses across the network) in order.
  std::stable_sort(p.dims.begin(), p.dims.end(), [](const strided_dim& a, const strided_dim& b) {
    auto m = [](std::ptrdiff_t s) { return s < 0 ? -s : s; };
    return m(a.remote_stride) > m(b.remote_stride);
  });
  return p;
}

bool strided_put(int rank, std::uint64_t remote_offset, const std::byte* src, const strided_plan& plan,
                 completion done) {
  return strided_transfer(true, rank, remote_offset, const_cast<std::byte*>(src), plan, std::move(done));
}

bool strided_get(int rank, std::uint64_t remote_offset, std::byte* dst, const strided_plan& plan, completion done) {
  return strided_transfer(false, rank, remote_offset, dst, plan, std::move(done));
}

bool strided_by_message(int rank, const strided_plan& plan) noexcept {
  if (plan.empty || plan.dims.empty() || segment_base(rank)) return false;
  return choose_noncontig(plan.runs(), plan.run) == noncontig_method::message;
}

void strided_put_message(int rank, std::uint64_t off, const std::byte* src, const strided_plan& p, completion done,
                         am_handler rcx, std::span<const std::byte> rcx_payload) {
  const std::intptr_t rcx_id = rcx ? am_handler_id(rcx) : 0;
  std::vector<std::byte> msg = message_buffer(wire_bytes(p) + rcx_payload.size() + p.bytes());
  append_head(msg, make_token(std::move(done), nullptr, nullptr), off, p, rcx_payload.size(), rcx_id);
  msg.insert(msg.end(), rcx_payload.begin(), rcx_payload.end());
  const std::size_t at = msg.size();
  msg.resize(at + p.bytes());
  pack(msg.data() + at, src, p, false);
  am_send_owned(rank, &section_put, std::move(msg));
}

void check_irregular(const char* what, bool put, int rank, std::size_t elem, const std::vector<local_frag>& local,
                     const std::vector<remote_frag>& remote) {
  require_initialized(what);
  const char* lname = put ? "source" : "destination";
  const char* rname = put ? "destination" : "source";
  check_range(what, rank, 0, 0);
  const std::uint64_t seg = segment_bytes();
  std::size_t ltot = 0, rtot = 0;
  for (std::size_t i = 0; i < local.size(); ++i) {
    if (!local[i].ptr && local[i].bytes)
      fail(what, std::string(lname) + " fragment " + str(i) + " is a null pointer with " + str(local[i].bytes / elem) +
                     " elements");
    if (__builtin_add_overflow(ltot, local[i].bytes, &ltot))
      fail(what, std::string(lname) + " fragment " + str(i) + ": total length overflows");
  }
  for (std::size_t i = 0; i < remote.size(); ++i) {
    const auto& f = remote[i];
    if (f.offset > seg || f.bytes > seg - f.offset)
      fail(what, std::string(rname) + " fragment " + str(i) + " (" + str(f.bytes / elem) + " elements at offset " +
                     str(f.offset) + ") runs past rank " + std::to_string(rank) + "'s segment of " + str(seg) +
                     " bytes");
    if (__builtin_add_overflow(rtot, f.bytes, &rtot))
      fail(what, std::string(rname) + " fragment " + str(i) + ": total length overflows");
  }
  if (ltot == rtot) return;
  // Name the first fragment holding data that has no counterpart.
  bool local_longer = ltot > rtot;
  std::size_t cut = std::min(ltot, rtot), pos = 0, k = 0;
  for (;; ++k) {
    std::size_t b = local_longer ? local[k].bytes : remote[k].bytes;
    if (pos + b > cut) break;
    pos += b;
  }
  std::string src_tot = str((put ? ltot : rtot) / elem), dst_tot = str((put ? rtot : ltot) / elem);
  const char* longer = local_longer ? lname : rname;
  fail(what, std::string("fragment totals differ (source ") + src_tot + " elements, destination " + dst_tot +
                 "): " + longer + " fragment " + str(k) + " from its element " + str((cut - pos) / elem) +
                 " on has no counterpart");
}

bool irregular_put(int rank, const std::vector<local_frag>& src, const std::vector<remote_frag>& dst, completion done) {
  return irregular_transfer(true, rank, src, dst, std::move(done));
}

bool irregular_get(int rank, const std::vector<remote_frag>& src, const std::vector<local_frag>& dst, completion done) {
  return irregular_transfer(false, rank, dst, src, std::move(done));
}

}  // namespace accrete::detail
