/** \file
 * accrete's C API: the runtime, convergent_matrix, sparse_matrix and
 * dist_array + counter for C (and, through the Fortran module `accrete`, Fortran) programs.
 *
 * Conventions
 *  - Every function returns an accrete_status: ACCRETE_SUCCESS (0) or an
 *    error code. No C++ exception crosses this interface. After an error,
 *    accrete_last_error() returns a message naming the bad value (kept per
 *    thread until the next failing call).
 *  - Indices are 0-based global indices (the Fortran module converts from
 *    1-based). Buffers are column-major with a leading dimension `ld`
 *    unless a layout argument says ACCRETE_ROW_MAJOR.
 *  - Element buffers are `void*` of the object's element type (its dtype):
 *    float for ACCRETE_FLOAT, double for ACCRETE_DOUBLE, `float _Complex`
 *    (two floats) for ACCRETE_COMPLEX_FLOAT, and so on.
 *  - Handles are opaque. accrete_*_free(&h) is collective where the C++
 *    destructor is, and sets h to NULL; a NULL handle is rejected with
 *    ACCRETE_ERR_ARG. Using a handle after it was freed is undefined (as
 *    for free()); using it after accrete_finalize() returns ACCRETE_ERR_STATE.
 *  - Collective calls (marked "Collective") must be made by every process
 *    with the same arguments (an array's shape, distribution and dtype, a
 *    matrix's shape, blocks, grid, dtype, strategy, reproducible,
 *    atomic_updates and merge; a counter's initial value; file paths). If
 *    one process rejects its own arguments it returns ACCRETE_ERR_ARG and
 *    every other process ACCRETE_ERR_STATE naming its rank; if the
 *    arguments differ, every process returns ACCRETE_ERR_STATE naming the
 *    argument and the ranks. No handle is made then, and no process waits
 *    forever. (docs/semantics.md, "Collective calls".)
 *  - Semantics (completion, atomicity, progress, threads) are those of the
 *    C++ classes: see docs/semantics.md. In short: matrix updates are applied
 *    by the commit that ends their round; array put/acc return once the
 *    source buffer may be reused and are visible everywhere after
 *    accrete_array_flush (+ a barrier or accrete_array_sync); get returns
 *    with the data. Call accrete from one thread at a time.
 */
#ifndef ACCRETE_C_ACCRETE_H
#define ACCRETE_C_ACCRETE_H

/** The version of accrete this header belongs to (CMake's find_package,
 * accrete.pc and Python's accrete.__version__ give the same). */
#define ACCRETE_VERSION_MAJOR 0 /**< major version */
#define ACCRETE_VERSION_MINOR 1 /**< minor version */
#define ACCRETE_VERSION_PATCH 0 /**< patch version */

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** What every function returns. */
typedef enum accrete_status {
  ACCRETE_SUCCESS = 0,       /**< the call did what it says */
  ACCRETE_ERR_ARG = 1,       /**< a bad argument: index or patch out of range, null pointer, short ld, bad size */
  ACCRETE_ERR_STATE = 2,     /**< wrong state: not initialized, finalized, release without access, misused collective */
  ACCRETE_ERR_NOMEM = 3,     /**< out of memory or shared segment exhausted */
  ACCRETE_ERR_IO = 4,        /**< a file could not be read or written, or holds the wrong type or shape */
  ACCRETE_ERR_RUNTIME = 5,   /**< any other failure (MPI, ScaLAPACK) */
  ACCRETE_ERR_UNSUPPORTED = 6 /**< the operation does not apply to this object (e.g. descriptor of a block array) */
} accrete_status;

/** Element types. */
typedef enum accrete_dtype {
  ACCRETE_FLOAT = 0,           /**< float */
  ACCRETE_DOUBLE = 1,          /**< double */
  ACCRETE_COMPLEX_FLOAT = 2,   /**< dist_array and matrix (no merge MAX / MIN) */
  ACCRETE_COMPLEX_DOUBLE = 3,  /**< double _Complex */
  ACCRETE_INT32 = 4,           /**< dist_array only */
  ACCRETE_INT64 = 5,           /**< dist_array only */
  /** Makes every int a valid value of the type, so that a bad value reaches
   * the library's check (and its error code) rather than undefined behaviour
   * in C++. The same for the other enums. Not a dtype. */
  ACCRETE_DTYPE_INT_RANGE_ = 0x7fffffff
} accrete_dtype;

