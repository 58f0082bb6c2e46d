// Collective MPI-IO of block-cyclic matrices (include/accrete/matrix/mpiio.hpp):
// a darray file view and a strided memory type, one collective call each way.
#include "accrete/matrix/mpiio.hpp"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>

namespace accrete {
namespace {

template <class T>
MPI_Datatype mpi_type_of();
template <>
MPI_Datatype mpi_type_of<double>() {
  return MPI_DOUBLE;
}
template <>
MPI_Datatype mpi_type_of<float>() {
  return MPI_FLOAT;
}

std::string mpi_error(int code) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, buf, &len);
  return std::string(buf, static_cast<std::size_t>(len));
}

void check_mpi(int code, const char* what, const std::string& path) {
  if (code != MPI_SUCCESS) {
    throw std::runtime_error(std::string("accrete::") + what + " on '" + path + "': " + mpi_error(code));
  }
}

constexpr std::int64_t int_max = std::numeric_limits<int>::max();

// Everything the transfer needs, checked. Validation is agreed on across the
// communicator, because one rank throwing while the others enter
// MPI_File_open would hang the job.
struct plan {
  int m = 0, n = 0;
  int local_rows = 0, local_cols = 0;
  int lld = 0;
  int darray_rank = 0;
};

plan make_plan(const char* fn, const block_cyclic& layout, const process_grid& grid, std::int64_t lld) {
  const MPI_Comm comm = grid.comm();
  std::string error;
  plan p;
  if (layout.grid_rows() != grid.rows() || layout.grid_cols() != grid.cols()) {
    error = "layout is for a " + std::to_string(layout.grid_rows()) + "x" + std::to_string(layout.grid_cols()) +
            " grid but the process grid is " + std::to_string(grid.rows()) + "x" + std::to_string(grid.cols());
  } else if (layout.rows() > int_max || layout.cols() > int_max) {
    error = "global size " + std::to_string(layout.rows()) + "x" + std::to_string(layout.cols()) +
            " exceeds MPI's int dimensions";
  } else {
    const std::int64_t lr = layout.local_rows(grid.my_row());
    const std::int64_t lc = layout.local_cols(grid.my_col());
    if (lld < std::max<std::int64_t>(1, lr)) {
      error = "lld = " + std::to_string(lld) +
              " is below max(1, local rows) = " + std::to_string(std::max<std::int64_t>(1, lr));
    } else if (lld > int_max) {
      error = "lld = " + std::to_string(lld) + " exceeds MPI's int strides";
    } else {
      p.m = static_cast<int>(layout.rows());
      p.n = static_cast<int>(layout.cols());
      p.local_rows = static_cast<int>(lr);
      p.local_cols = static_cast<int>(lc);
      p.lld = static_cast<int>(lld);
      // MPI_Type_create_darray numbers its grid row-major and starts the
      // cycle at grid position (0,0); map our coordinates onto that, which
      // handles col-major grids and nonzero source processes alike.
      const int drow = (grid.my_row() - layout.src_row() + grid.rows()) % grid.rows();
      const int dcol = (grid.my_col() - layout.src_col() + grid.cols()) % grid.cols();
      p.darray_rank = drow * grid.cols() + dcol;
    }
  }
  const int bad_here = error.empty() ? 0 : 1;
  int bad_anywhere = 0;
  MPI_Allreduce(&bad_here, &bad_anywhere, 1, MPI_INT, MPI_MAX, comm);
  if (bad_anywhere) {
    throw std::invalid_argument(std::string("accrete::") + fn + ": " +
                                (bad_here ? error : std::string("invalid arguments on another rank")));
  }
  return p;
}

// Owns the datatypes and the file so every error path releases them.
struct io_session {
  MPI_File fh = MPI_FILE_NULL;
  MPI_Datatype file_type = MPI_DATATYPE_NULL;
  MPI_Datatype mem_type = MPI_DATATYPE_NULL;
  io_session() = default;
  io_session(const io_session&) = delete;
  io_session& operator=(const io_session&) = delete;
  ~io_session() {
    if (fh != MPI_FILE_NULL) MPI_File_close(&fh);
    if (file_type != MPI_DATATYPE_NULL) MPI_Type_free(&file_type);
    if (mem_type != MPI_DATATYPE_NULL) MPI_Type_free(&mem_type);
  }
};

