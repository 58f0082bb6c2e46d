// The extension module accrete._accrete: the C++ classes for Python, over
// numpy arrays without copies where the semantics allow (update and put read
// the caller's array in place, local/access are views). The Python package
// (python/src/accrete/) adds the dtype dispatch, slicing and lifetime.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/complex.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <complex>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "accrete/accrete.hpp"
// The bindings take part in collective agreement like the C API does
// (detail::construct_collectively, detail::agree).
#define ACCRETE_INTERNAL_INCLUDE
#include "accrete/detail/backend.hpp"
#undef ACCRETE_INTERNAL_INCLUDE
#include "accrete/array/counter.hpp"
#include "accrete/array/dist_array.hpp"
#include "accrete/matrix/convergent_matrix.hpp"
#include "accrete/matrix/linalg.hpp"
#include "accrete/sparse/sparse_matrix.hpp"
#include "hessian_workload.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using namespace accrete;

namespace {

// A 2D block accepted from Python: C- or Fortran-contiguous, never converted.
template <class T>
using block_in = nb::ndarray<const T, nb::ndim<2>, nb::device::cpu>;
template <class T>
using block_out = nb::ndarray<T, nb::ndim<2>, nb::device::cpu>;
template <class T>
using vec_in = nb::ndarray<const T, nb::ndim<1>, nb::device::cpu>;

// Leading dimension and layout of a contiguous 2D array (strides in elements).
template <class A>
std::pair<std::int64_t, matrix_layout> layout_of(const A& a, const char* what) {
  const std::int64_t r = std::int64_t(a.shape(0)), c = std::int64_t(a.shape(1));
  const std::int64_t s0 = a.stride(0), s1 = a.stride(1);
  if ((s0 == 1 || r <= 1) && (s1 == r || c <= 1)) return {std::max<std::int64_t>(r, 1), matrix_layout::col_major};
  if ((s1 == 1 || c <= 1) && (s0 == c || r <= 1)) return {std::max<std::int64_t>(c, 1), matrix_layout::row_major};
  throw nb::type_error((std::string(what) + ": the array is not contiguous (C or Fortran order required; "
                        "numpy.ascontiguousarray makes a copy)")
                           .c_str());
}

// Indices arrive as int32 or int64; int64 is used in place.
struct indices {
  std::vector<std::int64_t> copy;
  std::span<const std::int64_t> span;
};
indices to_indices(nb::handle h, const char* what) {
  indices out;
  vec_in<std::int64_t> a64;
  if (nb::try_cast(h, a64, false)) {
    if (a64.stride(0) != 1 && a64.shape(0) > 1)
      throw nb::type_error((std::string(what) + ": the index array is not contiguous").c_str());
    out.span = {a64.data(), a64.shape(0)};
    return out;
  }
  vec_in<std::int32_t> a32;
  if (nb::try_cast(h, a32, false)) {
    if (a32.stride(0) != 1 && a32.shape(0) > 1)
      throw nb::type_error((std::string(what) + ": the index array is not contiguous").c_str());
    out.copy.assign(a32.data(), a32.data() + a32.shape(0));
    out.span = out.copy;
    return out;
  }
  throw nb::type_error((std::string(what) + ": expected a 1-D numpy array of int32 or int64").c_str());
}

// A patch outside the array or inverted. The library's check names it
// before it looks at any buffer, so the callers then make the call with no
// buffer, which throws that message.
template <class A>
bool bad_patch(const A& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  return r0 < 0 || r1 < r0 || r1 > a.rows() || c0 < 0 || c1 < c0 || c1 > a.cols();
}

// The global indices of a local part's rows and columns.
template <class X>
std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> local_indices(const X& x) {
  std::vector<std::int64_t> rows(std::size_t(x.local_rows())), cols(std::size_t(x.local_cols()));
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = x.global_row(std::int64_t(i));
  for (std::size_t j = 0; j < cols.size(); ++j) cols[j] = x.global_col(std::int64_t(j));
  return {std::move(rows), std::move(cols)};
}

// ld and layout of a buffer for the patch [r0, r1) x [c0, c1); its shape must be the patch's.
template <class X>
std::pair<std::int64_t, matrix_layout> patch_buffer(const X& x, std::int64_t r0, std::int64_t r1, std::int64_t c0,
                                                    std::int64_t c1, const char* what) {
  const auto ll = layout_of(x, what);
  if (std::int64_t(x.shape(0)) != r1 - r0 || std::int64_t(x.shape(1)) != c1 - c0)
    throw std::invalid_argument(std::string(what) + ": the array is " + std::to_string(x.shape(0)) + " x " +
                                std::to_string(x.shape(1)) + ", the patch " + std::to_string(r1 - r0) + " x " +
                                std::to_string(c1 - c0));
  return ll;
}

template <class T>
nb::ndarray<nb::numpy, T, nb::ndim<2>> view_of(T* p, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                                               nb::handle owner) {
  const std::size_t shape[2] = {std::size_t(rows), std::size_t(cols)};
  const std::int64_t strides[2] = {1, ld};
  return nb::ndarray<nb::numpy, T, nb::ndim<2>>(p, 2, shape, owner, strides);
}

template <class T>
nb::ndarray<nb::numpy, T, nb::ndim<2>> new_fortran(std::int64_t rows, std::int64_t cols) {
  auto* data = new T[std::size_t(std::max<std::int64_t>(rows * cols, 1))]();
  nb::capsule owner(data, [](void* p) noexcept { delete[] static_cast<T*>(p); });
  return view_of(data, rows, cols, std::max<std::int64_t>(rows, 1), owner);
}

// The options ConvergentMatrix and SparseMatrix share, by name.
merge_op parse_merge(const char* cls, const std::string& merge) {
  if (merge == "sum") return merge_op::sum;
  if (merge == "max") return merge_op::max;
  if (merge == "min") return merge_op::min;
  throw std::invalid_argument(std::string(cls) + ": merge '" + merge + "' is not 'sum', 'max' or 'min'");
}
update_strategy parse_strategy(const char* cls, const std::string& strategy) {
  if (strategy == "packets") return update_strategy::packets;
  if (strategy == "alltoall") return update_strategy::alltoall;
  throw std::invalid_argument(std::string(cls) + ": strategy '" + strategy + "' is neither 'packets' nor 'alltoall'");
}

// An update's block, rows and cols from Python: the block's ld and layout,
// the indices, and the shapes checked against each other.
template <class T>
struct update_args {
  std::int64_t ld;
  matrix_layout lay;
  indices r, c;
  update_args(const block_in<T>& block, nb::handle rows, nb::handle cols, const char* what)
      : r(to_indices(rows, (std::string(what) + " rows").c_str())),
        c(to_indices(cols, (std::string(what) + " cols").c_str())) {
    std::tie(ld, lay) = layout_of(block, what);
    if (std::size_t(block.shape(0)) != r.span.size() || std::size_t(block.shape(1)) != c.span.size())
      throw std::invalid_argument(std::string(what) + ": the block is " + std::to_string(block.shape(0)) + " x " +
                                  std::to_string(block.shape(1)) + " but there are " + std::to_string(r.span.size()) +
                                  " rows and " + std::to_string(c.span.size()) + " columns");
  }
};

nb::dict stats_dict(const assembly_stats& s) {
  nb::dict d;
  d["updates"] = s.updates;
  d["elements"] = s.elements;
  d["direct_packets"] = s.direct_packets;
  d["messages_sent"] = s.messages_sent;
  d["packets_received"] = s.packets_received;
  d["bytes_sent"] = s.bytes_sent;
  d["peak_buffered"] = s.peak_buffered;
  d["peak_reserved"] = s.peak_reserved;
  d["t_bin"] = s.t_bin;
  d["t_move"] = s.t_move;
  d["t_apply"] = s.t_apply;
  d["t_wait"] = s.t_wait;
  return d;
}

template <class T>
nb::ndarray<nb::numpy, T, nb::ndim<1>> vector_view(T* p, std::size_t n, nb::handle owner) {
  const std::size_t shape[1] = {n};
  return nb::ndarray<nb::numpy, T, nb::ndim<1>>(p, 1, shape, owner);
}

// ---- convergent_matrix ----------------------------------------------------------------
template <class T>
void bind_matrix(nb::module_& m, const char* name) {
  using M = convergent_matrix<T>;
  nb::class_<M>(m, name)
      .def(
          "__init__",
          [](M* self, std::int64_t rows, std::int64_t cols, const process_grid& g, std::int64_t mb, std::int64_t nb_,
             const std::string& strategy, std::size_t buffer_cap, bool reproducible, const std::string& merge,
             bool atomic_updates) {
            convergent_matrix_options o;
            detail::construct_collectively(
                "ConvergentMatrix",
                [&] {
                  o.reproducible = reproducible;
                  o.atomic_updates = atomic_updates;
                  o.merge = parse_merge("ConvergentMatrix", merge);
                  o.strategy = parse_strategy("ConvergentMatrix", strategy);
                  o.buffer_cap = buffer_cap;
                },
                [&] { new (self) M(rows, cols, g, mb, nb_, o); });
          },
          "m"_a, "n"_a, "grid"_a, "mb"_a, "nb"_a, "strategy"_a, "buffer_cap"_a, "reproducible"_a, "merge"_a,
          "atomic_updates"_a)
      .def_prop_ro("shape", [](const M& a) { return std::make_tuple(a.rows(), a.cols()); })
      .def_prop_ro("grid", [](const M& a) { return std::make_tuple(a.grid().rows(), a.grid().cols()); })
      .def(
          "update",
          [](M& a, block_in<T> block, nb::handle rows, nb::handle cols) {
            const update_args<T> u(block, rows, cols, "update");
            nb::gil_scoped_release unlocked;  // other Python threads may update meanwhile
            a.update(block.data(), u.ld, u.r.span, u.c.span, u.lay);
          },
          "block"_a.noconvert(), "rows"_a, "cols"_a)
      .def(
          "update_symmetric",
          [](M& a, block_in<T> block, nb::handle ix) {
            const auto [ld, lay] = layout_of(block, "update_symmetric");
            indices i = to_indices(ix, "update_symmetric ix");
            if (std::size_t(block.shape(0)) != i.span.size() || std::size_t(block.shape(1)) != i.span.size())
              throw std::invalid_argument("update_symmetric: the block is " + std::to_string(block.shape(0)) +
                                          " x " + std::to_string(block.shape(1)) + " but there are " +
                                          std::to_string(i.span.size()) + " indices");
            nb::gil_scoped_release unlocked;
            a.update_symmetric(block.data(), ld, i.span, lay);
          },
          "block"_a.noconvert(), "ix"_a)
      .def("commit", [](M& a) {
        nb::gil_scoped_release unlocked;  // callbacks never call into Python
        a.commit();
      })
      .def("reopen", &M::reopen)
      .def("reset", &M::reset)
      .def("fill_lower", &M::fill_lower)
      .def("symmetrize", &M::symmetrize)
      .def("get", &M::get, "i"_a, "j"_a)
      .def("snapshot_local",
           [](const M& a) {
             // lld x local columns, as stored (rows past local_rows are padding).
             auto out = new_fortran<T>(a.lld(), a.local_cols());
             {
               nb::gil_scoped_release unlocked;
               a.snapshot_local(std::span<T>(out.data(), std::size_t(a.lld() * a.local_cols())));
             }
             return out;
           })
      .def_prop_ro("local",
                   [](nb::handle self) {
                     M& a = nb::cast<M&>(self);
                     return view_of<T>(a.local(), a.local_rows(), a.local_cols(), a.lld(), self);
                   })
      .def_prop_ro("lld", &M::lld)
      .def("local_indices", &local_indices<M>)
      .def("descriptor", &M::descriptor)
      .def("save", &M::save, "path"_a)
      .def("load", &M::load, "path"_a)
      .def("stats", [](const M& a) { return stats_dict(a.stats()); })
      .def(
          "to_numpy",
          [](const M& a, int root) {
            // Collective: every part goes to root, which places each element
            // by the block-cyclic map. Point-to-point in pieces of at most
            // 1 GiB, so no count or displacement is cut to MPI's int (a
            // gather's displacements would be, past 2 GiB of matrix); root
            // knows every part's size from the layout.
            const MPI_Comm comm = world().mpi_comm();
            const int P = rank_n(), me = rank_me();
            std::exception_ptr bad;
            if (root < 0 || root >= P)
              bad = std::make_exception_ptr(
                  std::out_of_range("to_numpy: root " + std::to_string(root) + " is outside [0, " +
                                    std::to_string(P) + ")"));
            const detail::collective_arg args[] = {{"root", root}};
            detail::agree("ConvergentMatrix.to_numpy", bad, args);
            constexpr int tag = 0x5ffe;  // below the tags broadcasts reserve (collectives.hpp)
            constexpr std::size_t piece = std::size_t{1} << 30;
            auto each_piece = [&](std::size_t bytes, auto&& f) {
              for (std::size_t off = 0; off < bytes; off += piece) f(off, int(std::min(piece, bytes - off)));
            };
            const block_cyclic& L = a.layout();
            if (me != root) {
              std::vector<T> mine(static_cast<std::size_t>(a.local_rows() * a.local_cols()));
              for (std::int64_t j = 0; j < a.local_cols(); ++j)
                for (std::int64_t i = 0; i < a.local_rows(); ++i)
                  mine[std::size_t(i + j * a.local_rows())] = a.local()[i + j * a.lld()];
              auto* bytes = reinterpret_cast<const std::byte*>(mine.data());
              each_piece(mine.size() * sizeof(T), [&](std::size_t off, int n) {
                MPI_Send(bytes + off, n, MPI_BYTE, root, tag, comm);
              });
              return nb::object(nb::none());
            }
            auto out = new_fortran<T>(a.rows(), a.cols());
            std::vector<T> part;
            for (int p = 0; p < P; ++p) {
              const grid_coords rc = a.grid().coords_of(p);
              const std::int64_t lr = L.local_rows(rc.row), lc = L.local_cols(rc.col);
              const T* src = nullptr;
              std::int64_t ld = lr;
              if (p == me) {
                src = a.local();
                ld = a.lld();
              } else {
                part.resize(static_cast<std::size_t>(lr * lc));
                auto* bytes = reinterpret_cast<std::byte*>(part.data());
                each_piece(part.size() * sizeof(T), [&](std::size_t off, int n) {
                  MPI_Recv(bytes + off, n, MPI_BYTE, p, tag, comm, MPI_STATUS_IGNORE);
                });
                src = part.data();
              }
              for (std::int64_t j = 0; j < lc; ++j)
                for (std::int64_t i = 0; i < lr; ++i)
                  out.data()[L.global_row(rc.row, i) + L.global_col(rc.col, j) * a.rows()] = src[i + j * ld];
            }
            return nb::cast(out);
          },
          "root"_a = 0);
}

// ---- sparse_matrix ----------------------------------------------------------------------
template <class T>
void bind_sparse(nb::module_& m, const char* name) {
  using S = sparse_matrix<T>;
  nb::class_<S>(m, name)
      .def(
          "__init__",
          [](S* self, std::int64_t local_rows, std::int64_t local_cols, const std::string& strategy,
             std::size_t buffer_cap, bool reproducible, const std::string& merge, bool growing_pattern,
             bool cache_slots) {
            sparse_matrix_options o;
            detail::construct_collectively(
                "SparseMatrix",
                [&] {
                  o.strategy = parse_strategy("SparseMatrix", strategy);
                  o.merge = parse_merge("SparseMatrix", merge);
                  o.buffer_cap = buffer_cap;
                  o.reproducible = reproducible;
                  o.growing_pattern = growing_pattern;
                  o.cache_slots = cache_slots;
                },
                [&] { new (self) S(local_rows, local_cols, o); });
          },
          "local_rows"_a, "local_cols"_a, "strategy"_a, "buffer_cap"_a, "reproducible"_a, "merge"_a,
          "growing_pattern"_a, "cache_slots"_a)
      .def_prop_ro("shape", [](const S& a) { return std::make_tuple(a.rows(), a.cols()); })
      .def_prop_ro("row_range", [](const S& a) { return std::make_tuple(a.row_begin(), a.row_end()); })
      .def_prop_ro("col_range", [](const S& a) { return std::make_tuple(a.col_begin(), a.col_end()); })
      .def(
          "update",
          [](S& a, block_in<T> block, nb::handle rows, nb::handle cols) {
            const update_args<T> u(block, rows, cols, "update");
            nb::gil_scoped_release unlocked;
            a.update(block.data(), u.ld, u.r.span, u.c.span, u.lay);
          },
          "block"_a.noconvert(), "rows"_a, "cols"_a)
      .def("commit",
           [](S& a) {
             nb::gil_scoped_release unlocked;
             a.commit();
           })
      .def("reopen", &S::reopen)
      .def("reset", &S::reset)
      .def_prop_ro("round", &S::round)
      .def_prop_ro("pattern_frozen", &S::pattern_frozen)
      .def_prop_ro("local_nnz", &S::local_nnz)
      .def("get", &S::get, "i"_a, "j"_a)
      .def(
          "block",
          [](nb::handle self, bool offdiag) {
            // Views over the matrix's arrays, kept alive by it (valid until
            // the next commit or reset: the Python class says so); the
            // index arrays read-only.
            S& a = nb::cast<S&>(self);
            const csr_block<T> b = offdiag ? a.offdiag() : a.diag();
            return std::make_tuple(
                vector_view(b.row_ptr.data(), b.row_ptr.size(), self), vector_view(b.col.data(), b.col.size(), self),
                vector_view(b.value.data(), b.value.size(), self));
          },
          "offdiag"_a)
      .def("col_map",
           [](nb::handle self) {
             S& a = nb::cast<S&>(self);
             const auto map = a.col_map();
             return vector_view(map.data(), map.size(), self);
           })
      .def("stats", [](const S& a) { return stats_dict(a.stats()); });
}

// ---- dist_array -----------------------------------------------------------------------
template <class T>
void bind_array(nb::module_& m, const char* name) {
  using A = dist_array<T>;
  nb::class_<A>(m, name)
      .def(
          "__init__",
          [](A* self, const std::string& kind, std::int64_t rows, std::int64_t cols, int pr, int pc, std::int64_t mb,
             std::int64_t nb_, std::vector<std::int64_t> row_bounds, std::vector<std::int64_t> col_bounds) {
            std::optional<distribution> d;
            detail::construct_collectively(
                "DistArray",
                [&] {
                  if ((pr == 0) != (pc == 0))
                    throw std::invalid_argument("DistArray: grid (" + std::to_string(pr) + ", " +
                                                std::to_string(pc) + ") must give both dimensions or neither");
                  if (pr == 0) {
                    const process_grid g(world().mpi_comm());
                    pr = g.rows(), pc = g.cols();
                  }
                  if (kind == "block")
                    d = distribution::block(rows, cols, pr, pc);
                  else if (kind == "block_cyclic")
                    d = distribution::block_cyclic(block_cyclic(rows, cols, mb, nb_, pr, pc));
                  else if (kind == "element_cyclic")
                    d = distribution::element_cyclic(rows, cols, pr, pc);
                  else if (kind == "irregular")
                    d = distribution::irregular(std::move(row_bounds), std::move(col_bounds));
                  else
                    throw std::invalid_argument("DistArray: distribution '" + kind +
                                                "' is not block, irregular, block_cyclic or element_cyclic");
                },
                [&] { new (self) A(*d); });
          },
          "kind"_a, "rows"_a, "cols"_a, "pr"_a, "pc"_a, "mb"_a, "nb"_a, "row_bounds"_a, "col_bounds"_a)
      .def_prop_ro("shape", [](const A& a) { return std::make_tuple(a.rows(), a.cols()); })
      .def("locate", &A::locate, "i"_a, "j"_a)
      .def(
          "get",
          [](const A& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
            // Checked before the allocation, so a bad patch allocates nothing.
            if (bad_patch(a, r0, r1, c0, c1)) a.get_blocking({r0, r1, c0, c1}, nullptr, 1);  // throws
            auto out = new_fortran<T>(r1 - r0, c1 - c0);
            {
              nb::gil_scoped_release unlocked;
              a.get_blocking({r0, r1, c0, c1}, out.data(), std::max<std::int64_t>(r1 - r0, 1));
            }
            return out;
          },
          "r0"_a, "r1"_a, "c0"_a, "c1"_a)
      .def(
          "get_into",
          [](const A& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1, block_out<T> out) {
            if (bad_patch(a, r0, r1, c0, c1)) a.get_blocking({r0, r1, c0, c1}, nullptr, 1);  // throws
            const auto [ld, lay] = patch_buffer(out, r0, r1, c0, c1, "get");
            nb::gil_scoped_release unlocked;
            a.get_blocking({r0, r1, c0, c1}, out.data(), ld, lay);
          },
          "r0"_a, "r1"_a, "c0"_a, "c1"_a, "out"_a.noconvert())
      .def(
          "put",
          [](A& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1, block_in<T> x) {
            if (bad_patch(a, r0, r1, c0, c1)) a.put_blocking({r0, r1, c0, c1}, nullptr, 1);  // throws
            const auto [ld, lay] = patch_buffer(x, r0, r1, c0, c1, "put");
            nb::gil_scoped_release unlocked;
            a.put_blocking({r0, r1, c0, c1}, x.data(), ld, lay);
          },
          "r0"_a, "r1"_a, "c0"_a, "c1"_a, "x"_a.noconvert())
      .def(
          "acc",
          [](A& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1, block_in<T> x, T alpha) {
            if (bad_patch(a, r0, r1, c0, c1)) a.acc_blocking({r0, r1, c0, c1}, nullptr, 1);  // throws
            const auto [ld, lay] = patch_buffer(x, r0, r1, c0, c1, "acc");
            nb::gil_scoped_release unlocked;
            a.acc_blocking({r0, r1, c0, c1}, x.data(), ld, alpha, lay);
          },
          "r0"_a, "r1"_a, "c0"_a, "c1"_a, "x"_a.noconvert(), "alpha"_a)
      .def("flush", [](A& a) { a.flush(); })
      .def("flush_rank", [](A& a, int rank) { a.flush(rank); }, "rank"_a)
      .def("flush_local", &A::flush_local)
      .def("sync", &A::sync)
      .def("zero", &A::zero)
      .def("fill", &A::fill, "value"_a)
      .def("scale", &A::scale, "alpha"_a)
      .def("norm", &A::norm)
      .def("dot", &A::dot, "other"_a)
      .def("copy_from", &A::copy, "src"_a)
      .def("local_indices", &local_indices<A>)
      .def("access",
           [](nb::handle self) {
             A& a = nb::cast<A&>(self);
             T* p = a.access();
             return view_of<T>(p, a.local_rows(), a.local_cols(), a.lld(), self);
           })
      .def("release", &A::release)
      .def("release_update", &A::release_update)
      .def("save", &A::save, "path"_a)
      .def("load", &A::load, "path"_a);
}

template <class T>
void bind_linalg(nb::module_& la) {
  using M = convergent_matrix<T>;
  la.def("posv", [](M& A, M& B) {
    nb::gil_scoped_release unlocked;
    linalg::posv(A, B);
  });
  la.def("gesv", [](M& A, M& B) {
    nb::gil_scoped_release unlocked;
    linalg::gesv(A, B);
  });
  if constexpr (std::is_floating_point_v<T>)
    la.def("syevd", [](M& A, M& Z) {
      std::vector<T> w;
      {
        nb::gil_scoped_release unlocked;
        w = linalg::syevd(A, Z);
      }
      auto out = new_fortran<T>(std::int64_t(w.size()), 1);
      std::copy(w.begin(), w.end(), out.data());
      return out;
    });
  la.def("norm", [](char which, const M& A) { return linalg::norm(which, A); });
  la.def("add_to_diagonal", [](M& A, T alpha) { linalg::add_to_diagonal(A, alpha); });
  la.def("gemm", [](char ta, char tb, T alpha, const M& A, const M& B, T beta, M& C) {
    nb::gil_scoped_release unlocked;
    linalg::gemm(ta, tb, alpha, A, B, beta, C);
  });
}

}  // namespace

