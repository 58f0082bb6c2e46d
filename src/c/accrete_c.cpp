// The C API (include/accrete/c/accrete.h) over the C++ classes. Every entry
// point runs its body inside guarded(), so no exception crosses into C: each
// becomes a status code and a per-thread message.
#include "accrete/c/accrete.h"

#include <complex>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>

#include "accrete/accrete.hpp"
#include "accrete/array/counter.hpp"
#include "accrete/array/dist_array.hpp"
#include "accrete/detail/backend.hpp"
#include "accrete/matrix/convergent_matrix.hpp"
#include "accrete/sparse/sparse_matrix.hpp"

using namespace accrete;

// Each handle holds its object in `obj`, so that on() serves both kinds.
struct accrete_matrix_s {
  std::variant<std::unique_ptr<convergent_matrix<float>>, std::unique_ptr<convergent_matrix<double>>,
               std::unique_ptr<convergent_matrix<std::complex<float>>>,
               std::unique_ptr<convergent_matrix<std::complex<double>>>>
      obj;
};

struct accrete_sparse_s {
  std::variant<std::unique_ptr<sparse_matrix<float>>, std::unique_ptr<sparse_matrix<double>>,
               std::unique_ptr<sparse_matrix<std::complex<float>>>, std::unique_ptr<sparse_matrix<std::complex<double>>>>
      obj;
};

struct accrete_array_s {
  std::variant<std::unique_ptr<dist_array<float>>, std::unique_ptr<dist_array<double>>,
               std::unique_ptr<dist_array<std::complex<float>>>, std::unique_ptr<dist_array<std::complex<double>>>,
               std::unique_ptr<dist_array<std::int32_t>>, std::unique_ptr<dist_array<std::int64_t>>>
      obj;
};

struct accrete_counter_s {
  counter c;
  explicit accrete_counter_s(std::int64_t v) : c(v) {}
};

