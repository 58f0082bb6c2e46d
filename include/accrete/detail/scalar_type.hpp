#pragma once
// Element types and operations with a transport equivalent, shared by the
// collectives (reductions) and the remote atomics; the MPI backend maps
// them to MPI datatypes and ops in one place (src/backend/mpi/mpi_types.hpp).
#include "accrete/detail/internal.hpp"
#include <complex>
#include <type_traits>

namespace accrete::detail {

/// Element types with an MPI equivalent.
/// c32 and c64 (std::complex<float>, <double>) are for element-wise data
/// motion and sums only (dist_array); scalar_type_of does not return them,
/// so the collectives keep treating complex as a user type.
enum class scalar_type : int { none, i8, i16, i32, i64, u8, u16, u32, u64, f32, f64, ldbl, c32, c64 };

template <class T>
constexpr scalar_type scalar_type_of() {
  if constexpr (std::is_same_v<T, bool>)
    return scalar_type::none;
  else if constexpr (std::is_integral_v<T>) {
    constexpr bool s = std::is_signed_v<T>;
    if constexpr (sizeof(T) == 1)
      return s ? scalar_type::i8 : scalar_type::u8;
    else if constexpr (sizeof(T) == 2)
      return s ? scalar_type::i16 : scalar_type::u16;
    else if constexpr (sizeof(T) == 4)
      return s ? scalar_type::i32 : scalar_type::u32;
    else if constexpr (sizeof(T) == 8)
      return s ? scalar_type::i64 : scalar_type::u64;
    else
      return scalar_type::none;
  } else if constexpr (std::is_same_v<T, float>)
    return scalar_type::f32;
  else if constexpr (std::is_same_v<T, double>)
    return scalar_type::f64;
  else if constexpr (std::is_same_v<T, long double>)
    return scalar_type::ldbl;
  else
    return scalar_type::none;
}

/// scalar_type_of, and c32 / c64 for the complex types: for element-wise
/// data motion and sums (dist_array, convergent_matrix, their files).
template <class T>
constexpr scalar_type element_type_of() {
  if constexpr (std::is_same_v<T, std::complex<float>>)
    return scalar_type::c32;
  else if constexpr (std::is_same_v<T, std::complex<double>>)
    return scalar_type::c64;
  else
    return scalar_type_of<T>();
}

/// Reduction and atomic operations. replace and no_op are for atomics only.
enum class scalar_op : int { add, mul, min, max, band, bor, bxor, replace, no_op };

/// Types that RMA and the collectives move as their bytes: the trivially
/// copyable ones, and any type a layer on top declares so. upcxx.hpp
/// declares a type whose upcxx::is_trivially_serializable the program
/// specialized to true, since UPC++ lets such a type travel by RMA too.
template <class T>
struct declared_bytewise : std::false_type {};
template <class T>
inline constexpr bool moves_as_bytes =
    !std::is_void_v<T> && (std::is_trivially_copyable_v<T> || declared_bytewise<std::remove_cv_t<T>>::value);

}  // namespace accrete::detail
