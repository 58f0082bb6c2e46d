// convergent_matrix<T>: the typed layer over the assembly engine
// (include/accrete/detail/assembly_engine.hpp, src/assembly/): argument
// checks, the block-cyclic shape, element reads, ScaLAPACK and MPI-IO
// access, and the transposes.
#include "accrete/matrix/convergent_matrix.hpp"

#include <algorithm>
#include <climits>
#include <complex>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "accrete/collectives.hpp"
#include "accrete/error.hpp"
#include "accrete/matrix/mpiio.hpp"
#include "accrete/matrix/scalapack.hpp"
#include "accrete/detail/rpc_runtime.hpp"
#include "assembly/kernels.hpp"

namespace accrete {
namespace detail {
namespace {

// Everything the constructor must check before its first collective step.
// Runs on every process; agree() then makes all of them throw if any one
// failed, so none is left waiting in a collective.
struct checked_sizes {
  std::int64_t lrows = 0, lcols = 0, lld = 0;
  std::size_t bytes = 0;  // storage bytes of this process
};

checked_sizes check_arguments(const block_cyclic& L, const process_grid& grid, std::size_t esize,
                              const convergent_matrix_options& opt) {
  const std::string who = "accrete::convergent_matrix: ";
  checked_sizes c;
  c.lrows = L.local_rows(grid.my_row());
  c.lcols = L.local_cols(grid.my_col());
  if (opt.lld < 0 || (opt.lld != 0 && opt.lld < std::max<std::int64_t>(1, c.lrows)))
    throw std::invalid_argument(who + "lld = " + std::to_string(opt.lld) + " is below the local row count " +
                                std::to_string(c.lrows));
  c.lld = opt.lld ? opt.lld : std::max<std::int64_t>(1, c.lrows);
  // ScaLAPACK descriptors and the packets' local indices are 32-bit.
  if (c.lld > INT32_MAX || c.lcols > INT32_MAX)
    throw std::invalid_argument(who + "local dimensions " + std::to_string(c.lld) + " x " + std::to_string(c.lcols) +
                                " exceed 2^31-1");
  c.bytes = assembly_engine::storage_bytes_for(c.lrows, c.lcols, c.lld, esize);
  if (c.bytes == 0)
    throw std::invalid_argument(who + "local storage of lld " + std::to_string(c.lld) + " x " +
                                std::to_string(c.lcols) + " columns x " + std::to_string(esize) +
                                " bytes does not fit in memory");
  if (opt.buffer_cap < 1024)
    throw std::invalid_argument(who + "buffer_cap = " + std::to_string(opt.buffer_cap) + " is below 1 KiB");
  if (opt.coalesce_bytes == 0) throw std::invalid_argument(who + "coalesce_bytes = 0");
  return c;
}


}  // namespace

// The engine's shape of an m x n block-cyclic matrix on `grid`, after every
// process agreed on the arguments (so that none is left waiting in the
// engine's first collective step while another throws).
assembly_shape cm_shape(std::int64_t m, std::int64_t n, const process_grid& grid, std::int64_t mb, std::int64_t nb,
                        std::size_t esize, scalar_type type, const convergent_matrix_options& opt,
                        block_cyclic& layout, void (*user_merge)() = nullptr) {
  const bool ordered = type == scalar_type::f32 || type == scalar_type::f64;
  require_initialized("convergent_matrix");
  checked_sizes c;
  std::exception_ptr bad;
  std::int64_t merge_offset = 0;
  const merge_op merge = user_merge ? merge_op::user : opt.merge;
  try {
    const std::string who = "accrete::convergent_matrix: ";
    if (grid.size() != world_size())
      throw std::invalid_argument(who + "the process grid has " + std::to_string(grid.size()) +
                                  " processes but the world team has " + std::to_string(world_size()) +
                                  "; the grid must span every process");
    for (auto [name, v, least] : {std::tuple{"m", m, 0}, {"n", n, 0}, {"mb", mb, 1}, {"nb", nb, 1}})
      if (v < least)
        throw std::invalid_argument(who + name + " = " + std::to_string(v) +
                                    (least ? " is below 1" : " is negative"));
    layout = block_cyclic(m, n, mb, nb, grid.rows(), grid.cols());
    c = check_arguments(layout, grid, esize, opt);
    if (opt.merge != merge_op::sum && opt.merge != merge_op::max && opt.merge != merge_op::min &&
        !(opt.merge == merge_op::user && user_merge))
      throw std::invalid_argument(who + "merge = " + std::to_string(int(opt.merge)) +
                                  (opt.merge == merge_op::user
                                       ? ": merge_op::user needs a (non-null) merge_function, given to the constructor that takes one"
                                       : " is not a merge_op"));
    if ((opt.merge == merge_op::max || opt.merge == merge_op::min) && !ordered)
      throw std::invalid_argument(who + "merge = " + (opt.merge == merge_op::max ? "max" : "min") +
                                  " on complex elements, which have no order (use a merge_function)");
    if (opt.atomic_updates && opt.reproducible)
      throw std::invalid_argument(who + "atomic_updates = true with reproducible = true: reproducible assembly "
                                        "applies inexact contributions at commit, not with their update");
    if (opt.merge == merge_op::user && opt.reproducible)
      throw std::invalid_argument(who + "reproducible = true with a user merge function: reproducible assembly "
                                        "concerns sums (an exactly associative function is reproducible already)");
    if (opt.strategy != update_strategy::packets && opt.strategy != update_strategy::alltoall)
      throw std::invalid_argument(who + "strategy = " + std::to_string(int(opt.strategy)) +
                                  " is not an update_strategy");
    if (user_merge) merge_offset = fn_to_offset(user_merge);  // throws unless in the program's code
  } catch (...) {
    bad = std::current_exception();
  }
  // Everything that decides the layout, the message formats and the
  // commit's steps must be the same everywhere (a difference lost updates
  // or hung commit). lld, buffer_cap, coalesce_bytes and seed are each
  // process's own.
  agree("accrete::convergent_matrix", bad,
        {{"element type", std::int64_t(type), &show_scalar_type},
         {"m", m},
         {"n", n},
         {"mb", mb},
         {"nb", nb},
         {"grid rows", grid.rows()},
         {"grid columns", grid.cols()},
         {"grid order", std::int64_t(grid.order())},
         {"strategy", std::int64_t(opt.strategy), &show_strategy},
         {"reproducible", opt.reproducible, &show_bool},
         {"atomic_updates", opt.atomic_updates, &show_bool},
         {"merge", std::int64_t(merge), &show_merge},
         {"merge function", merge_offset, &show_hash}});
  assembly_shape s;
  s.name = "accrete::convergent_matrix";
  s.rows = m;
  s.cols = n;
  s.row_map = {layout.row_block(), grid.rows(), layout.src_row(), {}};
  s.col_map = {layout.col_block(), grid.cols(), layout.src_col(), {}};
  s.my_part = grid.my_row() * grid.cols() + grid.my_col();
  s.lrows = c.lrows;
  s.lcols = c.lcols;
  s.lld = c.lld;
  s.elem_size = esize;
  s.storage_bytes = c.bytes;
  s.strategy = opt.strategy;
  s.buffer_cap = opt.buffer_cap;
  s.coalesce_bytes = opt.coalesce_bytes;
  s.seed = opt.seed;
  s.merge = merge;
  s.reproducible = opt.reproducible && s.merge == merge_op::sum;  // max and min are order-independent already
  s.user_merge = user_merge;
  s.atomic_updates = opt.atomic_updates;
  return s;
}

}  // namespace detail

template <class T>
convergent_matrix<T>::convergent_matrix(std::int64_t m, std::int64_t n, const process_grid& grid, std::int64_t mb,
                                        std::int64_t nb, const convergent_matrix_options& opt)
    : layout_(1, 1, 1, 1, 1, 1),
      grid_(grid),
      engine_(detail::cm_shape(m, n, grid, mb, nb, sizeof(T), detail::element_type_of<T>(), opt, layout_),
              &detail::apply_packet<T>,
              &detail::settle_spills<T>) {}

namespace {
convergent_matrix_options with_user_merge(convergent_matrix_options o) {
  o.merge = merge_op::user;
  return o;
}
}  // namespace

template <class T>
convergent_matrix<T>::convergent_matrix(std::int64_t m, std::int64_t n, const process_grid& grid, std::int64_t mb,
                                        std::int64_t nb, merge_function merge, const convergent_matrix_options& opt)
    : layout_(1, 1, 1, 1, 1, 1),
      grid_(grid),
      engine_(detail::cm_shape(m, n, grid, mb, nb, sizeof(T), detail::element_type_of<T>(), with_user_merge(opt),
                               layout_, reinterpret_cast<void (*)()>(merge)),
              &detail::apply_packet<T>, &detail::settle_spills<T>) {}

template <class T>
void convergent_matrix<T>::update(const T* block, std::int64_t ld, std::span<const std::int64_t> rows,
                                  std::span<const std::int64_t> cols, matrix_layout lay) {
  engine_.update(block, ld, rows, cols, lay);
}

template <class T>
void convergent_matrix<T>::update_symmetric(const T* block, std::int64_t ld, std::span<const std::int64_t> ix,
                                            matrix_layout lay) {
  engine_.validate(ix, ix, ld, lay, block);
  // Split into one update per column so each carries only rows ix[i] <= ix[j].
  ACCRETE_THREAD_LOCAL std::vector<std::int64_t> rsel;
  ACCRETE_THREAD_LOCAL std::vector<T> vals;
  const bool colmaj = lay == matrix_layout::col_major;
  for (std::size_t j = 0; j < ix.size(); ++j) {
    rsel.clear();
    vals.clear();
    for (std::size_t i = 0; i < ix.size(); ++i)
      if (ix[i] <= ix[j]) {
        rsel.push_back(ix[i]);
        vals.push_back(colmaj ? block[i + j * std::size_t(ld)] : block[i * std::size_t(ld) + j]);
      }
    if (!rsel.empty()) update(vals.data(), std::int64_t(rsel.size()), rsel, ix.subspan(j, 1));
  }
}

namespace {
// A local index of this process's part, named as global_row/global_col's caller gave it.
std::int64_t checked_local(const char* what, std::int64_t l, std::int64_t n, const char* dim) {
  if (l < 0 || l >= n)
    throw std::out_of_range(std::string("accrete::convergent_matrix::") + what + ": local index " +
                            std::to_string(l) + " is outside [0, " + std::to_string(n) + "), this process's " + dim);
  return l;
}
}  // namespace

template <class T>
std::int64_t convergent_matrix<T>::global_row(std::int64_t li) const {
  return layout_.global_row(grid_.my_row(), checked_local("global_row", li, local_rows(), "rows"));
}

template <class T>
std::int64_t convergent_matrix<T>::global_col(std::int64_t lj) const {
  return layout_.global_col(grid_.my_col(), checked_local("global_col", lj, local_cols(), "columns"));
}

template <class T>
T convergent_matrix<T>::get(std::int64_t i, std::int64_t j) const {
  engine_.require_usable("get");
  auto in = [](const char* name, std::int64_t v, std::int64_t n) {
    if (v < 0 || v >= n)
      throw std::out_of_range(std::string("accrete::convergent_matrix::get: ") + name + " = " + std::to_string(v) +
                              " is outside [0, " + std::to_string(n) + ")");
  };
  in("i", i, rows());
  in("j", j, cols());
  const int part = layout().owner_row(i) * grid().cols() + layout().owner_col(j);
  T v;
  engine_.read(part, layout().local_row(i), layout().local_col(j), &v, sizeof v);
  return v;
}

template <class T>
void convergent_matrix<T>::snapshot_local(std::span<T> dst) const {
  engine_.require_usable("snapshot_local");
  const std::size_t need = std::size_t(lld()) * std::size_t(local_cols());
  if (dst.size() < need)
    throw std::invalid_argument("accrete::convergent_matrix::snapshot_local: dst has " + std::to_string(dst.size()) +
                                " elements, the part needs lld * local columns = " + std::to_string(need));
  engine_.snapshot(dst.data());
}

template <class T>
std::array<int, 9> convergent_matrix<T>::descriptor() const {
  engine_.require_usable("descriptor");
  return accrete::descriptor(layout(), grid(), lld());
}

template <class T>
void convergent_matrix<T>::save(const std::string& path) const {
  engine_.enter("save", {{"path", detail::arg_hash(path.data(), path.size()), &detail::show_hash}}, [] {});
  write_matrix(path, layout(), grid(), local(), lld());
}

template <class T>
void convergent_matrix<T>::load(const std::string& path) {
  engine_.enter("load", {{"path", detail::arg_hash(path.data(), path.size()), &detail::show_hash}}, [] {});
  read_matrix(path, layout(), grid(), local(), lld());
  barrier(world());
}

template <class T>
void convergent_matrix<T>::transpose_into(bool upper_only, bool average) {
  const char* what = upper_only ? "fill_lower" : "symmetrize";
  engine_.enter(what, {}, [&] {
    if (rows() != cols())
      throw std::invalid_argument(std::string("accrete::convergent_matrix::") + what + ": the matrix is " +
                                  std::to_string(rows()) + " x " + std::to_string(cols()) + ", not square");
  });
  // Element (i, j) here goes to the owner of (j, i). Each side enumerates
  // the same elements in the same order (sender's local column-major order,
  // restricted to what the receiver owns), so only values travel.
  //
  // Both sides walk index lists bucketed by the other side's grid row or
  // column, so the work is O(local elements + local rows + local columns)
  // per process. (Scanning every local element once per peer, as this did
  // before, cost O(n^2 / sqrt(P)).) Block-cyclic local indices grow with
  // global ones, so ascending global order within a bucket is the owner's
  // local order.
  const auto& L = layout();
  const int np = grid().size(), pr = grid().rows(), pc = grid().cols();
  const int mr = grid().my_row(), mc = grid().my_col();
  constexpr bool hermitian = !std::is_floating_point_v<T>;  // complex: mirror conj(A(i, j))
  auto mirror = [](T v) {
    if constexpr (hermitian)
      return std::conj(v);
    else
      return v;
  };
  // Our global rows grouped by the grid column owning that index as a
  // column, our global columns by the grid row owning it as a row; each
  // entry (global index, our local index), ascending within a group.
  struct buckets {
    std::vector<std::int64_t> start;                        // group g: [start[g], start[g + 1])
    std::vector<std::pair<std::int64_t, std::int64_t>> at;  // (global, local)
    std::span<const std::pair<std::int64_t, std::int64_t>> operator[](int g) const {
      return {at.data() + start[std::size_t(g)], at.data() + start[std::size_t(g) + 1]};
    }
  };
  auto group = [](int groups, std::int64_t count, auto&& global_of, auto&& owner_of) {
    buckets b;
    b.start.assign(std::size_t(groups) + 1, 0);
    for (std::int64_t k = 0; k < count; ++k) ++b.start[std::size_t(owner_of(global_of(k))) + 1];
    for (int g = 0; g < groups; ++g) b.start[std::size_t(g) + 1] += b.start[std::size_t(g)];
    b.at.resize(std::size_t(count));
    std::vector<std::int64_t> fill(b.start.begin(), b.start.end() - 1);
    for (std::int64_t k = 0; k < count; ++k) {
      const std::int64_t x = global_of(k);
      b.at[std::size_t(fill[std::size_t(owner_of(x))]++)] = {x, k};
    }
    return b;
  };
  const std::int64_t nlr = local_rows(), nlc = local_cols();
  const buckets rows_by = group(
      pc, nlr, [&](std::int64_t li) { return L.global_row(mr, li); }, [&](std::int64_t x) { return L.owner_col(x); });
  const buckets cols_by = group(
      pr, nlc, [&](std::int64_t lj) { return L.global_col(mc, lj); }, [&](std::int64_t x) { return L.owner_row(x); });
  auto wanted = [&](std::int64_t i, std::int64_t j) { return i != j && !(upper_only && i > j); };
  std::vector<std::size_t> scount(np, 0), sdispl(np, 0), rcount, rdispl;
  std::vector<T> sbuf;
  sbuf.reserve(std::size_t(nlr * nlc));
  const T* mine = local();
  for (int t = 0; t < np; ++t) {
    const int w = engine_.world_of(t);
    sdispl[w] = sbuf.size() * sizeof(T);
    // To part (tr, tc): our (i, j) with j a row of tr and i a column of tc.
    for (const auto& [j, lj] : cols_by[t / pc])
      for (const auto& [i, li] : rows_by[t % pc])
        if (wanted(i, j)) sbuf.push_back(mine[lj * lld() + li]);
    scount[w] = sbuf.size() * sizeof(T) - sdispl[w];
  }
  const std::string name = std::string("accrete::convergent_matrix::") + what;
  const detail::collective_ticket ticket = detail::collective_begin(name.c_str());
  auto rbytes = detail::alltoallv_bytes(reinterpret_cast<const std::byte*>(sbuf.data()), scount, sdispl, rcount,
                                        rdispl, [&](detail::request& r) { detail::wait_collective(r, ticket); });
  detail::collective_end(ticket);
  const T* rbuf = reinterpret_cast<const T*>(rbytes.data());
  T* out = local();
  for (int s = 0; s < np; ++s) {
    std::size_t k = rdispl[engine_.world_of(s)] / sizeof(T);
    // From part (sr, sc), in its order: (i, j) with j one of our rows and
    // a column of sc, i one of our columns and a row of sr. The value of
    // (i, j) lands on our element (j, i).
    for (const auto& [j, lrow] : rows_by[s % pc])
      for (const auto& [i, lcol] : cols_by[s / pc])
        if (wanted(i, j)) {
          T& dst = out[lcol * lld() + lrow];
          dst = average ? (dst + mirror(rbuf[k])) / T(2) : mirror(rbuf[k]);
          ++k;
        }
  }
  if constexpr (hermitian)  // (A + A^H) / 2 on the diagonal: its real part
    if (average)
      for (std::int64_t lj = 0; lj < local_cols(); ++lj) {
        const std::int64_t j = L.global_col(mc, lj);
        if (j < rows() && L.owner_row(j) == mr) out[lj * lld() + L.local_row(j)].imag(0);
      }
  barrier(world());
}

template <class T>
void convergent_matrix<T>::fill_lower() {
  transpose_into(true, false);
}

template <class T>
void convergent_matrix<T>::symmetrize() {
  transpose_into(false, true);
}

template class convergent_matrix<float>;
template class convergent_matrix<double>;
template class convergent_matrix<std::complex<float>>;
template class convergent_matrix<std::complex<double>>;

}  // namespace accrete