namespace {

ACCRETE_THREAD_LOCAL std::string last_error;

accrete_status fail(accrete_status code, std::string msg) {
  last_error = std::move(msg);
  return code;
}

// The C++ layer's messages start with the C++ call or class
// ("accrete::dist_array::put: ...", "accrete::block_cyclic: ..."), which a
// C or Fortran user never made: the message names the C function instead.
std::string in_c_words(const char* fn, const char* what) {
  std::string_view m(what);
  const std::string_view f(fn);
  if (m.starts_with(f) && m.size() > f.size() && m[f.size()] == ':') return std::string(m);
  if (m.starts_with("accrete::")) {
    const auto colon = m.find(": ");
    if (colon != std::string_view::npos && m.substr(0, colon).find(' ') == std::string_view::npos)
      m.remove_prefix(colon + 2);
  } else if (m.starts_with("accrete: ")) {
    m.remove_prefix(9);
    // "dist_array::put called while the runtime is not initialized"
    const auto space = m.find(' ');
    if (space != std::string_view::npos && m.substr(0, space).find("::") != std::string_view::npos)
      m.remove_prefix(space + 1);
  }
  return std::string(fn) + ": " + std::string(m);
}

// `runtime_code` classifies std::runtime_error, which the file functions
// throw for I/O failures and everything else for MPI failures.
template <class F>
accrete_status guarded(const char* fn, F&& body, accrete_status runtime_code = ACCRETE_ERR_RUNTIME) noexcept {
  try {
    body();
    return ACCRETE_SUCCESS;
  } catch (const segment_exhausted& e) {
    return fail(ACCRETE_ERR_NOMEM, in_c_words(fn, e.what()));
  } catch (const std::bad_alloc&) {
    return fail(ACCRETE_ERR_NOMEM, std::string(fn) + ": out of memory");
  } catch (const std::invalid_argument& e) {
    return fail(ACCRETE_ERR_ARG, in_c_words(fn, e.what()));
  } catch (const std::out_of_range& e) {
    return fail(ACCRETE_ERR_ARG, in_c_words(fn, e.what()));
  } catch (const std::length_error& e) {
    return fail(ACCRETE_ERR_ARG, in_c_words(fn, e.what()));
  } catch (const std::logic_error& e) {
    return fail(ACCRETE_ERR_UNSUPPORTED, in_c_words(fn, e.what()));
  } catch (const accrete::error& e) {
    return fail(ACCRETE_ERR_STATE, in_c_words(fn, e.what()));
  } catch (const std::runtime_error& e) {
    return fail(runtime_code, in_c_words(fn, e.what()));
  } catch (const std::exception& e) {
    return fail(ACCRETE_ERR_RUNTIME, in_c_words(fn, e.what()));
  } catch (...) {
    return fail(ACCRETE_ERR_RUNTIME, std::string(fn) + ": unknown exception");
  }
}

void require(bool ok, const char* fn, const std::string& what) {
  if (!ok) throw std::invalid_argument(std::string(fn) + ": " + what);
}

template <class H>
void require_handle(const H* h, const char* fn) {
  require(h != nullptr, fn, "null handle");
}

std::int64_t checked_count(std::int64_t n, const char* fn, const char* what) {
  require(n >= 0, fn, std::string(what) + " = " + std::to_string(n) + " is negative");
  return n;
}

std::span<const std::int64_t> index_span(const std::int64_t* p, std::int64_t n, const char* fn, const char* what) {
  checked_count(n, fn, what);
  require(p != nullptr || n == 0, fn, std::string("null ") + what + " for " + std::to_string(n) + " indices");
  return {p, static_cast<std::size_t>(n)};
}

matrix_layout to_layout(accrete_layout l, const char* fn) {
  require(l == ACCRETE_COL_MAJOR || l == ACCRETE_ROW_MAJOR, fn, "layout = " + std::to_string(int(l)) +
                                                                     " is neither ACCRETE_COL_MAJOR nor ACCRETE_ROW_MAJOR");
  return l == ACCRETE_COL_MAJOR ? matrix_layout::col_major : matrix_layout::row_major;
}

process_grid make_grid(int pr, int pc, const char* fn) {
  if (pr == 0 && pc == 0) return process_grid(world().mpi_comm());
  require(pr > 0 && pc > 0, fn, "grid " + std::to_string(pr) + " x " + std::to_string(pc) + " (use 0 x 0 for the default)");
  require(std::int64_t(pr) * pc == world().rank_n(), fn,
          "grid " + std::to_string(pr) + " x " + std::to_string(pc) + " has " + std::to_string(std::int64_t(pr) * pc) +
              " places, but there are " + std::to_string(world().rank_n()) + " processes");
  return process_grid(world().mpi_comm(), pr, pc);
}

// The handle's object belongs to the runtime that is up (the calls that
// need no communication check this explicitly).
template <class X>
void require_live(const X& x, const char* fn) {
  if (!x.usable())
    throw accrete::not_initialized(std::string(fn) + ": the array belongs to a runtime that has been finalized");
}

// Objects cannot be destroyed after finalize (their destructors are
// collective and use MPI), so free then only reports it.
template <class H>
accrete_status free_handle(H** h, const char* fn) {
  return guarded(fn, [&] {
    require(h != nullptr && *h != nullptr, fn, "null handle");
    if (!accrete::initialized()) {
      *h = nullptr;
      throw accrete::not_initialized(std::string(fn) + ": called after accrete_finalize (free objects before it)");
    }
    H* p = *h;
    *h = nullptr;
    delete p;
  });
}

// Element-type dispatch for dist_array: calls f(T{}) for the dtype.
template <class F>
void with_array_type(accrete_dtype t, const char* fn, F&& f) {
  switch (t) {
    case ACCRETE_FLOAT: return f(float{});
    case ACCRETE_DOUBLE: return f(double{});
    case ACCRETE_COMPLEX_FLOAT: return f(std::complex<float>{});
    case ACCRETE_COMPLEX_DOUBLE: return f(std::complex<double>{});
    case ACCRETE_INT32: return f(std::int32_t{});
    case ACCRETE_INT64: return f(std::int64_t{});
    default: break;
  }
  throw std::invalid_argument(std::string(fn) + ": dtype = " + std::to_string(int(t)) + " is not an accrete_dtype");
}

// Creates a dist_array collectively: `dist` builds the distribution from
// the C arguments (its checks are this process's own).
template <class Dist>
void make_array(accrete_array* out, accrete_dtype t, const char* fn, Dist&& dist) {
  std::optional<distribution> d;
  detail::construct_collectively(
      fn,
      [&] {
        require(out != nullptr, fn, "null output handle");
        *out = nullptr;
        with_array_type(t, fn, [](auto) {});
        d = dist();
      },
      [&] {
        auto h = std::make_unique<accrete_array_s>();
        with_array_type(t, fn, [&](auto zero) { h->obj = std::make_unique<dist_array<decltype(zero)>>(*d); });
        *out = h.release();
      });
}

// Runs f on the typed object behind a matrix or array handle.
template <class H, class F>
accrete_status on(H* h, const char* fn, F&& f, accrete_status runtime_code = ACCRETE_ERR_RUNTIME) {
  return guarded(
      fn,
      [&] {
        require_handle(h, fn);
        std::visit([&](auto& p) { f(*p); }, h->obj);
      },
      runtime_code);
}

// update() and get() of a matrix handle (dense or sparse).
template <class H>
accrete_status update_on(H* h, const char* fn, const void* block, int64_t ld, const int64_t* rows, int64_t nrows,
                         const int64_t* cols, int64_t ncols, accrete_layout layout) {
  return on(h, fn, [&](auto& M) {
    using T = typename std::remove_reference_t<decltype(M)>::value_type;
    M.update(static_cast<const T*>(block), ld, index_span(rows, nrows, fn, "rows"), index_span(cols, ncols, fn, "cols"),
             to_layout(layout, fn));
  });
}
template <class H>
accrete_status get_on(H* h, const char* fn, int64_t i, int64_t j, void* value) {
  return on(h, fn, [&](auto& M) {
    using T = typename std::remove_reference_t<decltype(M)>::value_type;
    require(value != nullptr, fn, "null output pointer");
    *static_cast<T*>(value) = M.get(i, j);
  });
}

template <class H>
accrete_status file_op(H* h, const char* fn, const char* path, bool save) {
  return on(
      h, fn,
      [&](auto& x) {
        require(path != nullptr, fn, "null path");
        if (save)
          x.save(path);
        else
          x.load(path);
      },
      ACCRETE_ERR_IO);
}

// The options a convergent_matrix and a sparse_matrix share, checked.
template <class C, class O>
void common_options(const C& o, O& opt, const char* fn) {
  require(o.strategy == ACCRETE_STRATEGY_PACKETS || o.strategy == ACCRETE_STRATEGY_ALLTOALL, fn,
          "strategy = " + std::to_string(o.strategy) + " is not an accrete_strategy");
  require(o.buffer_cap > 0, fn, "buffer_cap = " + std::to_string(o.buffer_cap));
  require(o.coalesce_bytes > 0, fn, "coalesce_bytes = " + std::to_string(o.coalesce_bytes));
  require(o.merge == ACCRETE_MERGE_SUM || o.merge == ACCRETE_MERGE_MAX || o.merge == ACCRETE_MERGE_MIN, fn,
          "merge = " + std::to_string(o.merge) + " is not an accrete_merge");
  opt.strategy = o.strategy == ACCRETE_STRATEGY_PACKETS ? update_strategy::packets : update_strategy::alltoall;
  opt.buffer_cap = static_cast<std::size_t>(o.buffer_cap);
  opt.coalesce_bytes = static_cast<std::size_t>(o.coalesce_bytes);
  opt.seed = o.seed;
  opt.reproducible = o.reproducible != 0;
  opt.merge = o.merge == ACCRETE_MERGE_SUM ? merge_op::sum : o.merge == ACCRETE_MERGE_MAX ? merge_op::max : merge_op::min;
}
template <class C, class O>
void report_common_options(C& o, const O& d) {
  o.strategy = d.strategy == update_strategy::packets ? ACCRETE_STRATEGY_PACKETS : ACCRETE_STRATEGY_ALLTOALL;
  o.buffer_cap = static_cast<std::int64_t>(d.buffer_cap);
  o.coalesce_bytes = static_cast<std::int64_t>(d.coalesce_bytes);
  o.seed = d.seed;
  o.reproducible = d.reproducible ? 1 : 0;
  o.merge = ACCRETE_MERGE_SUM;
}

void require_float_dtype(accrete_dtype dtype, const char* fn, const char* what) {
  require(dtype == ACCRETE_FLOAT || dtype == ACCRETE_DOUBLE || dtype == ACCRETE_COMPLEX_FLOAT ||
              dtype == ACCRETE_COMPLEX_DOUBLE,
          fn, "dtype = " + std::to_string(int(dtype)) + ": " + what + " holds a floating-point type");
}

// Makes a matrix of the dtype (one of the four floating-point types).
template <template <class> class M, class H, class... A>
void make_typed(H& h, accrete_dtype dtype, A&&... args) {
  if (dtype == ACCRETE_FLOAT)
    h.obj = std::make_unique<M<float>>(std::forward<A>(args)...);
  else if (dtype == ACCRETE_DOUBLE)
    h.obj = std::make_unique<M<double>>(std::forward<A>(args)...);
  else if (dtype == ACCRETE_COMPLEX_FLOAT)
    h.obj = std::make_unique<M<std::complex<float>>>(std::forward<A>(args)...);
  else
    h.obj = std::make_unique<M<std::complex<double>>>(std::forward<A>(args)...);
}

patch make_patch(std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) { return patch{r0, r1, c0, c1}; }

template <class P>
void set_if(P* out, P v) {
  if (out) *out = v;
}

// The outputs of accrete_matrix_local and accrete_array_access.
template <class X>
void report_part(const X& x, void* p, void** local, int64_t* lld, int64_t* local_rows, int64_t* local_cols) {
  set_if<void*>(local, p);
  set_if<int64_t>(lld, x.lld());
  set_if<int64_t>(local_rows, x.local_rows());
  set_if<int64_t>(local_cols, x.local_cols());
}

// The outputs of accrete_matrix_local_indices and accrete_array_local_indices.
template <class X>
void report_indices(const X& x, int64_t* rows, int64_t* cols) {
  if (rows)
    for (std::int64_t li = 0; li < x.local_rows(); ++li) rows[li] = x.global_row(li);
  if (cols)
    for (std::int64_t lj = 0; lj < x.local_cols(); ++lj) cols[lj] = x.global_col(lj);
}

}  // namespace

