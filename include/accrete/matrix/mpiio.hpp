// accrete/matrix/mpiio.hpp -- collective MPI-IO of block-cyclic matrices.
//
// The file format is deliberately trivial: the m x n global matrix in
// column-major order, raw native-endian elements, no header. A file is
// therefore readable by any tool (numpy.fromfile(...).reshape((n, m)).T,
// Fortran unformatted stream, ...) and independent of the block sizes and
// grid that wrote it. The price is that the file cannot say what it holds:
// read_matrix only checks that the byte size is m * n * sizeof(T), which is
// how a file of the wrong element type (or wrong dimensions) is caught.
#pragma once
/// \file

#include <accrete/matrix/block_cyclic.hpp>
#include <accrete/matrix/process_grid.hpp>

#include <complex>
#include <cstdint>
#include <string>

namespace accrete {

/// Writes the distributed matrix to `path` (created or truncated to exactly
/// m * n * sizeof(T) bytes). Collective over grid.comm(); does not need
/// the accrete runtime (plain MPI programs may use it). `local` is this process's piece in
/// ScaLAPACK layout: local_rows(my_row) x local_cols(my_col), column-major,
/// leading dimension `lld` >= max(1, local rows). When this returns the file
/// is complete and closed on all ranks.
///
/// Throws std::invalid_argument (on every rank) if the arguments are bad on
/// any rank (grid dimensions, lld) or a dimension exceeds what
/// MPI's int-based datatypes can describe, and std::runtime_error if MPI-IO
/// fails.
///@{
void write_matrix(const std::string& path, const block_cyclic& layout, const process_grid& grid,
                  const double* local, std::int64_t lld);
void write_matrix(const std::string& path, const block_cyclic& layout, const process_grid& grid,
                  const float* local, std::int64_t lld);
void write_matrix(const std::string& path, const block_cyclic& layout, const process_grid& grid,
                  const std::complex<double>* local, std::int64_t lld);
void write_matrix(const std::string& path, const block_cyclic& layout, const process_grid& grid,
                  const std::complex<float>* local, std::int64_t lld);
///@}

/// Reads a file written by write_matrix (or any raw column-major m x n
/// matrix of T) into this process's piece, with the same conventions and
/// collectivity as write_matrix. The layout of the reader need not match the
/// writer's. Throws std::runtime_error, naming the expected and actual byte
/// counts, if the file size is not m * n * sizeof(T).
///@{
void read_matrix(const std::string& path, const block_cyclic& layout, const process_grid& grid,
                 double* local, std::int64_t lld);
void read_matrix(const std::string& path, const block_cyclic& layout, const process_grid& grid,
                 float* local, std::int64_t lld);
void read_matrix(const std::string& path, const block_cyclic& layout, const process_grid& grid,
                 std::complex<double>* local, std::int64_t lld);
void read_matrix(const std::string& path, const block_cyclic& layout, const process_grid& grid,
                 std::complex<float>* local, std::int64_t lld);
///@}

}  // namespace accrete
