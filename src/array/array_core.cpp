// dist_array's data motion. A patch splits, per axis, into one local range
// per owning part (the elements a part owns in any index range are
// consecutive in its local storage, distribution.hpp), so every (row part,
// column part) pair is one rectangle of the owner's storage:
//  - node-local owners: copied directly (acc under the owner's stripe
//    locks, the assembly engine's);
//  - remote owners: one MPI RMA operation on a rectangle type cached per
//    shape (shared_block::rect), straight from the caller's buffer when its
//    piece is one rectangle too (block and irregular distributions, column
//    major, alpha = 1), else through a packed copy.
#include "array/array_core.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "accrete/collectives.hpp"
#include "accrete/error.hpp"
#include "accrete/matrix/scalapack.hpp"
#include "accrete/team.hpp"
#include "assembly/kernels.hpp"

namespace accrete::detail {
namespace {

using rma = shared_block::rma_op;

rma to_rma(array_op op) { return op == array_op::put ? rma::put : op == array_op::get ? rma::get : rma::acc; }

std::string str(std::int64_t v) { return std::to_string(v); }

void no_packets(assembly_engine&, const packet_view&) {
  throw error("accrete::dist_array: received an assembly packet (dist_array sends none)");
}

// The engine's shape of the array, after every process agreed on the
// distribution and its element type (a difference made puts land in the
// wrong part, or hang) and every process accepted its own part.
assembly_shape shape_of(const distribution& d, const elem_ops& ops) {
  const int np = world_size();
  const std::size_t es = ops.size;
  assembly_shape s;
  std::exception_ptr bad;
  try {
    if (d.parts() != np)
      throw std::invalid_argument("accrete::dist_array: the distribution's grid has " + str(d.parts()) + " parts (" +
                                  str(d.grid_rows()) + " x " + str(d.grid_cols()) + ") but there are " + str(np) +
                                  " processes");
    s.name = "accrete::dist_array";
    s.rows = d.rows();
    s.cols = d.cols();
    // Only the stripe width is read from the column map (dist_array never
    // bins through the engine): the widest part's columns split into one
    // contiguous stripe per lock, so an acc of c columns takes about
    // c / width locks, not c (array_rma: acc 64x64 node-local was 1.6x plain
    // MPI with one lock per column). Every process must compute the same
    // width, hence the widest part, not its own.
    std::int64_t widest = 1;
    for (int part = 0; part < np; ++part) widest = std::max(widest, d.local_cols(part));
    const std::int64_t width = (widest + assembly_engine::nlocks - 1) / assembly_engine::nlocks;
    s.row_map = {1, d.grid_rows(), 0, {}};
    s.col_map = {width, d.grid_cols(), 0, {}};
    s.my_part = world_rank();
    s.lrows = d.local_rows(s.my_part);
    s.lcols = d.local_cols(s.my_part);
    s.lld = std::max<std::int64_t>(1, s.lrows);
    s.elem_size = es;
    // The stripe locks index local columns in 32 bits (a part without rows
    // is never indexed).
    if (s.lrows > 0 && s.lcols > INT32_MAX)
      throw std::invalid_argument("accrete::dist_array: this process's part has " + str(s.lcols) +
                                  " columns; a part holds at most 2^31-1 columns");
    s.storage_bytes = assembly_engine::storage_bytes_for(s.lrows, s.lcols, s.lld, es);
    if (s.storage_bytes == 0)
      throw std::invalid_argument("accrete::dist_array: the local part (" + str(s.lrows) + " x " + str(s.lcols) +
                                  " elements of " + str(std::int64_t(es)) + " bytes) does not fit in memory");
    s.buffer_cap = std::size_t{1} << 20;
    s.coalesce_bytes = std::size_t{64} << 10;
  } catch (...) {
    bad = std::current_exception();
  }
  const axis &ra = d.row_axis(), &ca = d.col_axis();
  auto bounds_hash = [](const axis& a) {
    return arg_hash(a.bounds().data(), a.bounds().size() * sizeof(std::int64_t));
  };
  agree("accrete::dist_array", bad,
        {{"element type", std::int64_t(ops.type), &show_scalar_type},
         {"rows", d.rows()},
         {"cols", d.cols()},
         {"distribution kind", std::int64_t(d.kind())},
         {"grid rows", d.grid_rows()},
         {"grid columns", d.grid_cols()},
         {"row block", ra.block()},
         {"column block", ca.block()},
         {"source row", ra.src()},
         {"source column", ca.src()},
         {"row bounds", bounds_hash(ra), &show_hash},
         {"column bounds", bounds_hash(ca), &show_hash}});
  return s;
}

}  // namespace

array_core::array_core(const distribution& d, const elem_ops& ops)
    : dist_(d), ops_(ops), engine_(shape_of(d, ops), &no_packets) {}

void array_core::split(const axis& a, std::int64_t lo, std::int64_t hi, axis_split& out) {
  out.pieces.clear();
  if (out.slot.size() < std::size_t(a.parts())) out.slot.resize(std::size_t(a.parts()), -1);
  a.for_each_run(lo, hi, [&](int part, std::int64_t g, std::int64_t l, std::int64_t len) {
    int& s = out.slot[std::size_t(part)];
    if (s < 0) {
      s = int(out.pieces.size());
      out.pieces.push_back({part, l, 0});
      if (out.runs.size() < out.pieces.size()) out.runs.emplace_back();
      out.runs[std::size_t(s)].clear();
    }
    out.pieces[std::size_t(s)].count += len;
    auto& runs = out.runs[std::size_t(s)];
    if (!runs.empty() && runs.back().first + runs.back().second == g - lo)
      runs.back().second += len;
    else
      runs.push_back({g - lo, len});
  });
  // Back to all -1 in O(pieces), not O(parts): the next split may be of
  // another array.
  for (const auto& piece : out.pieces) out.slot[std::size_t(piece.part)] = -1;
}

std::int64_t array_core::global_index(const char* what, bool row, std::int64_t l) const {
  const std::int64_t n = row ? local_rows() : local_cols();
  if (l < 0 || l >= n)
    throw std::out_of_range(std::string("accrete::dist_array::") + what + ": local index " + str(l) +
                            " is outside [0, " + str(n) + "), this process's " + (row ? "rows" : "columns"));
  const int part = my_part();
  return row ? dist_.row_axis().global(part / dist_.grid_cols(), l) : dist_.col_axis().global(part % dist_.grid_cols(), l);
}

void array_core::check_patch(const patch& p, const std::byte* buf, std::int64_t ld, matrix_layout lay,
                             const char* what) const {
  engine_.require_usable(what);
  // The message is built only on failure: this runs on every transfer.
  auto w = [what] { return std::string("accrete::dist_array::") + what + ": "; };
  auto bound = [&](const char* name, std::int64_t v, std::int64_t lo, std::int64_t hi) {
    if (v < lo || v > hi)
      throw std::out_of_range(w() + name + " = " + str(v) + " is outside [" + str(lo) + ", " + str(hi) + "]");
  };
  // Half-open ranges: each end within [0, extent], then the order (an
  // inverted range is named as such, not as an end out of range). Every
  // range check comes before any buffer check.
  auto range = [&](const char* lo_name, const char* hi_name, std::int64_t lo, std::int64_t hi, std::int64_t n) {
    bound(lo_name, lo, 0, n);
    bound(hi_name, hi, 0, n);
    if (hi < lo)
      throw std::out_of_range(w() + "the patch is inverted: " + hi_name + " = " + str(hi) + " is below " + lo_name +
                              " = " + str(lo));
  };
  range("row_lo", "row_hi", p.row_lo, p.row_hi, dist_.rows());
  range("col_lo", "col_hi", p.col_lo, p.col_hi, dist_.cols());
  if (p.empty()) return;
  if (!buf)
    throw std::invalid_argument(w() + "null buffer for a " + str(p.rows()) + " x " + str(p.cols()) + " patch");
  const std::int64_t need = lay == matrix_layout::col_major ? p.rows() : p.cols();
  if (ld < need)
    throw std::invalid_argument(w() + "ld = " + str(ld) + " is smaller than the patch's " +
                                (lay == matrix_layout::col_major ? "rows" : "columns") + " (" + str(need) + ")");
}

bool array_core::direct_ok(array_op op, int part) const noexcept {
  return engine_.part_storage(part) && (op != array_op::acc || world_on_one_node());
}

// Every piece completes locally before transfer returns (direct copies, and
// shared_block::rect waits for MPI's local completion), so the future is
// always ready; the calls keep the future so that an owner-side or
// deferred path can be added without changing the API.
future<> array_core::transfer(array_op op, const patch& p, std::byte* buf, std::int64_t ld, matrix_layout lay,
                              const void* alpha, const char* what) const {
  check_patch(p, buf, ld, lay, what);
  if (p.empty()) return make_future();
  const std::size_t es = ops_.size;
  const bool colmaj = lay == matrix_layout::col_major;
  const std::int64_t rs = colmaj ? 1 : ld, cs = colmaj ? ld : 1;  // buffer strides of a row / column step
  ACCRETE_THREAD_LOCAL axis_split rsplit, csplit;
  split(dist_.row_axis(), p.row_lo, p.row_hi, rsplit);
  split(dist_.col_axis(), p.col_lo, p.col_hi, csplit);
  const int pc = dist_.grid_cols();
  // Local column indices are 32-bit (the engine's stripe locks; parts hold
  // at most INT32_MAX columns, checked at construction), patch positions
  // are not: a patch may span parts.
  ACCRETE_THREAD_LOCAL std::vector<std::int32_t> lcol;
  ACCRETE_THREAD_LOCAL std::vector<std::int64_t> cpos;
  ACCRETE_THREAD_LOCAL std::vector<std::byte> packed;
  auto at = [&](std::int64_t r, std::int64_t c) { return buf + std::size_t(r * rs + c * cs) * es; };

  for (std::size_t ci = 0; ci < csplit.pieces.size(); ++ci) {
    const axis_piece& c = csplit.pieces[ci];
    const auto& cruns = csplit.runs[ci];
    // Local column -> its position in the patch.
    cpos.clear();
    for (auto [pos, len] : cruns)
      for (std::int64_t k = 0; k < len; ++k) cpos.push_back(pos + k);
    for (std::size_t ri = 0; ri < rsplit.pieces.size(); ++ri) {
      const axis_piece& r = rsplit.pieces[ri];
      const auto& rruns = rsplit.runs[ri];
      const int part = r.part * pc + c.part;
      const std::int64_t tld = engine_.lld_of(part);
      if (direct_ok(op, part)) {
        std::byte* base = engine_.part_storage(part);
        // Column `k` of the piece: every row run between buffer and storage.
        auto column = [&](std::int64_t k) {
          std::byte* t = base + std::size_t((c.lstart + k) * tld + r.lstart) * es;
          for (auto [pos, len] : rruns) {
            std::byte* u = at(pos, cpos[std::size_t(k)]);
            if (op == array_op::put)
              ops_.copy(t, 1, u, rs, len, nullptr);
            else if (op == array_op::get)
              ops_.copy(u, rs, t, 1, len, nullptr);
            else
              ops_.add(t, 1, u, rs, len, alpha);
            t += std::size_t(len) * es;
          }
        };
        // The storage lines of the column prefetch_columns ahead (of the
        // piece, not of a stripe: a stripe may hold a column or two), as
        // the engine's kernels do: each column's run is on a page of its
        // own, which the hardware prefetchers do not follow (a long run
        // they do: its first page is hint enough). An acc of a 64 x 64
        // tile of doubles into a 4096-row array: 4.2-5.8 -> 2.6-2.7 us.
        const std::size_t run_bytes = std::min<std::size_t>(std::size_t(r.count) * es, 4096);
        auto column_ahead = [&](std::int64_t k) __attribute__((always_inline)) {
          if (k + prefetch_columns < c.count)
            prefetch_lines(base + std::size_t((c.lstart + k + prefetch_columns) * tld + r.lstart) * es, run_bytes,
                           op != array_op::get);
        };
        if (op != array_op::acc) {
          for (std::int64_t k = 0; k < c.count; ++k) {
            column_ahead(k);
            column(k);
          }
        } else {
          lcol.resize(std::size_t(c.count));
          for (std::int64_t k = 0; k < c.count; ++k) lcol[std::size_t(k)] = std::int32_t(c.lstart + k);
          engine_.with_stripes(part, lcol.data(), std::int32_t(c.count), [&](std::int32_t k0, std::int32_t k1) {
            for (std::int32_t k = k0; k < k1; ++k) {
              column_ahead(k);
              column(k);
            }
          });
        }
        continue;
      }
      const int rank = engine_.world_of(part);
      const std::size_t off = assembly_engine::header_bytes + std::size_t(c.lstart * tld + r.lstart) * es;
      const bool one_rect = colmaj && rruns.size() == 1 && cruns.size() == 1 && (op != array_op::acc || !alpha);
      if (one_rect) {
        engine_.block().rect(to_rma(op), rank, off, r.count, c.count, tld, ops_.type,
                             at(rruns[0].first, cruns[0].first), ld);
        continue;
      }
      // Packed: the piece as a contiguous r.count x c.count column-major block.
      packed.resize(std::size_t(r.count * c.count) * es);
      auto each = [&](auto&& f) {
        std::byte* q = packed.data();
        for (std::int64_t k = 0; k < c.count; ++k)
          for (auto [pos, len] : rruns) {
            f(q, at(pos, cpos[std::size_t(k)]), len);
            q += std::size_t(len) * es;
          }
      };
      if (op != array_op::get)
        each([&](std::byte* q, std::byte* u, std::int64_t len) { ops_.copy(q, 1, u, rs, len, alpha); });
      engine_.block().rect(to_rma(op), rank, off, r.count, c.count, tld, ops_.type, packed.data(), r.count);
      if (op == array_op::get)
        each([&](std::byte* q, std::byte* u, std::int64_t len) { ops_.copy(u, rs, q, 1, len, nullptr); });
    }
  }
  // Kept for the next small patch, but a large one's copy is not held for
  // the life of the thread.
  if (packed.capacity() > (std::size_t{1} << 20)) std::vector<std::byte>().swap(packed);
  return make_future();
}

void array_core::elements(array_op op, std::span<const std::int64_t> rows, std::span<const std::int64_t> cols,
                          std::byte* vals, const void* alpha, const char* what) const {
  engine_.require_usable(what);
  const std::string w = std::string("accrete::dist_array::") + what + ": ";
  if (rows.size() != cols.size())
    throw std::invalid_argument(w + str(std::int64_t(rows.size())) + " row indices but " +
                                str(std::int64_t(cols.size())) + " column indices");
  const std::size_t n = rows.size();
  if (n == 0) return;
  if (!vals) throw std::invalid_argument(w + "null value buffer for " + str(std::int64_t(n)) + " elements");
  for (std::size_t k = 0; k < n; ++k) {
    if (rows[k] < 0 || rows[k] >= dist_.rows())
      throw std::out_of_range(w + "rows[" + str(std::int64_t(k)) + "] = " + str(rows[k]) + " is outside [0, " +
                              str(dist_.rows()) + ")");
    if (cols[k] < 0 || cols[k] >= dist_.cols())
      throw std::out_of_range(w + "cols[" + str(std::int64_t(k)) + "] = " + str(cols[k]) + " is outside [0, " +
                              str(dist_.cols()) + ")");
  }
  const std::size_t es = ops_.size;
  const axis &ra = dist_.row_axis(), &ca = dist_.col_axis();
  const int pc = dist_.grid_cols();
  // Remote elements by owner: (element offset in the owner's storage, k).
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> remote(std::size_t(dist_.parts()));
  for (std::size_t k = 0; k < n; ++k) {
    const int part = ra.owner(rows[k]) * pc + ca.owner(cols[k]);
    const std::int64_t lc = ca.local(cols[k]);
    const std::int64_t e = lc * engine_.lld_of(part) + ra.local(rows[k]);
    if (!direct_ok(op, part)) {
      remote[std::size_t(part)].push_back({e, std::int64_t(k)});
      continue;
    }
    std::byte* t = engine_.part_storage(part) + std::size_t(e) * es;
    std::byte* v = vals + k * es;
    if (op == array_op::put)
      ops_.copy(t, 1, v, 1, 1, nullptr);
    else if (op == array_op::get)
      ops_.copy(v, 1, t, 1, 1, nullptr);
    else {
      const auto l = std::int32_t(lc);
      engine_.with_stripes(part, &l, 1, [&](std::int32_t, std::int32_t) { ops_.add(t, 1, v, 1, 1, alpha); });
    }
  }
  // The combined values per owner; gets are unpacked once all have arrived
  // (each operation is locally complete when block().elements returns).
  std::vector<std::vector<std::byte>> bufs;
  std::vector<std::pair<std::vector<std::int64_t>, std::size_t>> gathers;  // (k per value, buf index)
  for (int part = 0; part < dist_.parts(); ++part) {
    auto& list = remote[std::size_t(part)];
    if (list.empty()) continue;
    // MPI forbids overlapping targets within one operation: one value per
    // distinct element (summed for acc, the last for put).
    std::stable_sort(list.begin(), list.end(), [](auto& a, auto& b) { return a.first < b.first; });
    std::vector<std::int64_t> d;
    std::vector<std::byte> b;
    std::vector<std::int64_t> owners;  // get: every k reading each distinct element, flattened with -1 separators
    for (std::size_t i = 0; i < list.size();) {
      std::size_t j = i;
      while (j < list.size() && list[j].first == list[i].first) ++j;
      d.push_back(list[i].first);
      b.resize(b.size() + es);
      std::byte* slot = b.data() + b.size() - es;
      if (op == array_op::put) {
        std::memcpy(slot, vals + std::size_t(list[j - 1].second) * es, es);
      } else if (op == array_op::acc) {
        ops_.copy(slot, 1, vals + std::size_t(list[i].second) * es, 1, 1, alpha);
        for (std::size_t q = i + 1; q < j; ++q) ops_.add(slot, 1, vals + std::size_t(list[q].second) * es, 1, 1, alpha);
      } else {
        for (std::size_t q = i; q < j; ++q) owners.push_back(list[q].second);
        owners.push_back(-1);
      }
      i = j;
    }
    bufs.push_back(std::move(b));
    if (op == array_op::get) gathers.push_back({std::move(owners), bufs.size() - 1});
    engine_.block().elements(to_rma(op), engine_.world_of(part), assembly_engine::header_bytes, d,
                             ops_.type, bufs.back().data());
  }
  for (auto& [owners, bi] : gathers) {
    const std::byte* q = bufs[bi].data();
    for (std::int64_t k : owners) {
      if (k < 0) {
        q += es;
        continue;
      }
      std::memcpy(vals + std::size_t(k) * es, q, es);
    }
  }
}

void array_core::flush(const char* what) const {
  engine_.require_usable(what);
  engine_.block().flush_all();
}

void array_core::flush(int rank, const char* what) const {
  engine_.require_usable(what);
  if (rank < 0 || rank >= world_size())
    throw std::out_of_range(std::string("accrete::dist_array::") + what + ": rank " + str(rank) +
                            " is outside [0, " + str(world_size()) + ")");
  engine_.block().flush(rank);
}

void array_core::flush_local(const char* what) const {
  engine_.require_usable(what);
  engine_.block().flush_local_all();
}

void array_core::sync(const char* what) const {
  flush(what);
  barrier(world());
  engine_.block().sync();
}

std::byte* array_core::access(const char* what) {
  std::byte* p = local(what);
  if (accessed_)
    throw error(std::string("accrete::dist_array::") + what + ": the part is already accessed (release it first)");
  accessed_ = true;
  return p;
}

void array_core::release(bool updated, const char* what) {
  engine_.require_usable(what);
  if (!accessed_) throw error(std::string("accrete::dist_array::") + what + ": release without access()");
  accessed_ = false;
  if (updated) engine_.block().sync();
}

int array_core::my_part() const noexcept { return engine_.shape().my_part; }

void array_core::file(const std::string& path, bool write, const char* what) {
  enter(what, {{"path", arg_hash(path.data(), path.size()), &show_hash}});
  sync(what);
  const std::string name = std::string("dist_array::") + what;
  world_matrix_file_io({path, name.c_str(), ops_.type, dist_.rows(), dist_.cols(), my_row_runs(), my_col_runs(),
                        local(what), local_rows(), local_cols(), lld()},
                       write);
  // Other processes read the loaded parts only after every part is in.
  if (!write) sync(what);
}

std::array<int, 9> array_core::descriptor(const char* what) const {
  engine_.require_usable(what);
  if (!dist_.row_axis().is_cyclic() || !dist_.col_axis().is_cyclic())
    throw std::logic_error(std::string("accrete::dist_array::") + what +
                           ": a block or irregular array has no ScaLAPACK descriptor (use a block_cyclic or "
                           "element_cyclic distribution)");
  // Part r * pc + c is world rank r * pc + c: a row-major grid over the world.
  if (!grid_) grid_ = std::make_unique<process_grid>(world().mpi_comm(), dist_.grid_rows(), dist_.grid_cols());
  return accrete::descriptor(dist_.as_block_cyclic(), *grid_, lld());
}

void array_core::require_same(const array_core& o, const char* what) const {
  engine_.require_usable(what);
  o.engine_.require_usable(what);
  if (!(o.dist_ == dist_))
    throw std::invalid_argument(std::string("accrete::dist_array::") + what +
                                ": the arrays have different distributions");
}

}  // namespace accrete::detail
