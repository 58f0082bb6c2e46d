#pragma once
/// \file
// dist_array<T>: a distributed 2D array with Global Arrays semantics --
// one-sided put, get and accumulate on patches of any shape, completed
// without the owner's attention (after Elemental's RMAInterface / EL::DA and
// GA's NGA_Put/Get/Acc).
// Lets this header include accrete/detail/ headers (see detail/internal.hpp).
#ifndef ACCRETE_PUBLIC_INCLUDE
#define ACCRETE_PUBLIC_INCLUDE
#define ACCRETE_PUBLIC_INCLUDE_ARRAY_DIST_ARRAY
#endif

#include <array>
#include <complex>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>

#include "accrete/array/distribution.hpp"
#include "accrete/assembly.hpp"
#include "accrete/future.hpp"

#ifdef ACCRETE_PUBLIC_INCLUDE_ARRAY_DIST_ARRAY
#undef ACCRETE_PUBLIC_INCLUDE
#undef ACCRETE_PUBLIC_INCLUDE_ARRAY_DIST_ARRAY
#endif

namespace accrete {

namespace detail {
class array_core;  // src/array/array_core.hpp
template <class T>
inline constexpr bool array_element = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                                      std::is_same_v<T, std::complex<float>> ||
                                      std::is_same_v<T, std::complex<double>> || std::is_same_v<T, std::int32_t> ||
                                      std::is_same_v<T, std::int64_t>;
}  // namespace detail

/// A rows x cols array of T dealt over every process by a distribution
/// (accrete/array/distribution.hpp) whose grid has world-size parts; grid
/// part p lives on world rank p.
///
/// Semantics (the full reference is docs/semantics.md, "dist_array"):
///  - put/get/acc(patch, buf, ld) move the patch between `buf` (column-major
///    with leading dimension ld, or row-major) and the array, in pieces per
///    owner. They return a future that is ready when `buf` may be reused
///    (put, acc) or holds the data (get). Node-local owners are read and
///    written directly; remote ones by MPI RMA, whose local completion
///    (MPI_Win_flush_local) the call waits for. So today the future is
///    ready on return; code that waits on it stays correct if a later
///    version overlaps remote gets.
///  - Completion at the target: a put or acc is visible to other processes
///    after the origin's flush() (or flush(owner)) returns; a following
///    sync() (or barrier) orders it before their later reads. flush_local()
///    waits for local completion only (every pending buffer reusable).
///  - Ordering: operations are unordered until flushed, also from one
///    process (as MPI RMA and GA): a get overlapping an unflushed put of
///    the same process may see either value.
///  - Atomicity: acc adds each element atomically with respect to every
///    other acc and scatter_acc (from any process): concurrent accs never
///    lose a contribution. put and get are not atomic with respect to each
///    other or to acc.
///  - Progress: remote completion never needs the owner to call accrete
///    (passive-target RMA; with MPIs that need target progress, their own
///    asynchronous progress settings apply).
///  - Threads: call from the thread that drives the runtime.
///  - Errors: bad arguments throw (std::out_of_range for a patch or index
///    outside the array, std::invalid_argument for a null buffer or short
///    ld, accrete::error for release without access, use after destruction
///    or after finalize) before anything is transferred.
///  - Collectives (construction and the members under "collectives"
///    below, save, load): every process must pass the same arguments (the
///    distribution and element type; the same value, arrays, path). Each
///    starts by checking that, and if any process disagrees or rejected
///    its own arguments, every process throws (accrete::collective_misuse
///    naming the argument and the ranks) before anything is allocated or
///    changed. sync() is a barrier and compares nothing.
template <class T>
class dist_array {
  static_assert(detail::array_element<T>,
                "dist_array supports float, double, complex<float>, complex<double>, int32_t and int64_t");

 public:
  /// The element type.
  using value_type = T;

  /// Collective over the world: zero-filled storage for every part. Throws
  /// on every process if the grid does not have world-size parts, if the
  /// processes pass different distributions or element types, or if any
  /// process's part cannot be stored (at most 2^31-1 local columns).
  explicit dist_array(const distribution& d);
  /// Block distribution over a near-square grid of every process.
  dist_array(std::int64_t rows, std::int64_t cols);
  /// Collective (a barrier: peers may still be reading).
  ~dist_array();
  dist_array(const dist_array&) = delete;
  dist_array& operator=(const dist_array&) = delete;

  /// The distribution the array was made with.
  const distribution& dist() const noexcept;
  /// Whether the array can be used: the runtime it was made in is up (not
  /// finalized, and not replaced by a later init()). Every member that
  /// touches data or communicates throws accrete::not_initialized otherwise;
  /// the shape queries below keep answering.
  bool usable() const noexcept;
  /// Global rows.
  std::int64_t rows() const noexcept { return dist().rows(); }
  /// Global columns.
  std::int64_t cols() const noexcept { return dist().cols(); }
  /// World rank owning element (i, j).
  int locate(std::int64_t i, std::int64_t j) const { return dist().locate(i, j); }
  /// Rows of this process's part.
  std::int64_t local_rows() const noexcept;
  /// Columns of this process's part.
  std::int64_t local_cols() const noexcept;
  /// Leading dimension of this process's part (max(1, local_rows())).
  std::int64_t lld() const noexcept;
  /// The global indices of this process's part: element (li, lj) of
  /// access() (at li + lj * lld()) is A(global_row(li), global_col(lj)).
  /// Throws std::out_of_range unless 0 <= li < local_rows() (lj: columns).
  /// Non-collective, no communication.
  ///@{
  std::int64_t global_row(std::int64_t li) const;
  std::int64_t global_col(std::int64_t lj) const;
  ///@}

