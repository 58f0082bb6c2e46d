// dist_array<T>: the typed layer over array_core -- element kernels, the
// whole-array collectives, and the explicit instantiations.
#include "accrete/array/dist_array.hpp"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <optional>

#include "accrete/collectives.hpp"
#include "accrete/error.hpp"
#include "array/array_core.hpp"
#include "assembly/simd.hpp"

namespace accrete {
namespace detail {
namespace {

template <class T>
void copy_kernel(std::byte* dst, std::int64_t di, const std::byte* src, std::int64_t si, std::int64_t n,
                 const void* alpha) {
  if (!alpha && di == 1 && si == 1) {
    std::memcpy(dst, src, std::size_t(n) * sizeof(T));
    return;
  }
  T* d = reinterpret_cast<T*>(dst);
  const T* s = reinterpret_cast<const T*>(src);
  const T a = alpha ? *static_cast<const T*>(alpha) : T(1);
  for (std::int64_t k = 0; k < n; ++k) d[k * di] = a * s[k * si];
}

// Contiguous adds are the node-local acc: the assembly kernels' column add
// (src/assembly/simd.hpp: AVX2 where the CPU has it), one run per call.
template <class T>
void add_run(T* d, const T* s, std::int64_t n) {
  using R = real_t<T>;
  constexpr std::int64_t chunk = std::int64_t{1} << 29;  // a run of components is 32-bit
  const simd_isa isa = simd_level();
  for (std::int64_t k = 0; k < n; k += chunk) {
    const simd_run one{0, 0, std::int32_t(std::min(chunk, n - k))};
    add_runs(isa, reinterpret_cast<R*>(d + k), reinterpret_cast<const R*>(s + k), &one, 1, width<T>);
  }
}

template <class T>
void add_kernel(std::byte* dst, std::int64_t di, const std::byte* src, std::int64_t si, std::int64_t n,
                const void* alpha) {
  T* d = reinterpret_cast<T*>(dst);
  const T* s = reinterpret_cast<const T*>(src);
  if (!alpha && di == 1 && si == 1) {
    add_run(d, s, n);
    return;
  }
  const T a = alpha ? *static_cast<const T*>(alpha) : T(1);
  for (std::int64_t k = 0; k < n; ++k) d[k * di] += a * s[k * si];
}

template <class T>
const elem_ops& ops_of() {
  static const elem_ops ops{element_type_of<T>(), sizeof(T), &copy_kernel<T>, &add_kernel<T>};
  return ops;
}

// Visits every element of this process's part: f(offset of the element).
// A part without rows has no element, whatever its column count (an empty
// 0 x 2^40 array has 2^40 / P columns per part: not a loop to run).
template <class F>
void for_each_element(std::int64_t lld, std::int64_t lrows, std::int64_t lcols, F&& f) {
  if (lrows <= 0) return;
  for (std::int64_t j = 0; j < lcols; ++j)
    for (std::int64_t i = 0; i < lrows; ++i) f(j * lld + i);
}

}  // namespace
}  // namespace detail

namespace {
distribution default_block(std::int64_t rows, std::int64_t cols) {
  detail::require_initialized("accrete::dist_array");
  const int p = detail::world_size(), r = square_grid_rows(p);
  return distribution::block(rows, cols, r, p / r);
}
// Alpha for the core: null when it is 1 (no scaling pass, direct RMA).
template <class T>
const void* alpha_arg(const T& a) {
  return a == T(1) ? nullptr : &a;
}
}  // namespace

template <class T>
dist_array<T>::dist_array(const distribution& d) {
  detail::require_initialized("accrete::dist_array");
  core_ = std::make_unique<detail::array_core>(d, detail::ops_of<T>());
}

template <class T>
dist_array<T>::dist_array(std::int64_t rows, std::int64_t cols) {
  std::optional<distribution> d;
  try {
    d = default_block(rows, cols);
  } catch (...) {
    // The others wait in the constructor's agreement: fail there too.
    detail::agree("accrete::dist_array", std::current_exception());
  }
  core_ = std::make_unique<detail::array_core>(*d, detail::ops_of<T>());
}

template <class T>
dist_array<T>::~dist_array() = default;

template <class T>
const distribution& dist_array<T>::dist() const noexcept {
  return core_->dist();
}
template <class T>
bool dist_array<T>::usable() const noexcept {
  return core_->usable();
}
template <class T>
std::int64_t dist_array<T>::local_rows() const noexcept {
  return core_->local_rows();
}
template <class T>
std::int64_t dist_array<T>::local_cols() const noexcept {
  return core_->local_cols();
}
template <class T>
std::int64_t dist_array<T>::lld() const noexcept {
  return core_->lld();
}
template <class T>
std::int64_t dist_array<T>::global_row(std::int64_t li) const {
  return core_->global_index("global_row", true, li);
}
template <class T>
std::int64_t dist_array<T>::global_col(std::int64_t lj) const {
  return core_->global_index("global_col", false, lj);
}

template <class T>
future<> dist_array<T>::put(const patch& p, const T* buf, std::int64_t ld, matrix_layout lay) {
  return core_->transfer(detail::array_op::put, p, reinterpret_cast<std::byte*>(const_cast<T*>(buf)), ld, lay,
                         nullptr, "put");
}
template <class T>
future<> dist_array<T>::get(const patch& p, T* buf, std::int64_t ld, matrix_layout lay) const {
  return core_->transfer(detail::array_op::get, p, reinterpret_cast<std::byte*>(buf), ld, lay, nullptr, "get");
}
template <class T>
future<> dist_array<T>::acc(const patch& p, const T* buf, std::int64_t ld, T alpha, matrix_layout lay) {
  return core_->transfer(detail::array_op::acc, p, reinterpret_cast<std::byte*>(const_cast<T*>(buf)), ld, lay,
                         alpha_arg(alpha), "acc");
}

template <class T>
void dist_array<T>::flush() {
  core_->flush("flush");
}
template <class T>
void dist_array<T>::flush(int rank) {
  core_->flush(rank, "flush");
}
template <class T>
void dist_array<T>::flush_local() {
  core_->flush_local("flush_local");
}

template <class T>
void dist_array<T>::gather(std::span<const std::int64_t> rows, std::span<const std::int64_t> cols, T* out) const {
  core_->elements(detail::array_op::get, rows, cols, reinterpret_cast<std::byte*>(out), nullptr, "gather");
}
template <class T>
void dist_array<T>::scatter(std::span<const std::int64_t> rows, std::span<const std::int64_t> cols, const T* vals) {
  core_->elements(detail::array_op::put, rows, cols, reinterpret_cast<std::byte*>(const_cast<T*>(vals)), nullptr,
                  "scatter");
}
template <class T>
void dist_array<T>::scatter_acc(std::span<const std::int64_t> rows, std::span<const std::int64_t> cols,
                                const T* vals, T alpha) {
  core_->elements(detail::array_op::acc, rows, cols, reinterpret_cast<std::byte*>(const_cast<T*>(vals)),
                  alpha_arg(alpha), "scatter_acc");
}

template <class T>
T* dist_array<T>::access() {
  return reinterpret_cast<T*>(core_->access("access"));
}
template <class T>
void dist_array<T>::release() {
  core_->release(false, "release");
}
template <class T>
void dist_array<T>::release_update() {
  core_->release(true, "release_update");
}

template <class T>
void dist_array<T>::sync() {
  core_->sync("sync");
}

// The element-wise collectives complete every outstanding operation first
// and last (as GA's), so no remote operation races with the local pass.
template <class T>
void dist_array<T>::fill(T value) {
  core_->enter("fill", {detail::value_arg("value", value)});
  core_->sync("fill");
  T* a = reinterpret_cast<T*>(core_->local("fill"));
  detail::for_each_element(lld(), local_rows(), local_cols(), [&](std::int64_t e) { a[e] = value; });
  core_->sync("fill");
}
template <class T>
void dist_array<T>::zero() {
  fill(T(0));
}
template <class T>
void dist_array<T>::scale(T alpha) {
  core_->enter("scale", {detail::value_arg("alpha", alpha)});
  core_->sync("scale");
  T* a = reinterpret_cast<T*>(core_->local("scale"));
  detail::for_each_element(lld(), local_rows(), local_cols(), [&](std::int64_t e) { a[e] *= alpha; });
  core_->sync("scale");
}
template <class T>
void dist_array<T>::add(T alpha, const dist_array& x, T beta, const dist_array& y) {
  combine("add", alpha, x, beta, y);
}
template <class T>
void dist_array<T>::combine(const char* what, T alpha, const dist_array& x, T beta, const dist_array& y) {
  core_->enter(what,
               {detail::value_arg("alpha", alpha),
                detail::value_arg("beta", beta),
                {"first array", x.core_->id()},
                {"second array", y.core_->id()}},
               [&] {
                 core_->require_same(*x.core_, what);
                 core_->require_same(*y.core_, what);
               });
  core_->sync(what);
  T* a = reinterpret_cast<T*>(core_->local(what));
  const T* xa = reinterpret_cast<const T*>(x.core_->local(what));
  const T* ya = reinterpret_cast<const T*>(y.core_->local(what));
  detail::for_each_element(lld(), local_rows(), local_cols(),
                           [&](std::int64_t e) { a[e] = alpha * xa[e] + beta * ya[e]; });
  core_->sync(what);
}
template <class T>
void dist_array<T>::copy(const dist_array& src) {
  combine("copy", T(1), src, T(0), src);
}
template <class T>
T dist_array<T>::dot(const dist_array& other) const {
  core_->enter("dot", {{"other array", other.core_->id()}}, [&] { core_->require_same(*other.core_, "dot"); });
  core_->sync("dot");
  const T* a = reinterpret_cast<const T*>(core_->local("dot"));
  const T* b = reinterpret_cast<const T*>(other.core_->local("dot"));
  T s = T(0);
  detail::for_each_element(lld(), local_rows(), local_cols(), [&](std::int64_t e) { s += a[e] * b[e]; });
  detail::world_allreduce_sum(&s, 1, detail::element_type_of<T>(), "accrete::dist_array::dot");
  return s;
}
template <class T>
double dist_array<T>::norm() const {
  core_->enter("norm");
  core_->sync("norm");
  const T* a = reinterpret_cast<const T*>(core_->local("norm"));
  double s = 0;
  detail::for_each_element(lld(), local_rows(), local_cols(), [&](std::int64_t e) { s += double(std::norm(a[e])); });
  detail::world_allreduce_sum(&s, 1, detail::scalar_type::f64, "accrete::dist_array::norm");
  return std::sqrt(s);
}

template <class T>
void dist_array<T>::transpose_into(dist_array& dst) const {
  core_->enter("transpose_into", {{"dst", dst.core_->id()}}, [&] {
    if (&dst == this)
      throw std::invalid_argument("accrete::dist_array::transpose_into: dst is the source array (use symmetrize or a "
                                  "second array)");
    if (dst.rows() != cols() || dst.cols() != rows())
      throw std::invalid_argument("accrete::dist_array::transpose_into: dst is " + std::to_string(dst.rows()) +
                                  " x " + std::to_string(dst.cols()) + " but the transpose is " +
                                  std::to_string(cols()) + " x " + std::to_string(rows()));
  });
  core_->sync("transpose_into");
  dst.core_->sync("transpose_into");
  const T* a = reinterpret_cast<const T*>(core_->local("transpose_into"));
  const auto rr = core_->my_row_runs(), cr = core_->my_col_runs();
  const std::int64_t n_local = local_rows() * local_cols();
  if (n_local > 0 && n_local / std::int64_t(rr.size() * cr.size()) >= 16) {
    // Few large rectangles (block, irregular, block-cyclic): each is one
    // patch put, read row-major from the part -- that is the transpose.
    std::int64_t lc = 0;
    for (const index_run& c : cr) {
      std::int64_t lr = 0;
      for (const index_run& r : rr) {
        dst.put({c.start, c.start + c.length, r.start, r.start + r.length}, a + lc * lld() + lr, lld(),
                matrix_layout::row_major);
        lr += r.length;
      }
      lc += c.length;
    }
  } else if (n_local > 0) {
    // Many small rectangles (element-cyclic): one element list, which goes
    // as one operation per owner.
    std::vector<std::int64_t> ri, ci;
    std::vector<T> v;
    ri.reserve(std::size_t(n_local));
    ci.reserve(std::size_t(n_local));
    v.reserve(std::size_t(n_local));
    std::int64_t lc = 0;
    for (const index_run& c : cr)
      for (std::int64_t j = c.start; j < c.start + c.length; ++j, ++lc) {
        std::int64_t lr = 0;
        for (const index_run& r : rr)
          for (std::int64_t i = r.start; i < r.start + r.length; ++i, ++lr) {
            ri.push_back(j);
            ci.push_back(i);
            v.push_back(a[lc * lld() + lr]);
          }
      }
    dst.scatter(ri, ci, v.data());
  }
  dst.core_->sync("transpose_into");
}

template <class T>
void dist_array<T>::symmetrize() {
  core_->enter("symmetrize", {}, [&] {
    if (rows() != cols())
      throw std::invalid_argument("accrete::dist_array::symmetrize: the array is " + std::to_string(rows()) + " x " +
                                  std::to_string(cols()) + ", not square");
  });
  dist_array t(dist());
  transpose_into(t);
  T* a = reinterpret_cast<T*>(core_->local("symmetrize"));
  const T* b = reinterpret_cast<const T*>(t.core_->local("symmetrize"));
  detail::for_each_element(lld(), local_rows(), local_cols(), [&](std::int64_t e) { a[e] = (a[e] + b[e]) / T(2); });
  core_->sync("symmetrize");
}

template <class T>
void dist_array<T>::save(const std::string& path) const {
  core_->file(path, true, "save");
}
template <class T>
void dist_array<T>::load(const std::string& path) {
  core_->file(path, false, "load");
}
template <class T>
std::array<int, 9> dist_array<T>::descriptor() const {
  return core_->descriptor("descriptor");
}

template class dist_array<float>;
template class dist_array<double>;
template class dist_array<std::complex<float>>;
template class dist_array<std::complex<double>>;
template class dist_array<std::int32_t>;
template class dist_array<std::int64_t>;

}  // namespace accrete
