#pragma once
// Turns MPI error codes into accrete::error exceptions naming the call.
#include <string>

#include <mpi.h>

#include "accrete/error.hpp"

namespace accrete::detail {
inline std::string mpi_error_string(int rc) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  return std::string(msg, len);
}
[[noreturn]] inline void mpi_failed(const char* call, int rc) {
  throw error(std::string("accrete: ") + call + " failed: " + mpi_error_string(rc));
}
}  // namespace accrete::detail

#define ACCRETE_MPI(call)                                                              \
  do {                                                                                 \
    int accrete_rc_ = (call);                                                          \
    if (accrete_rc_ != MPI_SUCCESS) ::accrete::detail::mpi_failed(#call, accrete_rc_); \
  } while (0)