  // ---- one-sided patch operations --------------------------------------------------
  /// A[p] = buf (put) or buf = A[p] (get), buf column-major with leading
  /// dimension ld (or row-major). The patch is checked first (bounds, then
  /// the buffer): nothing moves on an error. The future is ready when buf
  /// may be reused (put) or holds the data (get); a put is visible to
  /// others after flush() and a barrier, or sync().
  ///@{
  future<> put(const patch& p, const T* buf, std::int64_t ld, matrix_layout lay = matrix_layout::col_major);
  future<> get(const patch& p, T* buf, std::int64_t ld, matrix_layout lay = matrix_layout::col_major) const;
  ///@}
  /// A[p] += alpha * buf.
  future<> acc(const patch& p, const T* buf, std::int64_t ld, T alpha = T(1),
               matrix_layout lay = matrix_layout::col_major);
  /// Blocking forms: return once the future would be ready.
  ///@{
  void put_blocking(const patch& p, const T* buf, std::int64_t ld, matrix_layout lay = matrix_layout::col_major) {
    put(p, buf, ld, lay).wait();
  }
  void get_blocking(const patch& p, T* buf, std::int64_t ld, matrix_layout lay = matrix_layout::col_major) const {
    get(p, buf, ld, lay).wait();
  }
  void acc_blocking(const patch& p, const T* buf, std::int64_t ld, T alpha = T(1),
                    matrix_layout lay = matrix_layout::col_major) {
    acc(p, buf, ld, alpha, lay).wait();
  }
  ///@}

  /// Remote completion of every put/acc/scatter this process issued (to
  /// `rank`): visible to everyone when it returns.
  ///@{
  void flush();
  void flush(int rank);
  ///@}
  /// Local completion: every buffer of this process's pending operations
  /// may be reused (or holds its data).
  void flush_local();

  // ---- element lists ---------------------------------------------------------------
  /// out[k] = A(rows[k], cols[k]). Blocking (data arrived).
  void gather(std::span<const std::int64_t> rows, std::span<const std::int64_t> cols, T* out) const;
  /// A(rows[k], cols[k]) = vals[k]; with repeated indices the last wins.
  /// Locally complete on return; remote completion by flush().
  void scatter(std::span<const std::int64_t> rows, std::span<const std::int64_t> cols, const T* vals);
  /// A(rows[k], cols[k]) += alpha * vals[k]; repeated indices add. Atomic
  /// per element like acc. Locally complete on return.
  void scatter_acc(std::span<const std::int64_t> rows, std::span<const std::int64_t> cols, const T* vals,
                   T alpha = T(1));

  // ---- this process's part -----------------------------------------------------------
  /// Zero-copy: this process's part, column-major with leading dimension
  /// lld(). Remote operations may still change it; call after sync() for
  /// stable values. Pair with release() (read only) or release_update().
  T* access();
  /// Ends access() without writes to the part.
  void release();
  /// Like release(); the caller wrote to the part, so later remote reads
  /// after the next sync() see the writes.
  void release_update();

  // ---- collectives (every process calls them, in the same order) --------------------
  /// Completes every outstanding operation everywhere (GA_Sync): a barrier
  /// after each process's flush().
  void sync();
  /// Every element becomes 0.
  void zero();
  /// Every element becomes value.
  void fill(T value);
  /// Every element is multiplied by alpha.
  void scale(T alpha);
  /// this = alpha * a + beta * b; a and b must have this distribution (they
  /// may be *this).
  void add(T alpha, const dist_array& a, T beta, const dist_array& b);
  /// this = src (same distribution).
  void copy(const dist_array& src);
  /// Sum over all elements of this(i, j) * other(i, j) (no conjugation, as
  /// GA's dot); same distribution.
  T dot(const dist_array& other) const;
  /// Frobenius norm.
  double norm() const;
  /// dst = this^T (dst is cols() x rows(), any distribution; not *this).
  /// Complex elements are not conjugated.
  void transpose_into(dist_array& dst) const;
  /// this = (this + this^T) / 2 (GA_Symmetrize); square arrays only. For
  /// integer types the division truncates toward zero.
  void symmetrize();

  // ---- files and ScaLAPACK -------------------------------------------------------------
  /// Collective MPI-IO in convergent_matrix's file format (the whole array
  /// column-major, raw native elements, no header; accrete/matrix/mpiio.hpp),
  /// so a file written by one distribution, a convergent_matrix or
  /// write_matrix loads into any other. Completes outstanding operations
  /// first. load() throws std::runtime_error naming both byte counts when
  /// the file does not hold rows() * cols() elements of T (wrong type or
  /// shape) and leaves the array unchanged.
  ///@{
  void save(const std::string& path) const;
  void load(const std::string& path);
  ///@}
  /// ScaLAPACK descriptor {1, ctxt, m, n, mb, nb, rsrc, csrc, lld} of this
  /// process's part, for block-cyclic and element-cyclic distributions
  /// (ScaLAPACK routines then work on access() in place). The first call is
  /// collective (it creates the BLACS context of the world grid, freed with
  /// the array). Throws std::logic_error for block and irregular arrays.
  std::array<int, 9> descriptor() const;

 private:
  void combine(const char* what, T alpha, const dist_array& x, T beta, const dist_array& y);
  std::unique_ptr<detail::array_core> core_;
};

extern template class dist_array<float>;
extern template class dist_array<double>;
extern template class dist_array<std::complex<float>>;
extern template class dist_array<std::complex<double>>;
extern template class dist_array<std::int32_t>;
extern template class dist_array<std::int64_t>;

}  // namespace accrete
