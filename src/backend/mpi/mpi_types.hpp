#pragma once
// The one mapping from accrete's scalar types and operations to MPI's
// (collectives.cpp and atomics.cpp).
#include <cstddef>

#include <mpi.h>

#include "accrete/detail/scalar_type.hpp"
#include "accrete/error.hpp"

namespace accrete::detail {

inline MPI_Datatype mpi_type(scalar_type t) {
  switch (t) {
    case scalar_type::i8:
      return MPI_INT8_T;
    case scalar_type::i16:
      return MPI_INT16_T;
    case scalar_type::i32:
      return MPI_INT32_T;
    case scalar_type::i64:
      return MPI_INT64_T;
    case scalar_type::u8:
      return MPI_UINT8_T;
    case scalar_type::u16:
      return MPI_UINT16_T;
    case scalar_type::u32:
      return MPI_UINT32_T;
    case scalar_type::u64:
      return MPI_UINT64_T;
    case scalar_type::f32:
      return MPI_FLOAT;
    case scalar_type::f64:
      return MPI_DOUBLE;
    case scalar_type::ldbl:
      return MPI_LONG_DOUBLE;
    case scalar_type::none:
      break;
  }
  throw error("accrete: reduction on a type without an MPI equivalent");
}

inline std::size_t scalar_bytes(scalar_type t) {
  switch (t) {
    case scalar_type::i8:
    case scalar_type::u8:
      return 1;
    case scalar_type::i16:
    case scalar_type::u16:
      return 2;
    case scalar_type::i32:
    case scalar_type::u32:
    case scalar_type::f32:
      return 4;
    case scalar_type::i64:
    case scalar_type::u64:
    case scalar_type::f64:
      return 8;
    case scalar_type::ldbl:
      return sizeof(long double);
    case scalar_type::none:
      break;
  }
  return 1;
}

inline MPI_Op mpi_op(scalar_op o) {
  switch (o) {
    case scalar_op::add:
      return MPI_SUM;
    case scalar_op::mul:
      return MPI_PROD;
    case scalar_op::min:
      return MPI_MIN;
    case scalar_op::max:
      return MPI_MAX;
    case scalar_op::band:
      return MPI_BAND;
    case scalar_op::bor:
      return MPI_BOR;
    case scalar_op::bxor:
      return MPI_BXOR;
    case scalar_op::replace:
      return MPI_REPLACE;
    case scalar_op::no_op:
      return MPI_NO_OP;
  }
  return MPI_OP_NULL;
}

}  // namespace accrete::detail