/** How a buffer with leading dimension ld is laid out. */
typedef enum accrete_layout {
  ACCRETE_COL_MAJOR = 0,  /**< element (i, j) at buf[i + j * ld] */
  ACCRETE_ROW_MAJOR = 1,  /**< element (i, j) at buf[i * ld + j] */
  ACCRETE_LAYOUT_INT_RANGE_ = 0x7fffffff  /**< not a layout (see ACCRETE_DTYPE_INT_RANGE_) */
} accrete_layout;

/** The message of the calling thread's last failed call ("" if none). */
const char* accrete_last_error(void);
/** Records msg as the calling thread's last error and returns code: for
 * language bindings (the Fortran module) that check arguments themselves. */
accrete_status accrete_set_error(accrete_status code, const char* msg);

/* ---- runtime ---------------------------------------------------------------- */

/** Collective over MPI_COMM_WORLD: starts accrete. accrete_init is collective over MPI_COMM_WORLD. It initialises MPI if the
 * program has not (and accrete_finalize then finalises it); a program that
 * called MPI_Init itself calls MPI_Finalize after accrete_finalize. Options
 * come from the environment (ACCRETE_SEGMENT_SIZE, ACCRETE_NODE_SIZE,
 * ACCRETE_VERBOSE). Initialising twice returns ACCRETE_ERR_STATE. */
accrete_status accrete_init(void);
/** Collective: stops accrete (and MPI, if accrete_init started it). Free
 * every handle before. */
accrete_status accrete_finalize(void);
/** Nonzero between accrete_init and accrete_finalize. */
int accrete_initialized(void);
/** *rank = this process's rank in MPI_COMM_WORLD. */
accrete_status accrete_rank_me(int* rank);
/** *size = the number of processes. */
accrete_status accrete_rank_n(int* size);
/** Collective: returns once every process has entered it. */
accrete_status accrete_barrier(void);

/* ---- convergent_matrix (float, double, complex) ----------------------------------- */

/** A handle to a dense m x n matrix, 2D block-cyclic (mb x nb blocks) over a pr x pc grid
 * of all processes (row-major ranks; pr = pc = 0 picks the squarest grid),
 * assembled by asynchronous indexed-slice += updates (accrete/matrix/
 * convergent_matrix.hpp). */
typedef struct accrete_matrix_s* accrete_matrix;

/** How a matrix assembles (convergent_matrix_options::strategy). */
typedef enum accrete_strategy {
  ACCRETE_STRATEGY_PACKETS = 0,   /**< buffered messages applied by the owner, overlapping computation */
  ACCRETE_STRATEGY_ALLTOALL = 1,  /**< one exchange at commit */
  ACCRETE_STRATEGY_INT_RANGE_ = 0x7fffffff  /**< not a strategy */
} accrete_strategy;

/** How an update combines with the stored element. */
typedef enum accrete_merge {
  ACCRETE_MERGE_SUM = 0, /**< A += v */
  ACCRETE_MERGE_MAX = 1, /**< A = max(A, v) (NaN wins, -0 < +0) */
  ACCRETE_MERGE_MIN = 2, /**< A = min(A, v) */
  ACCRETE_MERGE_INT_RANGE_ = 0x7fffffff  /**< not a merge */
} accrete_merge;

/** A matrix's options (accrete_matrix_default_options fills the defaults). */
typedef struct accrete_matrix_options {
  int strategy;            /**< accrete_strategy */
  int64_t buffer_cap;      /**< bytes buffered or in flight per process (>= 1024) */
  int64_t coalesce_bytes;  /**< a remote target's buffer is sent at this size */
  int64_t lld;             /**< local leading dimension; 0: max(1, local rows) */
  uint64_t seed;           /**< order in which targets are visited */
  int reproducible;        /**< nonzero: bitwise-reproducible assembly (docs/semantics.md) */
  int merge;               /**< accrete_merge (user functions: C++ only) */
  int atomic_updates;      /**< nonzero: whole-update atomicity (docs/semantics.md) */
} accrete_matrix_options;

/** Fills *opts with the defaults (those of convergent_matrix_options). */
accrete_status accrete_matrix_default_options(accrete_matrix_options* opts);