extern "C" {

const char* accrete_last_error(void) { return last_error.c_str(); }
accrete_status accrete_set_error(accrete_status code, const char* msg) { return fail(code, msg ? msg : ""); }

// ---- runtime ---------------------------------------------------------------------
accrete_status accrete_init(void) {
  return guarded("accrete_init", [] { accrete::init(); });
}
accrete_status accrete_finalize(void) {
  return guarded("accrete_finalize", [] {
    if (!accrete::initialized()) throw accrete::not_initialized("accrete_finalize: accrete is not initialized");
    accrete::finalize();
  });
}
int accrete_initialized(void) { return accrete::initialized() ? 1 : 0; }
accrete_status accrete_rank_me(int* rank) {
  return guarded("accrete_rank_me", [&] {
    require(rank != nullptr, "accrete_rank_me", "null output pointer");
    *rank = accrete::rank_me();
  });
}
accrete_status accrete_rank_n(int* size) {
  return guarded("accrete_rank_n", [&] {
    require(size != nullptr, "accrete_rank_n", "null output pointer");
    *size = accrete::rank_n();
  });
}
accrete_status accrete_barrier(void) {
  return guarded("accrete_barrier", [] { accrete::barrier(); });
}

// ---- convergent_matrix -----------------------------------------------------------
accrete_status accrete_matrix_default_options(accrete_matrix_options* o) {
  return guarded("accrete_matrix_default_options", [&] {
    require(o != nullptr, "accrete_matrix_default_options", "null options pointer");
    const convergent_matrix_options d;
    report_common_options(*o, d);
    o->lld = d.lld;
    o->atomic_updates = d.atomic_updates ? 1 : 0;
  });
}

accrete_status accrete_matrix_create(accrete_matrix* out, accrete_dtype dtype, int64_t m, int64_t n, int pr, int pc,
                                     int64_t mb, int64_t nb, const accrete_matrix_options* o) {
  static const char* fn = "accrete_matrix_create";
  return guarded(fn, [&] {
    convergent_matrix_options opt;
    std::optional<process_grid> grid;
    detail::construct_collectively(
        fn,
        [&] {
          require(out != nullptr, fn, "null output handle");
          *out = nullptr;
          if (o) {
            common_options(*o, opt, fn);
            opt.lld = o->lld;
            opt.atomic_updates = o->atomic_updates != 0;
          }
          require_float_dtype(dtype, fn, "a convergent_matrix");
          grid.emplace(make_grid(pr, pc, fn));
        },
        [&] {
          auto h = std::make_unique<accrete_matrix_s>();
          make_typed<convergent_matrix>(*h, dtype, m, n, *grid, mb, nb, opt);
          *out = h.release();
        });
  });
}

accrete_status accrete_matrix_free(accrete_matrix* a) { return free_handle(a, "accrete_matrix_free"); }

accrete_status accrete_matrix_update(accrete_matrix a, const void* block, int64_t ld, const int64_t* rows,
                                     int64_t nrows, const int64_t* cols, int64_t ncols, accrete_layout layout) {
  return update_on(a, "accrete_matrix_update", block, ld, rows, nrows, cols, ncols, layout);
}

accrete_status accrete_matrix_update_symmetric(accrete_matrix a, const void* block, int64_t ld, const int64_t* ix,
                                               int64_t n, accrete_layout layout) {
  static const char* fn = "accrete_matrix_update_symmetric";
  return on(a, fn, [&](auto& M) {
    using T = typename std::remove_reference_t<decltype(M)>::value_type;
    M.update_symmetric(static_cast<const T*>(block), ld, index_span(ix, n, fn, "ix"), to_layout(layout, fn));
  });
}

accrete_status accrete_matrix_commit(accrete_matrix a) {
  return on(a, "accrete_matrix_commit", [](auto& M) { M.commit(); });
}
accrete_status accrete_matrix_reopen(accrete_matrix a) {
  return on(a, "accrete_matrix_reopen", [](auto& M) { M.reopen(); });
}
accrete_status accrete_matrix_reset(accrete_matrix a) {
  return on(a, "accrete_matrix_reset", [](auto& M) { M.reset(); });
}
accrete_status accrete_matrix_fill_lower(accrete_matrix a) {
  return on(a, "accrete_matrix_fill_lower", [](auto& M) { M.fill_lower(); });
}
accrete_status accrete_matrix_symmetrize(accrete_matrix a) {
  return on(a, "accrete_matrix_symmetrize", [](auto& M) { M.symmetrize(); });
}

accrete_status accrete_matrix_local(accrete_matrix a, void** local, int64_t* lld, int64_t* local_rows,
                                    int64_t* local_cols) {
  return on(a, "accrete_matrix_local",
            [&](auto& M) { report_part(M, M.local(), local, lld, local_rows, local_cols); });
}

accrete_status accrete_matrix_local_indices(accrete_matrix a, int64_t* rows, int64_t* cols) {
  return on(a, "accrete_matrix_local_indices", [&](auto& M) {
    (void)M.local();  // throws once the matrix's runtime is gone
    report_indices(M, rows, cols);
  });
}

accrete_status accrete_matrix_get(accrete_matrix a, int64_t i, int64_t j, void* value) {
  return get_on(a, "accrete_matrix_get", i, j, value);
}

accrete_status accrete_matrix_snapshot_local(accrete_matrix a, void* dst, int64_t count) {
  static const char* fn = "accrete_matrix_snapshot_local";
  return on(a, fn, [&](auto& M) {
    using T = typename std::remove_reference_t<decltype(M)>::value_type;
    require(dst != nullptr, fn, "null destination");
    require(count >= 0, fn, "count = " + std::to_string(count));
    M.snapshot_local(std::span<T>(static_cast<T*>(dst), std::size_t(count)));
  });
}

accrete_status accrete_matrix_descriptor(accrete_matrix a, int desc[9]) {
  static const char* fn = "accrete_matrix_descriptor";
  return on(a, fn, [&](auto& M) {
    require(desc != nullptr, fn, "null descriptor array");
    const auto d = M.descriptor();
    std::memcpy(desc, d.data(), sizeof(int) * 9);
  });
}

accrete_status accrete_matrix_save(accrete_matrix a, const char* path) {
  return file_op(a, "accrete_matrix_save", path, true);
}
accrete_status accrete_matrix_load(accrete_matrix a, const char* path) {
  return file_op(a, "accrete_matrix_load", path, false);
}

// ---- sparse_matrix ---------------------------------------------------------------
accrete_status accrete_sparse_default_options(accrete_sparse_options* o) {
  return guarded("accrete_sparse_default_options", [&] {
    require(o != nullptr, "accrete_sparse_default_options", "null options pointer");
    const sparse_matrix_options d;
    report_common_options(*o, d);
    o->growing_pattern = d.growing_pattern ? 1 : 0;
    o->cache_slots = d.cache_slots ? 1 : 0;
  });
}

accrete_status accrete_sparse_create(accrete_sparse* out, accrete_dtype dtype, int64_t local_rows, int64_t local_cols,
                                     const accrete_sparse_options* o) {
  static const char* fn = "accrete_sparse_create";
  return guarded(fn, [&] {
    sparse_matrix_options opt;
    detail::construct_collectively(
        fn,
        [&] {
          require(out != nullptr, fn, "null output handle");
          *out = nullptr;
          if (o) {
            common_options(*o, opt, fn);
            opt.growing_pattern = o->growing_pattern != 0;
            opt.cache_slots = o->cache_slots != 0;
          }
          require_float_dtype(dtype, fn, "a sparse matrix");
        },
        [&] {
          auto h = std::make_unique<accrete_sparse_s>();
          make_typed<sparse_matrix>(*h, dtype, local_rows, local_cols, opt);
          *out = h.release();
        });
  });
}

accrete_status accrete_sparse_free(accrete_sparse* a) { return free_handle(a, "accrete_sparse_free"); }

accrete_status accrete_sparse_ranges(accrete_sparse a, int64_t* m, int64_t* n, int64_t* row_begin, int64_t* row_end,
                                     int64_t* col_begin, int64_t* col_end) {
  return on(a, "accrete_sparse_ranges", [&](auto& A) {
    set_if<int64_t>(m, A.rows());
    set_if<int64_t>(n, A.cols());
    set_if<int64_t>(row_begin, A.row_begin());
    set_if<int64_t>(row_end, A.row_end());
    set_if<int64_t>(col_begin, A.col_begin());
    set_if<int64_t>(col_end, A.col_end());
  });
}

accrete_status accrete_sparse_update(accrete_sparse a, const void* block, int64_t ld, const int64_t* rows,
                                     int64_t nrows, const int64_t* cols, int64_t ncols, accrete_layout layout) {
  return update_on(a, "accrete_sparse_update", block, ld, rows, nrows, cols, ncols, layout);
}

accrete_status accrete_sparse_commit(accrete_sparse a) {
  return on(a, "accrete_sparse_commit", [](auto& A) { A.commit(); });
}
accrete_status accrete_sparse_reopen(accrete_sparse a) {
  return on(a, "accrete_sparse_reopen", [](auto& A) { A.reopen(); });
}
accrete_status accrete_sparse_reset(accrete_sparse a) {
  return on(a, "accrete_sparse_reset", [](auto& A) { A.reset(); });
}

accrete_status accrete_sparse_block(accrete_sparse a, int offdiag, const int64_t** row_ptr, const int32_t** col,
                                    void** value, int64_t* nnz, const int64_t** col_map, int64_t* ncols_map) {
  static const char* fn = "accrete_sparse_block";
  return on(a, fn, [&](auto& A) {
    require(offdiag == 0 || offdiag == 1, fn,
            "offdiag = " + std::to_string(offdiag) + " (0: the diagonal block, 1: the off-diagonal block)");
    const auto b = offdiag ? A.offdiag() : A.diag();
    set_if<const int64_t*>(row_ptr, b.row_ptr.data());
    set_if<const int32_t*>(col, b.col.data());
    set_if<void*>(value, b.value.data());
    set_if<int64_t>(nnz, std::int64_t(b.value.size()));
    const auto map = A.col_map();
    set_if<const int64_t*>(col_map, map.data());
    set_if<int64_t>(ncols_map, std::int64_t(map.size()));
  });
}

accrete_status accrete_sparse_get(accrete_sparse a, int64_t i, int64_t j, void* value) {
  return get_on(a, "accrete_sparse_get", i, j, value);
}

// ---- dist_array ------------------------------------------------------------------
accrete_status accrete_array_create_block(accrete_array* out, accrete_dtype dtype, int64_t rows, int64_t cols,
                                          int prows, int pcols) {
  static const char* fn = "accrete_array_create_block";
  return guarded(fn, [&] {
    make_array(out, dtype, fn, [&] {
      const process_grid g = make_grid(prows, pcols, fn);
      return distribution::block(rows, cols, g.rows(), g.cols());
    });
  });
}

accrete_status accrete_array_create_irregular(accrete_array* out, accrete_dtype dtype, const int64_t* row_bounds,
                                              int nrb, const int64_t* col_bounds, int ncb) {
  static const char* fn = "accrete_array_create_irregular";
  return guarded(fn, [&] {
    make_array(out, dtype, fn, [&] {
      require(nrb > 0 && ncb > 0, fn, "nrb = " + std::to_string(nrb) + ", ncb = " + std::to_string(ncb) +
                                          ": both must be positive");
      require(row_bounds && col_bounds, fn, "null bounds array");
      std::vector<std::int64_t> rb(row_bounds, row_bounds + nrb + 1), cb(col_bounds, col_bounds + ncb + 1);
      return distribution::irregular(std::move(rb), std::move(cb));
    });
  });
}

accrete_status accrete_array_create_block_cyclic(accrete_array* out, accrete_dtype dtype, int64_t rows,
                                                 int64_t cols, int64_t mb, int64_t nb, int prows, int pcols) {
  static const char* fn = "accrete_array_create_block_cyclic";
  return guarded(fn, [&] {
    make_array(out, dtype, fn, [&] {
      const process_grid grid = make_grid(prows, pcols, fn);
      return distribution::block_cyclic(block_cyclic(rows, cols, mb, nb, grid.rows(), grid.cols()));
    });
  });
}

accrete_status accrete_array_create_element_cyclic(accrete_array* out, accrete_dtype dtype, int64_t rows,
                                                   int64_t cols, int prows, int pcols) {
  static const char* fn = "accrete_array_create_element_cyclic";
  return guarded(fn, [&] {
    make_array(out, dtype, fn, [&] {
      const process_grid g = make_grid(prows, pcols, fn);
      return distribution::element_cyclic(rows, cols, g.rows(), g.cols());
    });
  });
}

accrete_status accrete_array_free(accrete_array* a) { return free_handle(a, "accrete_array_free"); }

accrete_status accrete_array_shape(accrete_array a, int64_t* rows, int64_t* cols) {
  static const char* fn = "accrete_array_shape";
  return on(a, fn, [&](auto& A) {
    require_live(A, fn);
    set_if<int64_t>(rows, A.rows());
    set_if<int64_t>(cols, A.cols());
  });
}

accrete_status accrete_array_locate(accrete_array a, int64_t i, int64_t j, int* rank) {
  static const char* fn = "accrete_array_locate";
  return on(a, fn, [&](auto& A) {
    require_live(A, fn);
    require(rank != nullptr, fn, "null output pointer");
    *rank = A.locate(i, j);
  });
}

accrete_status accrete_array_put(accrete_array a, int64_t r0, int64_t r1, int64_t c0, int64_t c1, const void* buf,
                                 int64_t ld) {
  return on(a, "accrete_array_put", [&](auto& A) {
    using T = typename std::remove_reference_t<decltype(A)>::value_type;
    A.put_blocking(make_patch(r0, r1, c0, c1), static_cast<const T*>(buf), ld);
  });
}

accrete_status accrete_array_get(accrete_array a, int64_t r0, int64_t r1, int64_t c0, int64_t c1, void* buf,
                                 int64_t ld) {
  return on(a, "accrete_array_get", [&](auto& A) {
    using T = typename std::remove_reference_t<decltype(A)>::value_type;
    A.get_blocking(make_patch(r0, r1, c0, c1), static_cast<T*>(buf), ld);
  });
}

accrete_status accrete_array_acc(accrete_array a, int64_t r0, int64_t r1, int64_t c0, int64_t c1, const void* buf,
                                 int64_t ld, const void* alpha) {
  return on(a, "accrete_array_acc", [&](auto& A) {
    using T = typename std::remove_reference_t<decltype(A)>::value_type;
    const T al = alpha ? *static_cast<const T*>(alpha) : T(1);
    A.acc_blocking(make_patch(r0, r1, c0, c1), static_cast<const T*>(buf), ld, al);
  });
}

accrete_status accrete_array_flush(accrete_array a) {
  return on(a, "accrete_array_flush", [](auto& A) { A.flush(); });
}
accrete_status accrete_array_sync(accrete_array a) {
  return on(a, "accrete_array_sync", [](auto& A) { A.sync(); });
}
accrete_status accrete_array_zero(accrete_array a) {
  return on(a, "accrete_array_zero", [](auto& A) { A.zero(); });
}

accrete_status accrete_array_access(accrete_array a, void** local, int64_t* lld, int64_t* local_rows,
                                    int64_t* local_cols) {
  return on(a, "accrete_array_access",
            [&](auto& A) { report_part(A, A.access(), local, lld, local_rows, local_cols); });
}
accrete_status accrete_array_local_shape(accrete_array a, int64_t* local_rows, int64_t* local_cols) {
  static const char* fn = "accrete_array_local_shape";
  return on(a, fn, [&](auto& A) {
    require_live(A, fn);
    set_if<int64_t>(local_rows, A.local_rows());
    set_if<int64_t>(local_cols, A.local_cols());
  });
}
accrete_status accrete_array_local_indices(accrete_array a, int64_t* rows, int64_t* cols) {
  static const char* fn = "accrete_array_local_indices";
  return on(a, fn, [&](auto& A) {
    require_live(A, fn);
    report_indices(A, rows, cols);
  });
}
accrete_status accrete_array_release(accrete_array a) {
  return on(a, "accrete_array_release", [](auto& A) { A.release(); });
}
accrete_status accrete_array_release_update(accrete_array a) {
  return on(a, "accrete_array_release_update", [](auto& A) { A.release_update(); });
}

accrete_status accrete_array_norm(accrete_array a, double* norm) {
  static const char* fn = "accrete_array_norm";
  return on(a, fn, [&](auto& A) {
    require(norm != nullptr, fn, "null output pointer");
    *norm = A.norm();
  });
}

accrete_status accrete_array_save(accrete_array a, const char* path) {
  return file_op(a, "accrete_array_save", path, true);
}
accrete_status accrete_array_load(accrete_array a, const char* path) {
  return file_op(a, "accrete_array_load", path, false);
}

// ---- counter ---------------------------------------------------------------------
accrete_status accrete_counter_create(accrete_counter* out, int64_t initial) {
  static const char* fn = "accrete_counter_create";
  return guarded(fn, [&] {
    detail::construct_collectively(
        fn,
        [&] {
          require(out != nullptr, fn, "null output handle");
          *out = nullptr;
        },
        [&] { *out = new accrete_counter_s(initial); });
  });
}
accrete_status accrete_counter_free(accrete_counter* c) { return free_handle(c, "accrete_counter_free"); }
accrete_status accrete_counter_fetch_add(accrete_counter c, int64_t n, int64_t* old) {
  static const char* fn = "accrete_counter_fetch_add";
  return guarded(fn, [&] {
    require_handle(c, fn);
    require(old != nullptr, fn, "null output pointer");
    *old = c->c.fetch_add(n);
  });
}
accrete_status accrete_counter_reset(accrete_counter c, int64_t value) {
  static const char* fn = "accrete_counter_reset";
  return guarded(fn, [&] {
    require_handle(c, fn);
    c->c.reset(value);
  });
}

}  // extern "C"
