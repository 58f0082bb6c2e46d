// Collective MPI-IO of distributed matrices in one file format: the m x n
// global matrix column-major, raw elements, no header
// (include/accrete/matrix/mpiio.hpp). One path serves every distribution:
// a process's elements are the product of a set of global rows and a set of
// global columns, each a list of runs, so its file view is an indexed type
// of an indexed type -- block-cyclic (convergent_matrix, write_matrix),
// block, irregular and element-cyclic (dist_array) alike.
#include "accrete/matrix/mpiio.hpp"

#include <algorithm>
#include <exception>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "accrete/detail/backend.hpp"
#include "backend/mpi/mpi_types.hpp"
#include "backend/mpi/mpi_check.hpp"
#include "backend/mpi/state.hpp"

namespace accrete {
namespace detail {
namespace {

void check_mpi(int code, const std::string& what, const std::string& path) {
  if (code != MPI_SUCCESS) throw std::runtime_error("accrete::" + what + " on '" + path + "': " + mpi_error_string(code));
}

constexpr std::int64_t int_max = std::numeric_limits<int>::max();

// Owns the datatypes and the file so every error path releases them.
struct io_session {
  MPI_File fh = MPI_FILE_NULL;
  MPI_Datatype row_type = MPI_DATATYPE_NULL, file_type = MPI_DATATYPE_NULL, mem_type = MPI_DATATYPE_NULL;
  io_session() = default;
  io_session(const io_session&) = delete;
  io_session& operator=(const io_session&) = delete;
  ~io_session() {
    if (fh != MPI_FILE_NULL) MPI_File_close(&fh);
    for (MPI_Datatype* t : {&row_type, &file_type, &mem_type})
      if (*t != MPI_DATATYPE_NULL) MPI_Type_free(t);
  }
};

// An indexed type of `old` from runs (start, length); callers checked that
// every value fits in an int.
MPI_Datatype indexed(const std::vector<index_run>& runs, MPI_Datatype old) {
  std::vector<int> len(runs.size()), disp(runs.size());
  for (std::size_t k = 0; k < runs.size(); ++k) {
    disp[k] = int(runs[k].start);
    len[k] = int(runs[k].length);
  }
  MPI_Datatype t;
  MPI_Type_indexed(int(runs.size()), len.data(), disp.data(), old, &t);
  return t;
}

void file_io(MPI_Comm comm, const matrix_file& f, bool write) {
  const std::string fn = f.what;
  const MPI_Datatype etype = mpi_type(f.type);
  const MPI_Offset esize = MPI_Offset(scalar_bytes(f.type));
  const MPI_Offset bytes = MPI_Offset(f.m) * f.n * esize;
  io_session s;
  const int mode = write ? MPI_MODE_CREATE | MPI_MODE_WRONLY : MPI_MODE_RDONLY;
  check_mpi(MPI_File_open(comm, f.path.c_str(), mode, MPI_INFO_NULL, &s.fh), fn + ": MPI_File_open", f.path);
  if (write) {
    // Truncates a longer pre-existing file so the result is exactly the matrix.
    check_mpi(MPI_File_set_size(s.fh, bytes), fn + ": MPI_File_set_size", f.path);
  } else {
    MPI_Offset actual = 0;
    check_mpi(MPI_File_get_size(s.fh, &actual), fn + ": MPI_File_get_size", f.path);
    if (actual != bytes)
      throw std::runtime_error("accrete::" + fn + ": '" + f.path + "' holds " + std::to_string(actual) +
                               " bytes but a " + std::to_string(f.m) + "x" + std::to_string(f.n) + " matrix of " +
                               std::to_string(esize) + "-byte elements needs " + std::to_string(bytes) +
                               " bytes (wrong element type or dimensions?)");
  }
  if (bytes > 0) {
    // Rows of one column, stretched to a whole column so that consecutive
    // columns of a run follow each other in the file.
    MPI_Datatype rows = indexed(f.row_runs, etype);
    MPI_Type_create_resized(rows, 0, MPI_Aint(f.m) * esize, &s.row_type);
    MPI_Type_free(&rows);
    // The view spans the whole file from offset 0, as a darray's does:
    // ROMIO (MPICH 4.0) wrote past the matrix with a filetype whose lower
    // bound was not 0.
    MPI_Datatype cols = indexed(f.col_runs, s.row_type);
    MPI_Type_create_resized(cols, 0, MPI_Aint(bytes), &s.file_type);
    MPI_Type_free(&cols);
    MPI_Type_commit(&s.file_type);
    // A strided vector moves a part with lld > local rows in place; the
    // stride is in bytes (MPI_Aint), so any lld works.
    MPI_Type_create_hvector(int(f.lcols), int(f.lrows), MPI_Aint(f.lld) * MPI_Aint(esize), etype, &s.mem_type);
    MPI_Type_commit(&s.mem_type);
    check_mpi(MPI_File_set_view(s.fh, 0, etype, s.file_type, "native", MPI_INFO_NULL), fn + ": MPI_File_set_view",
              f.path);
    MPI_Status status;
    const int rc = write ? MPI_File_write_all(s.fh, f.local, 1, s.mem_type, &status)
                         : MPI_File_read_all(s.fh, f.local, 1, s.mem_type, &status);
    check_mpi(rc, fn + (write ? ": MPI_File_write_all" : ": MPI_File_read_all"), f.path);
  }
  const int rc = MPI_File_close(&s.fh);
  s.fh = MPI_FILE_NULL;
  check_mpi(rc, fn + ": MPI_File_close", f.path);
  // Close is collective but need not synchronise; the barrier makes a
  // finished file visible to non-MPI readers on any rank once we return.
  if (write) MPI_Barrier(comm);
}

std::string matrix_file_limits(std::int64_t m, std::int64_t n, std::int64_t lrows, std::int64_t lld) {
  if (m > int_max || n > int_max)
    return "global size " + std::to_string(m) + "x" + std::to_string(n) + " exceeds MPI's int dimensions";
  if (lld < std::max<std::int64_t>(1, lrows))
    return "lld = " + std::to_string(lld) + " is below max(1, local rows) = " +
           std::to_string(std::max<std::int64_t>(1, lrows));
  return {};
}

}  // namespace

void world_matrix_file_io(const matrix_file& f, bool write) {
  // The same limits as write_matrix; a part's lld can break them on one
  // process only, so every process learns of it before MPI_File_open.
  std::exception_ptr bad;
  if (const std::string e = matrix_file_limits(f.m, f.n, f.lrows, f.lld); !e.empty())
    bad = std::make_exception_ptr(std::invalid_argument(std::string("accrete::") + f.what + ": " + e));
  agree((std::string("accrete::") + f.what).c_str(), bad);
  file_io(world_comm(), f, write);
}

}  // namespace detail

namespace {

// Validation is agreed on across the communicator, because one rank
// throwing while the others enter MPI_File_open would hang the job.
template <class T>
void block_cyclic_io(const char* fn, const std::string& path, const block_cyclic& layout, const process_grid& grid,
                     T* local, std::int64_t lld, bool write) {
  MPI_Comm comm = grid.comm();
  std::string error;
  if (layout.grid_rows() != grid.rows() || layout.grid_cols() != grid.cols())
    error = "layout is for a " + std::to_string(layout.grid_rows()) + "x" + std::to_string(layout.grid_cols()) +
            " grid but the process grid is " + std::to_string(grid.rows()) + "x" + std::to_string(grid.cols());
  else
    error = detail::matrix_file_limits(layout.rows(), layout.cols(), layout.local_rows(grid.my_row()), lld);
  const int bad_here = error.empty() ? 0 : 1;
  int bad_anywhere = 0;
  MPI_Allreduce(&bad_here, &bad_anywhere, 1, MPI_INT, MPI_MAX, comm);
  if (bad_anywhere)
    throw std::invalid_argument(std::string("accrete::") + fn + ": " +
                                (bad_here ? error : std::string("invalid arguments on another rank")));
  const distribution d = distribution::block_cyclic(layout);
  detail::matrix_file f{path,
                        fn,
                        detail::element_type_of<T>(),
                        layout.rows(),
                        layout.cols(),
                        d.row_axis().owned_runs(grid.my_row()),
                        d.col_axis().owned_runs(grid.my_col()),
                        reinterpret_cast<std::byte*>(local),
                        layout.local_rows(grid.my_row()),
                        layout.local_cols(grid.my_col()),
                        lld};
  detail::file_io(comm, f, write);
}

}  // namespace

// Every element type of convergent_matrix; complex files interleave real
// and imaginary parts, as std::complex does in memory.
#define ACCRETE_MATRIX_FILE_IO(T)                                                                  \
  void write_matrix(const std::string& path, const block_cyclic& layout, const process_grid& grid, \
                    const T* local, std::int64_t lld) {                                            \
    block_cyclic_io("write_matrix", path, layout, grid, const_cast<T*>(local), lld, true);         \
  }                                                                                                \
  void read_matrix(const std::string& path, const block_cyclic& layout, const process_grid& grid,  \
                   T* local, std::int64_t lld) {                                                   \
    block_cyclic_io("read_matrix", path, layout, grid, local, lld, false);                         \
  }
ACCRETE_MATRIX_FILE_IO(float)
ACCRETE_MATRIX_FILE_IO(double)
ACCRETE_MATRIX_FILE_IO(std::complex<float>)
ACCRETE_MATRIX_FILE_IO(std::complex<double>)
#undef ACCRETE_MATRIX_FILE_IO

}  // namespace accrete