/** Collective. opts may be NULL (defaults). */
accrete_status accrete_matrix_create(accrete_matrix* out, accrete_dtype dtype, int64_t m, int64_t n, int pr, int pc,
                                     int64_t mb, int64_t nb, const accrete_matrix_options* opts);
/** Collective. */
accrete_status accrete_matrix_free(accrete_matrix* a);

/** A[rows[i], cols[j]] += block(i, j) for i < nrows, j < ncols; block(i, j)
 * is block[i + j*ld] (column-major) or block[i*ld + j] (row-major). The
 * block may be reused on return. Invalid input changes nothing. */
accrete_status accrete_matrix_update(accrete_matrix a, const void* block, int64_t ld, const int64_t* rows,
                                     int64_t nrows, const int64_t* cols, int64_t ncols, accrete_layout layout);
/** For ix[i] <= ix[j] only: A[ix[i], ix[j]] += block(i, j) (the upper triangle). */
accrete_status accrete_matrix_update_symmetric(accrete_matrix a, const void* block, int64_t ld, const int64_t* ix,
                                               int64_t n, accrete_layout layout);
/** Collective: ends the round; every update issued before it anywhere is applied. */
accrete_status accrete_matrix_commit(accrete_matrix a);
/** This process is done reading its committed part. */
accrete_status accrete_matrix_reopen(accrete_matrix a);
/** Collective, between rounds: every element becomes zero. */
accrete_status accrete_matrix_reset(accrete_matrix a);
/** Collective, after commit: A(j, i) = A(i, j) for i < j (square only). */
accrete_status accrete_matrix_fill_lower(accrete_matrix a);
/** Collective, after commit: A = (A + A^T) / 2 (square only). */
accrete_status accrete_matrix_symmetrize(accrete_matrix a);
/** This process's part: *local points at local_rows x local_cols elements,
 * column-major with leading dimension *lld (any output pointer may be
 * NULL). Valid until the matrix is freed. */
accrete_status accrete_matrix_local(accrete_matrix a, void** local, int64_t* lld, int64_t* local_rows,
                                    int64_t* local_cols);
/** The global indices of this process's part (0-based): local element
 * (li, lj), at local[li + lj * lld], is A(rows[li], cols[lj]). rows gets
 * local_rows entries and cols local_cols (either may be NULL).
 * Non-collective, no communication. */
accrete_status accrete_matrix_local_indices(accrete_matrix a, int64_t* rows, int64_t* cols);
/** One element, read from its owner (non-collective); *value has the matrix's type. */
accrete_status accrete_matrix_get(accrete_matrix a, int64_t i, int64_t j, void* value);
/** Copies this process's part (lld x local_cols elements; `count` is dst's
 * capacity in elements) while no update is being applied to it; with
 * atomic_updates it holds each update's contribution entirely or not at
 * all. Non-collective; callable during a round. */
accrete_status accrete_matrix_snapshot_local(accrete_matrix a, void* dst, int64_t count);
/** ScaLAPACK descriptor of the local part (collective on the first call: it
 * creates the grid's BLACS context). */
accrete_status accrete_matrix_descriptor(accrete_matrix a, int desc[9]);
/** Collective MPI-IO: the whole matrix column-major, raw elements, no header
 * (the format dist_array uses too). load checks type and shape by size. */
accrete_status accrete_matrix_save(accrete_matrix a, const char* path);
/** Collective: reads a file accrete_matrix_save (or accrete_array_save) wrote. */
accrete_status accrete_matrix_load(accrete_matrix a, const char* path);

/* ---- sparse_matrix (float, double, complex) -------------------------------------- */

/** A handle to a distributed sparse matrix (accrete/sparse/sparse_matrix.hpp):
 * each process owns a contiguous range of rows and of "diagonal" columns
 * (PETSc's MPIAIJ ownership), assembled by asynchronous indexed-slice
 * updates. Round 0 discovers the nonzero pattern; by default the first
 * commit freezes it. */
typedef struct accrete_sparse_s* accrete_sparse;

/** A sparse matrix's options (accrete_sparse_default_options fills the defaults). */
typedef struct accrete_sparse_options {
  int strategy;            /**< accrete_strategy */
  int64_t buffer_cap;      /**< bytes buffered or in flight per process (>= 1024) */
  int64_t coalesce_bytes;  /**< a remote target's buffer is sent at this size */
  uint64_t seed;           /**< order in which targets are visited */
  int reproducible;        /**< nonzero: the same bits for any P, partition or order (sums only) */
  int merge;               /**< accrete_merge (MAX / MIN: real types only) */
  int growing_pattern;     /**< nonzero: later rounds may add entries (default: frozen after round 0) */
  int cache_slots;         /**< nonzero (default): own-row updates repeated round after round replay their slots */
} accrete_sparse_options;

