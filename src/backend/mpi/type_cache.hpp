#pragma once
// The backend's one cache of committed derived datatypes, keyed by shape.
// Tiled codes and halo exchanges repeat a few shapes many times, and
// building and committing a type costs more than a small transfer.
#include <algorithm>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include <mpi.h>

#include "backend/mpi/mpi_check.hpp"

namespace accrete::detail {

class type_cache {
 public:
  /// The committed type for `key`, built by `build()` (which returns a
  /// committed type) on first use. When the cache is full its types are
  /// retired, and freed only when it fills again: a caller may hold the
  /// types of one operation (origin and target) while fetching both.
  /// The lookup allocates nothing (a hit is the common case: array_rma's
  /// 1 x 1 get over MPI is about 0.15 us, and building a key vector per
  /// lookup was a visible part of that).
  template <class Build>
  MPI_Datatype get(std::span<const std::int64_t> key, Build&& build) {
    auto it = types_.find(key);
    if (it != types_.end()) return it->second;
    if (types_.size() >= cap) {
      free_retired();
      for (auto& kv : types_) retired_.push_back(kv.second);
      types_.clear();
    }
    MPI_Datatype t = build();
    types_.emplace(std::vector<std::int64_t>(key.begin(), key.end()), t);
    return t;
  }
  void clear() noexcept {
    free_retired();
    for (auto& kv : types_) MPI_Type_free(&kv.second);
    types_.clear();
  }

 private:
  void free_retired() noexcept {
    for (auto& t : retired_) MPI_Type_free(&t);
    retired_.clear();
  }
  static constexpr std::size_t cap = 256;
  // Lexicographic order between stored keys and looked-up spans.
  struct key_less {
    using is_transparent = void;
    template <class A, class B>
    bool operator()(const A& a, const B& b) const noexcept {
      return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
    }
  };
  std::map<std::vector<std::int64_t>, MPI_Datatype, key_less> types_;
  std::vector<MPI_Datatype> retired_;
};

/// The process's cache (strided transfers, shared_block rectangles).
type_cache& datatype_cache();

}  // namespace accrete::detail
