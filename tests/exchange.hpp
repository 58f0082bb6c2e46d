#pragma once
// Tests' helper: every rank's global pointer to a symmetric allocation,
// gathered with MPI on every rank.
#include <vector>

#include <mpi.h>

#include "accrete/global_ptr.hpp"
#include "accrete/runtime.hpp"
#include "accrete/team.hpp"

template <class T>
std::vector<accrete::global_ptr<T>> exchange(accrete::global_ptr<T> mine) {
  std::vector<accrete::global_ptr<T>> all(accrete::rank_n());
  MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, accrete::world().mpi_comm());
  return all;
}
