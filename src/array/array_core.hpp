#pragma once
// The untyped body of dist_array<T>: storage through the assembly engine
// (node-shared parts with stripe locks, one-sided access to remote parts),
// patch and element-list data motion, and part access. The typed layer
// (dist_array.cpp) supplies the element kernels.
#include <array>
#include <exception>
#include <initializer_list>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "accrete/array/distribution.hpp"
#include "accrete/assembly.hpp"
#include "accrete/detail/assembly_engine.hpp"
#include "accrete/future.hpp"
#include "accrete/matrix/process_grid.hpp"

namespace accrete::detail {

/// Element kernels: dst[k * di] = src[k * si] (copy) or += (add), times
/// *alpha unless alpha is null, for k < n. Strides in elements.
struct elem_ops {
  scalar_type type;
  std::size_t size;
  void (*copy)(std::byte* dst, std::int64_t di, const std::byte* src, std::int64_t si, std::int64_t n,
               const void* alpha);
  void (*add)(std::byte* dst, std::int64_t di, const std::byte* src, std::int64_t si, std::int64_t n,
              const void* alpha);
};

enum class array_op { put, get, acc };

class array_core {
 public:
  array_core(const distribution& d, const elem_ops& ops);
  ~array_core() = default;

  const distribution& dist() const noexcept { return dist_; }
  bool usable() const noexcept { return engine_.usable(); }
  std::int64_t local_rows() const noexcept { return engine_.shape().lrows; }
  std::int64_t local_cols() const noexcept { return engine_.shape().lcols; }
  std::int64_t lld() const noexcept { return engine_.shape().lld; }
  /// This process's part, after checking the array is usable.
  std::byte* local(const char* what) const { return engine_.local_bytes(what); }

  /// Patch transfer (`alpha` null means 1). Validates first; throws before
  /// anything moves.
  future<> transfer(array_op op, const patch& p, std::byte* buf, std::int64_t ld, matrix_layout lay,
                    const void* alpha, const char* what) const;
  /// Element-list transfer; returns once locally complete.
  void elements(array_op op, std::span<const std::int64_t> rows, std::span<const std::int64_t> cols,
                std::byte* vals, const void* alpha, const char* what) const;

  void flush(const char* what) const;
  void flush(int rank, const char* what) const;
  void flush_local(const char* what) const;
  /// Collective: flush, then a barrier that makes progress.
  void sync(const char* what) const;

  std::byte* access(const char* what);
  void release(bool updated, const char* what);

  /// Collective MPI-IO of the whole array (sync before; after, too, for a load).
  void file(const std::string& path, bool write, const char* what);
  std::array<int, 9> descriptor(const char* what) const;
  /// The runs of global rows and columns this process's part holds.
  /// Global row (row = true) or column of this part's local index l.
  std::int64_t global_index(const char* what, bool row, std::int64_t l) const;
  std::vector<index_run> my_row_runs() const { return dist_.row_axis().owned_runs(my_part() / dist_.grid_cols()); }
  std::vector<index_run> my_col_runs() const { return dist_.col_axis().owned_runs(my_part() % dist_.grid_cols()); }

  /// Throws std::invalid_argument unless `o` has the same distribution.
  void require_same(const array_core& o, const char* what) const;

  /// The first step of a collective member (assembly_engine::enter).
  template <class Check>
  void enter(const char* what, std::initializer_list<collective_arg> args, Check&& check) const {
    engine_.enter(what, args, std::forward<Check>(check));
  }
  void enter(const char* what, std::initializer_list<collective_arg> args = {}) const {
    engine_.enter(what, args, [] {});
  }
  /// Same on every process (the arrays are numbered in construction order).
  std::int64_t id() const noexcept { return engine_.id(); }

 private:
  // Piece of one axis owned by one part: a local range, and where its
  // elements sit in the patch (runs of consecutive positions). The lists
  // are reused between calls (cleared, never freed), so a small transfer
  // allocates nothing.
  using run = std::pair<std::int64_t, std::int64_t>;  // (position in patch, length)
  struct axis_piece {
    int part;
    std::int64_t lstart, count;
  };
  struct axis_split {
    std::vector<axis_piece> pieces;
    std::vector<std::vector<run>> runs;  // runs[i]: piece i's runs
    std::vector<int> slot;               // part -> index in pieces, or -1
  };
  static void split(const axis& a, std::int64_t lo, std::int64_t hi, axis_split& out);
  void check_patch(const patch& p, const std::byte* buf, std::int64_t ld, matrix_layout lay,
                   const char* what) const;
  // Node-local acc runs under the owner's stripe locks only when every
  // process shares the node; otherwise every acc is an MPI accumulate, so
  // that MPI's element atomicity covers all of them.
  bool direct_ok(array_op op, int part) const noexcept;

  int my_part() const noexcept;

  distribution dist_;
  const elem_ops& ops_;
  mutable std::unique_ptr<process_grid> grid_;  // made by descriptor(), for its BLACS context
  mutable assembly_engine engine_;
  bool accessed_ = false;
};

}  // namespace accrete::detail