namespace {
// The C++ layer names its own calls ("accrete::dist_array::put: ...",
// "accrete::block_cyclic: ..."); a Python user made none of them, so the
// classes become the package's and any other C++ prefix becomes "accrete".
std::string in_python_words(std::string m) {
  static const std::pair<std::string_view, std::string_view> names[] = {
      {"accrete::convergent_matrix::", "ConvergentMatrix."}, {"accrete::convergent_matrix", "ConvergentMatrix"},
      {"accrete::dist_array::", "DistArray."},               {"accrete::dist_array", "DistArray"},
      {"accrete::distribution::", "DistArray: distribution "}, {"accrete::counter::", "Counter."},
      {"accrete::counter", "Counter"},                       {"accrete::linalg::", "accrete.linalg."},
      {"convergent_matrix::", "ConvergentMatrix."},          {"dist_array::", "DistArray."}};
  for (const auto& [cxx, py] : names)
    for (std::size_t at = m.find(cxx); at != std::string::npos; at = m.find(cxx, at + py.size()))
      m.replace(at, cxx.size(), py);
  if (m.starts_with("accrete::")) {
    const auto colon = m.find(": ");
    if (colon != std::string::npos && m.find(' ') > colon) m.replace(0, colon, "accrete");
  }
  return m;
}
}  // namespace

