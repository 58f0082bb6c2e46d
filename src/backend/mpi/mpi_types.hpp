#pragma once
// The one mapping from accrete's scalar types and operations to MPI's
// (collectives.cpp and atomics.cpp). Tables in enum order.
#include <cstddef>

#include <mpi.h>

#include "accrete/detail/scalar_type.hpp"
#include "accrete/error.hpp"

namespace accrete::detail {

inline MPI_Datatype mpi_type(scalar_type t) {
  const MPI_Datatype table[] = {MPI_DATATYPE_NULL, MPI_INT8_T,  MPI_INT16_T,  MPI_INT32_T,
                                MPI_INT64_T,       MPI_UINT8_T, MPI_UINT16_T, MPI_UINT32_T,
                                MPI_UINT64_T,      MPI_FLOAT,   MPI_DOUBLE,   MPI_LONG_DOUBLE,
                                MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX};
  static_assert(sizeof table / sizeof table[0] == std::size_t(scalar_type::c64) + 1);
  if (t == scalar_type::none) throw error("accrete: reduction on a type without an MPI equivalent");
  return table[std::size_t(t)];
}

inline std::size_t scalar_bytes(scalar_type t) {
  constexpr std::size_t table[] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 4, 8, sizeof(long double), 8, 16};
  static_assert(sizeof table / sizeof table[0] == std::size_t(scalar_type::c64) + 1);
  return table[std::size_t(t)];
}

inline MPI_Op mpi_op(scalar_op o) {
  const MPI_Op table[] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_BAND, MPI_BOR, MPI_BXOR, MPI_REPLACE, MPI_NO_OP};
  static_assert(sizeof table / sizeof table[0] == std::size_t(scalar_op::no_op) + 1);
  return table[std::size_t(o)];
}

}  // namespace accrete::detail