template <class T>
void build_types(io_session& s, const plan& p, const block_cyclic& layout, const process_grid& grid) {
  const MPI_Datatype etype = mpi_type_of<T>();
  const int gsizes[2] = {p.m, p.n};
  const int distribs[2] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_CYCLIC};
  // Block sizes beyond the dimension mean "all on one process"; clamping
  // keeps the darg within int without changing the distribution.
  const int dargs[2] = {static_cast<int>(std::min<std::int64_t>(layout.row_block(), std::max(p.m, 1))),
                        static_cast<int>(std::min<std::int64_t>(layout.col_block(), std::max(p.n, 1)))};
  const int psizes[2] = {grid.rows(), grid.cols()};
  MPI_Type_create_darray(grid.size(), p.darray_rank, 2, gsizes, distribs, dargs, psizes, MPI_ORDER_FORTRAN, etype,
                         &s.file_type);
  MPI_Type_commit(&s.file_type);
  // A strided vector lets lld > local_rows be read/written in place.
  MPI_Type_vector(p.local_cols, p.local_rows, p.lld, etype, &s.mem_type);
  MPI_Type_commit(&s.mem_type);
}

// Sets the file view to this process's blocks and moves them in one
// collective call (the buffer is only read when writing).
template <class T>
void transfer_all(io_session& s, const plan& p, const block_cyclic& layout, const process_grid& grid, T* local,
                  bool write, const std::string& path) {
  const char* fn = write ? "write_matrix" : "read_matrix";
  build_types<T>(s, p, layout, grid);
  check_mpi(MPI_File_set_view(s.fh, 0, mpi_type_of<T>(), s.file_type, "native", MPI_INFO_NULL),
            (std::string(fn) + ": MPI_File_set_view").c_str(), path);
  MPI_Status status;
  const int rc = write ? MPI_File_write_all(s.fh, local, 1, s.mem_type, &status)
                       : MPI_File_read_all(s.fh, local, 1, s.mem_type, &status);
  check_mpi(rc, (std::string(fn) + (write ? ": MPI_File_write_all" : ": MPI_File_read_all")).c_str(), path);
}

template <class T>
void write_impl(const std::string& path, const block_cyclic& layout, const process_grid& grid,
                const T* local, std::int64_t lld) {
  const MPI_Comm comm = grid.comm();
  const plan p = make_plan("write_matrix", layout, grid, lld);
  const MPI_Offset bytes = static_cast<MPI_Offset>(p.m) * p.n * static_cast<MPI_Offset>(sizeof(T));
  {
    io_session s;
    check_mpi(MPI_File_open(comm, path.c_str(), MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &s.fh),
              "write_matrix: MPI_File_open", path);
    // Truncates a longer pre-existing file so the result is exactly the matrix.
    check_mpi(MPI_File_set_size(s.fh, bytes), "write_matrix: MPI_File_set_size", path);
    if (bytes > 0) transfer_all(s, p, layout, grid, const_cast<T*>(local), true, path);
    const int rc = MPI_File_close(&s.fh);
    s.fh = MPI_FILE_NULL;
    check_mpi(rc, "write_matrix: MPI_File_close", path);
  }
  // Close is collective but need not synchronise; the barrier makes the
  // finished file visible to non-MPI readers on any rank once we return.
  MPI_Barrier(comm);
}

template <class T>
void read_impl(const std::string& path, const block_cyclic& layout, const process_grid& grid, T* local,
               std::int64_t lld) {
  const MPI_Comm comm = grid.comm();
  const plan p = make_plan("read_matrix", layout, grid, lld);
  const MPI_Offset expected = static_cast<MPI_Offset>(p.m) * p.n * static_cast<MPI_Offset>(sizeof(T));
  io_session s;
  check_mpi(MPI_File_open(comm, path.c_str(), MPI_MODE_RDONLY, MPI_INFO_NULL, &s.fh), "read_matrix: MPI_File_open",
            path);
  MPI_Offset actual = 0;
  check_mpi(MPI_File_get_size(s.fh, &actual), "read_matrix: MPI_File_get_size", path);
  if (actual != expected) {
    throw std::runtime_error("accrete::read_matrix: '" + path + "' holds " + std::to_string(actual) + " bytes but a " +
                             std::to_string(p.m) + "x" + std::to_string(p.n) + " matrix of " +
                             std::to_string(sizeof(T)) + "-byte elements needs " + std::to_string(expected) +
                             " bytes (wrong element type or dimensions?)");
  }
  if (expected > 0) transfer_all(s, p, layout, grid, local, false, path);
}

}  // namespace

void write_matrix(const std::string& path, const block_cyclic& layout, const process_grid& grid,
                  const double* local, std::int64_t lld) {
  write_impl(path, layout, grid, local, lld);
}
void write_matrix(const std::string& path, const block_cyclic& layout, const process_grid& grid,
                  const float* local, std::int64_t lld) {
  write_impl(path, layout, grid, local, lld);
}
void read_matrix(const std::string& path, const block_cyclic& layout, const process_grid& grid,
                 double* local, std::int64_t lld) {
  read_impl(path, layout, grid, local, lld);
}
void read_matrix(const std::string& path, const block_cyclic& layout, const process_grid& grid,
                 float* local, std::int64_t lld) {
  read_impl(path, layout, grid, local, lld);
}

}  // namespace accrete