NB_MODULE(_accrete, m) {
  m.doc() = "accrete's C++ classes (use the accrete package, not this module)";
  m.attr("mpi_flavor") = ACCRETE_PY_MPI_FLAVOR;
  m.attr("__version__") = ACCRETE_PY_VERSION;

  // ValueError for bad values (indices, shapes, sizes), RuntimeError for the
  // rest; nanobind's defaults would make std::out_of_range an IndexError.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const std::out_of_range& e) {
      PyErr_SetString(PyExc_ValueError, in_python_words(e.what()).c_str());
    } catch (const std::invalid_argument& e) {
      PyErr_SetString(PyExc_ValueError, in_python_words(e.what()).c_str());
    } catch (const std::length_error& e) {
      PyErr_SetString(PyExc_ValueError, in_python_words(e.what()).c_str());
    } catch (const std::exception& e) {
      PyErr_SetString(PyExc_RuntimeError, in_python_words(e.what()).c_str());
    }
  });

  m.def("init", [] { accrete::init(); });
  m.def("finalize", [] { accrete::finalize(); });
  m.def("initialized", &accrete::initialized);
  m.def("rank_me", &accrete::rank_me);
  m.def("rank_n", &accrete::rank_n);
  m.def("barrier", [] {
    nb::gil_scoped_release unlocked;
    accrete::barrier();
  });
  m.def("world_comm_f", [] { return MPI_Comm_c2f(world().mpi_comm()); });
  // A process whose own checks failed before a collective constructor
  // (accrete/__init__.py) takes part in the constructor's agreement, so
  // that the others raise too instead of waiting; the caller then raises
  // its own error.
  m.def(
      "reject",
      [](const std::string& what, const std::string& message) {
        try {
          detail::agree(what.c_str(), std::make_exception_ptr(std::invalid_argument(message)),
                        std::span<const detail::collective_arg>());
        } catch (const std::invalid_argument&) {
        }
      },
      "what"_a, "message"_a);

  // Matrices built on one Grid share its BLACS context (linalg needs that).
  nb::class_<process_grid>(m, "Grid")
      .def(
          "__init__",
          [](process_grid* self, int pr, int pc) {
            if (pr == 0 && pc == 0)
              new (self) process_grid(world().mpi_comm());
            else
              new (self) process_grid(world().mpi_comm(), pr, pc);
          },
          "pr"_a, "pc"_a)
      .def_prop_ro("shape", [](const process_grid& g) { return std::make_tuple(g.rows(), g.cols()); });

  bind_matrix<float>(m, "ConvergentMatrixF32");
  bind_matrix<double>(m, "ConvergentMatrixF64");
  bind_matrix<std::complex<float>>(m, "ConvergentMatrixC64");
  bind_matrix<std::complex<double>>(m, "ConvergentMatrixC128");
  bind_sparse<float>(m, "SparseMatrixF32");
  bind_sparse<double>(m, "SparseMatrixF64");
  bind_sparse<std::complex<float>>(m, "SparseMatrixC64");
  bind_sparse<std::complex<double>>(m, "SparseMatrixC128");
  bind_array<float>(m, "DistArrayF32");
  bind_array<double>(m, "DistArrayF64");
  bind_array<std::complex<float>>(m, "DistArrayC64");
  bind_array<std::complex<double>>(m, "DistArrayC128");
  bind_array<std::int32_t>(m, "DistArrayI32");
  bind_array<std::int64_t>(m, "DistArrayI64");

  auto la = m.def_submodule("linalg", "ScaLAPACK on assembled matrices (accrete/matrix/linalg.hpp)");
  bind_linalg<float>(la);
  bind_linalg<double>(la);
  bind_linalg<std::complex<float>>(la);
  bind_linalg<std::complex<double>>(la);

  nb::class_<counter>(m, "Counter")
      .def(nb::init<std::int64_t>(), "initial"_a = 0)
      .def("fetch_add", &counter::fetch_add, "n"_a = 1)
      .def("reset", &counter::reset, "value"_a = 0);

  // The "hessian" benchmark workload (bench/common/hessian_workload.hpp), so
  // Python programs produce the very updates the C++ demo does.
  auto w = m.def_submodule("workload", "the hessian benchmark workload");
  nb::class_<bench::hessian::params>(w, "Params")
      .def_rw("N", &bench::hessian::params::N)
      .def_rw("Lr", &bench::hessian::params::Lr)
      .def_rw("Ll", &bench::hessian::params::Ll)
      .def_rw("U", &bench::hessian::params::U)
      .def_rw("k", &bench::hessian::params::k)
      .def_rw("seed", &bench::hessian::params::seed)
      .def_prop_ro("n", &bench::hessian::params::n)
      .def("validate", &bench::hessian::params::validate);
  w.def("preset", [](const std::string& name) { return bench::hessian::preset(name); }, "name"_a);
  w.def("grid_shape", &bench::hessian::grid_shape, "P"_a);
  w.def("expected_checksum", &bench::hessian::expected_checksum, "prm"_a, "P"_a);
  // Reuses its buffers like the C++ loop does: the returned arrays are views
  // that the next make() overwrites (no allocation per update).
  struct generator {
    bench::hessian::params prm;
    int p;
    bench::hessian::update up;
  };
  nb::class_<generator>(w, "Generator")
      .def(nb::init<bench::hessian::params, int>(), "prm"_a, "p"_a)
      .def(
          "make",
          [](nb::handle self, std::int64_t u) {
            generator& g = nb::cast<generator&>(self);
            bench::hessian::make_update(g.prm, g.p, u, g.up);
            const std::int64_t n = g.prm.n();
            const std::size_t nx[1] = {std::size_t(n)};
            return std::make_tuple(nb::ndarray<nb::numpy, std::int64_t, nb::ndim<1>>(g.up.ix.data(), 1, nx, self),
                                   view_of<float>(g.up.B.data(), n, n, n, self));
          },
          "u"_a);
  w.def(
      "make_update",
      [](const bench::hessian::params& prm, int p, std::int64_t u) {
        bench::hessian::update up;
        bench::hessian::make_update(prm, p, u, up);
        const std::int64_t n = prm.n();
        auto* ix = new std::int64_t[std::size_t(n)];
        std::copy(up.ix.begin(), up.ix.end(), ix);
        nb::capsule ix_owner(ix, [](void* q) noexcept { delete[] static_cast<std::int64_t*>(q); });
        auto* B = new std::vector<float>(std::move(up.B));
        nb::capsule b_owner(B, [](void* q) noexcept { delete static_cast<std::vector<float>*>(q); });
        const std::size_t nx[1] = {std::size_t(n)};
        return std::make_tuple(nb::ndarray<nb::numpy, std::int64_t, nb::ndim<1>>(ix, 1, nx, ix_owner),
                               view_of<float>(B->data(), n, n, n, b_owner));
      },
      "prm"_a, "p"_a, "u"_a);
}