/** Fills *opts with the defaults (those of sparse_matrix_options). */
accrete_status accrete_sparse_default_options(accrete_sparse_options* opts);
/** Collective: this process owns local_rows rows and local_cols diagonal
 * columns (each >= 0; the sums over processes, M and N, below 2^31), in
 * rank order. dtype: a floating-point type. opts may be NULL (defaults). */
accrete_status accrete_sparse_create(accrete_sparse* out, accrete_dtype dtype, int64_t local_rows, int64_t local_cols,
                                     const accrete_sparse_options* opts);
/** Collective. */
accrete_status accrete_sparse_free(accrete_sparse* a);
/** The global shape and this process's ranges (any pointer may be NULL):
 * rows [*row_begin, *row_end), diagonal columns [*col_begin, *col_end). */
accrete_status accrete_sparse_ranges(accrete_sparse a, int64_t* m, int64_t* n, int64_t* row_begin, int64_t* row_end,
                                     int64_t* col_begin, int64_t* col_end);
/** A[rows[i], cols[j]] op= block(i, j), as accrete_matrix_update; indices
 * may repeat. Invalid input changes nothing. With a frozen pattern, an
 * entry outside it returns ACCRETE_ERR_STATE naming it, with nothing of
 * the update applied (the rows of other processes are checked against
 * their owners' patterns). */
accrete_status accrete_sparse_update(accrete_sparse a, const void* block, int64_t ld, const int64_t* rows,
                                     int64_t nrows, const int64_t* cols, int64_t ncols, accrete_layout layout);
/** Collective: ends the round (every update issued anywhere before it is
 * applied) and lays out or extends the pattern. */
accrete_status accrete_sparse_commit(accrete_sparse a);
/** This process is done reading its committed rows. */
accrete_status accrete_sparse_reopen(accrete_sparse a);
/** Collective, between rounds: every stored value becomes zero; the pattern stays. */
accrete_status accrete_sparse_reset(accrete_sparse a);
/** The CSR block of this process's rows in the diagonal columns (offdiag =
 * 0) or the others (offdiag = 1): row i's entries are col[k], value[k] for
 * row_ptr[i] <= k < row_ptr[i + 1], columns ascending; local_rows + 1 row
 * pointers. Diagonal-block columns are local (global - col_begin);
 * off-diagonal ones index the col_map (ascending global columns, *ncols_map
 * of them; col_map and ncols_map may be NULL). Values have the matrix's
 * type and may be written. Valid until the next commit, reset or free. */
accrete_status accrete_sparse_block(accrete_sparse a, int offdiag, const int64_t** row_ptr, const int32_t** col,
                                    void** value, int64_t* nnz, const int64_t** col_map, int64_t* ncols_map);
/** The stored A(i, j) of a row of this process (zero outside the pattern). */
accrete_status accrete_sparse_get(accrete_sparse a, int64_t i, int64_t j, void* value);

/* ---- dist_array (every dtype) and counter --------------------------------------- */

/** A handle to a rows x cols array dealt over every process (grid part p on rank p); see
 * accrete/array/dist_array.hpp. Patches are half-open: rows [row_lo, row_hi),
 * columns [col_lo, col_hi); an empty patch is allowed. For prows = pcols = 0
 * the block and element-cyclic forms pick the squarest grid. */
typedef struct accrete_array_s* accrete_array;

/** Collective. Global Arrays' regular distribution: near-equal contiguous blocks. */
accrete_status accrete_array_create_block(accrete_array* out, accrete_dtype dtype, int64_t rows, int64_t cols,
                                          int prows, int pcols);
/** Collective. Like NGA_Create_irreg: row_bounds[0..nrb] and col_bounds[0..ncb]
 * are ascending block boundaries from 0 to rows / cols (nrb x ncb parts,
 * nrb * ncb == number of processes). */
accrete_status accrete_array_create_irregular(accrete_array* out, accrete_dtype dtype, const int64_t* row_bounds,
                                              int nrb, const int64_t* col_bounds, int ncb);
/** Collective. ScaLAPACK 2D block-cyclic (mb x nb blocks, source process 0). */
accrete_status accrete_array_create_block_cyclic(accrete_array* out, accrete_dtype dtype, int64_t rows,
                                                 int64_t cols, int64_t mb, int64_t nb, int prows, int pcols);
/** Collective. Elemental's [MC,MR]: element (i, j) on part (i % prows, j % pcols). */
accrete_status accrete_array_create_element_cyclic(accrete_array* out, accrete_dtype dtype, int64_t rows,
                                                   int64_t cols, int prows, int pcols);
/** Collective. */
accrete_status accrete_array_free(accrete_array* a);

/** *rows, *cols = the global shape (outputs may be NULL). */
accrete_status accrete_array_shape(accrete_array a, int64_t* rows, int64_t* cols);
/** The rank that owns element (i, j). */
accrete_status accrete_array_locate(accrete_array a, int64_t i, int64_t j, int* rank);

/** Returns once buf may be reused; visible to others after accrete_array_flush. */
accrete_status accrete_array_put(accrete_array a, int64_t row_lo, int64_t row_hi, int64_t col_lo, int64_t col_hi,
                                 const void* buf, int64_t ld);
/** Returns with the data in buf. */
accrete_status accrete_array_get(accrete_array a, int64_t row_lo, int64_t row_hi, int64_t col_lo, int64_t col_hi,
                                 void* buf, int64_t ld);
/** A[patch] += alpha * buf, atomic per element with respect to every other
 * acc; alpha points at one element of the array's type (NULL means 1). */
accrete_status accrete_array_acc(accrete_array a, int64_t row_lo, int64_t row_hi, int64_t col_lo, int64_t col_hi,
                                 const void* buf, int64_t ld, const void* alpha);
/** Remote completion of this process's puts and accs (to every rank). */
accrete_status accrete_array_flush(accrete_array a);
/** Collective: every process's operations complete, then a barrier (GA_Sync). */
accrete_status accrete_array_sync(accrete_array a);
/** Collective. */
accrete_status accrete_array_zero(accrete_array a);
/** Zero-copy: this process's part, column-major, ld *lld, local_rows x local_cols
 * (outputs may be NULL). Pair with accrete_array_release (read only) or
 * accrete_array_release_update (written). */
accrete_status accrete_array_access(accrete_array a, void** local, int64_t* lld, int64_t* local_rows,
                                    int64_t* local_cols);
/** Ends accrete_array_access; the part was only read. */
accrete_status accrete_array_release(accrete_array a);
/** Ends accrete_array_access; the part was written (later remote reads
 * after the next accrete_array_sync see the writes). */
accrete_status accrete_array_release_update(accrete_array a);
/** The size of this process's part (outputs may be NULL); no communication. */
accrete_status accrete_array_local_shape(accrete_array a, int64_t* local_rows, int64_t* local_cols);
/** As accrete_matrix_local_indices: local element (li, lj) of the part that
 * accrete_array_access gives is A(rows[li], cols[lj]). */
accrete_status accrete_array_local_indices(accrete_array a, int64_t* rows, int64_t* cols);
/** Collective: Frobenius norm. */
accrete_status accrete_array_norm(accrete_array a, double* norm);
/** Collective MPI-IO, the convergent_matrix file format. */
accrete_status accrete_array_save(accrete_array a, const char* path);
/** Collective: reads a file accrete_array_save or accrete_matrix_save wrote
 * (any distribution); the type and shape must match. */
accrete_status accrete_array_load(accrete_array a, const char* path);

/** One global 64-bit integer (NGA_Read_inc). create, reset and free are collective. */
typedef struct accrete_counter_s* accrete_counter;
/** Collective: a counter holding `initial`. */
accrete_status accrete_counter_create(accrete_counter* out, int64_t initial);
/** Collective: frees it (*c becomes NULL). */
accrete_status accrete_counter_free(accrete_counter* c);
/** *old = value; value += n, atomically with respect to every other fetch_add. */
accrete_status accrete_counter_fetch_add(accrete_counter c, int64_t n, int64_t* old);
/** Collective: every earlier fetch_add is done, then the value is `value`. */
accrete_status accrete_counter_reset(accrete_counter c, int64_t value);

#ifdef __cplusplus
}
#endif

#endif /* ACCRETE_C_ACCRETE_H */
