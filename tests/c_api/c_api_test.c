/* The C API (accrete/c/accrete.h) under mpiexec -n P, checked exactly
 * against serial references every process computes: convergent_matrix
 * (float, double; col- and row-major; symmetric; save/load), dist_array in
 * every distribution (put/get/acc, access/release, norm, a convergent_matrix
 * file loaded into it), the counter handing out every task once, and every
 * error path's code and message. With --user-mpi the program initialises
 * MPI itself, and accrete must leave it initialised after finalize. */
#include <complex.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accrete/c/accrete.h"
#include "c_checks.h"

/* Files of this run (ctest runs several P at once in one directory). */
static char path_f[64], path_d[64];

/* ScaLAPACK local-to-global index (source process 0). */
static int64_t l2g(int64_t l, int64_t nb, int p, int nprocs) { return (l / nb) * nb * nprocs + p * nb + l % nb; }

/* Every process's contribution to element (i, j) of the test matrix. */
static double contribution(int p, int64_t i, int64_t j) { return 0.25 * (double)((i * 7 + j * 3 + p) % 11 + 1); }

static void test_runtime(void) {
  int r = -1, n = -1, mr, mn;
  OK(accrete_rank_me(&r));
  OK(accrete_rank_n(&n));
  MPI_Comm_rank(MPI_COMM_WORLD, &mr);
  MPI_Comm_size(MPI_COMM_WORLD, &mn);
  CHECK(r == mr && n == mn);
  CHECK(accrete_initialized() == 1);
  FAILS(accrete_init(), ACCRETE_ERR_STATE, "init");
  FAILS(accrete_rank_me(NULL), ACCRETE_ERR_ARG, "null output pointer");
  OK(accrete_barrier());
}

/* Each process adds contribution(p, i, j) to every element of an m x n
 * matrix through updates of a few rows and columns at a time (with a
 * repeated row), in both layouts; then the whole matrix is read back. */
static void test_matrix(accrete_dtype dt) {
  const int64_t m = 37, n = 29, mb = 4, nb = 3;
  accrete_matrix A = NULL;
  accrete_matrix_options o;
  OK(accrete_matrix_default_options(&o));
  o.buffer_cap = 4096; /* small: forces several flushes per round */
  OK(accrete_matrix_create(&A, dt, m, n, 0, 0, mb, nb, &o));
  const size_t es = dt == ACCRETE_FLOAT ? sizeof(float) : sizeof(double);
  /* Row blocks of 5 rows (the first repeated: it adds twice) x 4 columns. */
  for (int64_t r0 = 0; r0 < m; r0 += 4) {
    for (int64_t c0 = 0; c0 < n; c0 += 4) {
      int64_t rows[5], cols[4];
      int nr = 0, nc = 0;
      for (int64_t i = r0; i < r0 + 4 && i < m; ++i) rows[nr++] = i;
      for (int64_t j = c0; j < c0 + 4 && j < n; ++j) cols[nc++] = j;
      rows[nr] = rows[0];
      ++nr;
      double blk[5 * 4];
      float blkf[5 * 4];
      const int row_major = (r0 / 4 + c0 / 4) % 2; /* alternate layouts */
      for (int a = 0; a < nr; ++a)
        for (int b = 0; b < nc; ++b) {
          /* The repeated row carries half, so the two halves add to one contribution. */
          const int rep = a == 0 || a == nr - 1;
          const double v = contribution(me, rows[a], cols[b]) * (rep ? 0.5 : 1.0);
          const int k = row_major ? a * nc + b : a + b * nr;
          blk[k] = v;
          blkf[k] = (float)v;
        }
      OK(accrete_matrix_update(A, dt == ACCRETE_FLOAT ? (const void*)blkf : (const void*)blk,
                               row_major ? nc : nr, rows, nr, cols, nc,
                               row_major ? ACCRETE_ROW_MAJOR : ACCRETE_COL_MAJOR));
    }
  }
  OK(accrete_matrix_commit(A));

  /* The local part, against the reference. */
  void* loc = NULL;
  int64_t lld = 0, lr = 0, lc = 0;
  int desc[9];
  OK(accrete_matrix_local(A, &loc, &lld, &lr, &lc));
  OK(accrete_matrix_descriptor(A, desc));
  CHECK(desc[2] == m && desc[3] == n && desc[4] == mb && desc[5] == nb && desc[8] == lld);
  int nprow = 1, npcol = np;
  for (int d = 1; d * d <= np; ++d)
    if (np % d == 0) nprow = d;
  npcol = np / nprow;
  const int myrow = me / npcol, mycol = me % npcol;
  int64_t bad = 0;
  for (int64_t c = 0; c < lc; ++c)
    for (int64_t r = 0; r < lr; ++r) {
      const int64_t i = l2g(r, mb, myrow, nprow), j = l2g(c, nb, mycol, npcol);
      double want = 0;
      for (int p = 0; p < np; ++p) want += contribution(p, i, j);
      const double got = dt == ACCRETE_FLOAT ? ((float*)loc)[r + c * lld] : ((double*)loc)[r + c * lld];
      bad += got != want;
    }
  CHECK(bad == 0);
  /* One element read from its owner. */
  double g = 0;
  float gf = 0;
  OK(accrete_matrix_get(A, m - 1, 0, dt == ACCRETE_FLOAT ? (void*)&gf : (void*)&g));
  double want = 0;
  for (int p = 0; p < np; ++p) want += contribution(p, m - 1, 0);
  CHECK((dt == ACCRETE_FLOAT ? gf : g) == want);

  /* Bad input: nothing applied, a code and a message naming the value. */
  const int64_t rows_bad[2] = {0, m}, cols_ok[1] = {0};
  double one[2] = {1, 1};
  OK(accrete_matrix_reopen(A));
  FAILS(accrete_matrix_update(A, one, 2, rows_bad, 2, cols_ok, 1, ACCRETE_COL_MAJOR), ACCRETE_ERR_ARG, "37");
  FAILS(accrete_matrix_update(A, one, 2, rows_bad, -1, cols_ok, 1, ACCRETE_COL_MAJOR), ACCRETE_ERR_ARG,
        "rows = -1");
  FAILS(accrete_matrix_update(A, one, 2, NULL, 2, cols_ok, 1, ACCRETE_COL_MAJOR), ACCRETE_ERR_ARG, "null rows");
  FAILS(accrete_matrix_update(A, one, 2, rows_bad, 1, cols_ok, 1, (accrete_layout)7), ACCRETE_ERR_ARG,
        "layout = 7");
  FAILS(accrete_matrix_update(NULL, one, 2, rows_bad, 1, cols_ok, 1, ACCRETE_COL_MAJOR), ACCRETE_ERR_ARG,
        "null handle");
  FAILS(accrete_matrix_fill_lower(A), ACCRETE_ERR_ARG, "37 x 29");
  OK(accrete_matrix_commit(A));
  /* The failed updates changed nothing. */
  OK(accrete_matrix_get(A, 0, 0, dt == ACCRETE_FLOAT ? (void*)&gf : (void*)&g));
  want = 0;
  for (int p = 0; p < np; ++p) want += contribution(p, 0, 0);
  CHECK((dt == ACCRETE_FLOAT ? gf : g) == want);

  /* save, then load into a fresh matrix of another grid and blocks. */
  const char* path = dt == ACCRETE_FLOAT ? path_f : path_d;
  OK(accrete_matrix_save(A, path));
  accrete_matrix B = NULL;
  OK(accrete_matrix_create(&B, dt, m, n, 1, np, 5, 2, NULL));
  OK(accrete_matrix_load(B, path));
  bad = 0;
  for (int64_t i = me; i < m; i += np)
    for (int64_t j = 0; j < n; ++j) {
      double x = 0, y = 0;
      float xf = 0, yf = 0;
      OK(accrete_matrix_get(A, i, j, dt == ACCRETE_FLOAT ? (void*)&xf : (void*)&x));
      OK(accrete_matrix_get(B, i, j, dt == ACCRETE_FLOAT ? (void*)&yf : (void*)&y));
      bad += dt == ACCRETE_FLOAT ? xf != yf : x != y;
    }
  CHECK(bad == 0);
  accrete_matrix W = NULL;
  OK(accrete_matrix_create(&W, dt, m + 1, n, 0, 0, mb, nb, NULL));
  FAILS(accrete_matrix_load(W, path), ACCRETE_ERR_IO, path);
  OK(accrete_matrix_free(&W));
  CHECK(W == NULL);
  OK(accrete_matrix_free(&B));
  OK(accrete_matrix_free(&A));
  (void)es;
}

/* update_symmetric + fill_lower: the upper triangle mirrored. */
static void test_symmetric(void) {
  const int64_t n = 23;
  accrete_matrix S = NULL;
  OK(accrete_matrix_create(&S, ACCRETE_DOUBLE, n, n, 0, 0, 4, 4, NULL));
  int64_t ix[6];
  double blk[36];
  for (int a = 0; a < 6; ++a) ix[a] = (me * 5 + a * 4) % n;
  for (int a = 0; a < 6; ++a)
    for (int b = 0; b < 6; ++b) blk[a + 6 * b] = 0.25 * (1 + (ix[a] + ix[b]) % 5);
  OK(accrete_matrix_update_symmetric(S, blk, 6, ix, 6, ACCRETE_COL_MAJOR));
  OK(accrete_matrix_commit(S));
  OK(accrete_matrix_fill_lower(S));
  /* Reference: every process's upper-triangle contributions, mirrored. */
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const int64_t u = i < j ? i : j, v = i < j ? j : i;
      double want = 0;
      for (int p = 0; p < np; ++p) {
        int64_t px[6];
        for (int a = 0; a < 6; ++a) px[a] = (p * 5 + a * 4) % n;
        for (int a = 0; a < 6; ++a)
          for (int b = 0; b < 6; ++b)
            if (px[a] == u && px[b] == v && px[a] <= px[b]) want += 0.25 * (1 + (px[a] + px[b]) % 5);
      }
      double got = -1;
      if ((i * n + j) % np == me) {
        OK(accrete_matrix_get(S, i, j, &got));
        bad += got != want;
      }
    }
  CHECK(bad == 0);
  OK(accrete_matrix_free(&S));
}

/* The value of element (i, j) in the array tests. */
/* merge = MAX and MIN, the reproducible flag, and a bad merge value. Every
 * process sends (p + 1) * (i + j) to element (i, j), negated on odd ranks. */
static void test_merge_and_reproducible(void) {
  accrete_matrix_options o;
  OK(accrete_matrix_default_options(&o));
  CHECK(o.merge == ACCRETE_MERGE_SUM && o.reproducible == 0);
  o.merge = 7;
  accrete_matrix A = NULL;
  FAILS(accrete_matrix_create(&A, ACCRETE_DOUBLE, 5, 5, 0, 0, 2, 2, &o), ACCRETE_ERR_ARG, "merge = 7");
  for (int op = ACCRETE_MERGE_MAX; op <= ACCRETE_MERGE_MIN; ++op) {
    o.merge = op;
    o.reproducible = 1; /* no effect on max and min, which are order-independent already */
    OK(accrete_matrix_create(&A, ACCRETE_DOUBLE, 5, 5, 0, 0, 2, 2, &o));
    int64_t rows[5] = {0, 1, 2, 3, 4};
    double blk[25];
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 5; ++j) blk[i + 5 * j] = (me % 2 ? -1.0 : 1.0) * (me + 1) * (i + j);
    OK(accrete_matrix_update(A, blk, 5, rows, 5, rows, 5, ACCRETE_COL_MAJOR));
    OK(accrete_matrix_commit(A));
    /* Storage starts at zero, so max >= 0 and min <= 0. */
    const int top_even = (np - 1) / 2 * 2, top_odd = np > 1 ? (np - 2) / 2 * 2 + 1 : -1;
    for (int i = 0; i < 5; ++i) {
      double got = 0;
      OK(accrete_matrix_get(A, i, 4 - i, &got));
      const double want = op == ACCRETE_MERGE_MAX ? (top_even + 1) * 4.0 : (top_odd >= 0 ? -(top_odd + 1) * 4.0 : 0.0);
      CHECK(got == want);
    }
    OK(accrete_matrix_free(&A));
  }
}

/* A complex matrix with whole-update atomicity: every process adds
 * (p + 1)(1 + 2i) to all of a 6 x 5 matrix in one update, so a snapshot of
 * a part shows equal elements; after commit each is sum (p + 1)(1 + 2i).
 * Then MAX on complex and atomic + reproducible are rejected. */
static void test_complex_and_atomic(void) {
  accrete_matrix_options o;
  OK(accrete_matrix_default_options(&o));
  CHECK(o.atomic_updates == 0);
  o.atomic_updates = 1;
  accrete_matrix A = NULL;
  OK(accrete_matrix_create(&A, ACCRETE_COMPLEX_DOUBLE, 6, 5, 0, 0, 2, 2, &o));
  int64_t rows[6] = {5, 0, 3, 1, 4, 2}, cols[5] = {4, 2, 0, 3, 1};
  double _Complex blk[30];
  for (int k = 0; k < 30; ++k) blk[k] = (me + 1) * (1.0 + 2.0 * I);
  OK(accrete_matrix_update(A, blk, 6, rows, 6, cols, 5, ACCRETE_COL_MAJOR));
  int64_t lld = 0, lr = 0, lc = 0;
  OK(accrete_matrix_local(A, NULL, &lld, &lr, &lc));
  double _Complex* snap = malloc(sizeof(double _Complex) * (size_t)(lld * lc + 1));
  OK(accrete_matrix_snapshot_local(A, snap, lld * lc));
  for (int64_t j = 0; j < lc; ++j)
    for (int64_t i = 0; i < lr; ++i) CHECK(snap[i + j * lld] == snap[0]);
  if (lld * lc > 1) FAILS(accrete_matrix_snapshot_local(A, snap, 1), ACCRETE_ERR_ARG, "dst has 1 elements");
  free(snap);
  OK(accrete_matrix_commit(A));
  const double tri = np * (np + 1) / 2.0;
  for (int64_t i = 0; i < 6; ++i) {
    double _Complex v = 0;
    OK(accrete_matrix_get(A, i, (i + me) % 5, &v));
    CHECK(creal(v) == tri && cimag(v) == 2 * tri);
  }
  OK(accrete_matrix_free(&A));
  o.reproducible = 1;
  FAILS(accrete_matrix_create(&A, ACCRETE_COMPLEX_FLOAT, 4, 4, 0, 0, 2, 2, &o), ACCRETE_ERR_ARG, "atomic_updates");
  o.reproducible = 0;
  o.atomic_updates = 0;
  o.merge = ACCRETE_MERGE_MAX;
  FAILS(accrete_matrix_create(&A, ACCRETE_COMPLEX_FLOAT, 4, 4, 0, 0, 2, 2, &o), ACCRETE_ERR_ARG, "no order");
}

static double aval(int64_t i, int64_t j) { return 0.25 * (double)((i * 13 + j * 5) % 17); }

typedef struct {
  const char* name;
  accrete_array a;
} named_array;

static void check_array(accrete_array A, accrete_dtype dt, int64_t rows, int64_t cols, double scale_add) {
  /* A patch crossing owners, read back; element (i, j) must be aval + scale_add. */
  const int64_t r0 = me % 3, r1 = rows - (me % 2), c0 = 1, c1 = cols;
  const int64_t pr = r1 - r0, pc = c1 - c0, ld = pr + 2;
  void* buf = calloc((size_t)(ld * pc), 16);
  OK(accrete_array_get(A, r0, r1, c0, c1, buf, ld));
  int64_t bad = 0;
  for (int64_t j = 0; j < pc; ++j)
    for (int64_t i = 0; i < pr; ++i) {
      const double want = aval(r0 + i, c0 + j) + scale_add;
      const int64_t k = i + j * ld;
      double got;
      switch (dt) {
        case ACCRETE_DOUBLE: got = ((double*)buf)[k]; break;
        case ACCRETE_INT64: got = (double)((int64_t*)buf)[k]; break;
        default: got = creal(((double complex*)buf)[k]) + cimag(((double complex*)buf)[k]); break;
      }
      bad += got != want;
    }
  CHECK(bad == 0);
  free(buf);
}

static void test_array_kind(accrete_array A, accrete_dtype dt) {
  int64_t rows = 0, cols = 0;
  OK(accrete_array_shape(A, &rows, &cols));
  const size_t es = dt == ACCRETE_DOUBLE || dt == ACCRETE_INT64 ? 8 : 16;
  /* Rank 0 puts the whole array: aval (multiples of 0.25) for double,
   * aval/2 + i aval/2 for complex (checked as real + imaginary), and
   * 4 aval (integral) for int64. */
  void* full = malloc((size_t)(rows * cols) * es);
  for (int64_t j = 0; j < cols; ++j)
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t k = i + j * rows;
      const double v = aval(i, j);
      if (dt == ACCRETE_DOUBLE) ((double*)full)[k] = v;
      else if (dt == ACCRETE_INT64) ((int64_t*)full)[k] = (int64_t)(4 * v);
      else ((double complex*)full)[k] = v * 0.5 + I * (v * 0.5);
    }
  if (me == 0) OK(accrete_array_put(A, 0, rows, 0, cols, full, rows));
  OK(accrete_array_flush(A));
  OK(accrete_array_sync(A));
  if (dt == ACCRETE_INT64) {
    int64_t* back = malloc((size_t)(rows * cols) * 8);
    OK(accrete_array_get(A, 0, rows, 0, cols, back, rows));
    int64_t bad = 0;
    for (int64_t k = 0; k < rows * cols; ++k) bad += back[k] != (int64_t)(4 * aval(k % rows, k / rows));
    CHECK(bad == 0);
    free(back);
  } else {
    check_array(A, dt, rows, cols, 0.0);
  }
  OK(accrete_array_sync(A));
  /* Every process adds (p + 1) * 0.25 (alpha = 0.25 or, for ints, 1) to every element. */
  for (int64_t k = 0; k < rows * cols; ++k) {
    if (dt == ACCRETE_DOUBLE) ((double*)full)[k] = me + 1;
    else if (dt == ACCRETE_INT64) ((int64_t*)full)[k] = me + 1;
    else ((double complex*)full)[k] = (me + 1) * 0.5 + I * ((me + 1) * 0.5);
  }
  const double alpha_d = 0.25;
  const int64_t alpha_i = 1;
  const double complex alpha_z = 0.25;
  const void* alpha = dt == ACCRETE_DOUBLE ? (const void*)&alpha_d
                      : dt == ACCRETE_INT64 ? (const void*)&alpha_i
                                            : (const void*)&alpha_z;
  OK(accrete_array_acc(A, 0, rows, 0, cols, full, rows, alpha));
  OK(accrete_array_flush(A));
  OK(accrete_array_sync(A));
  const double added = 0.25 * np * (np + 1) / 2.0;
  if (dt == ACCRETE_INT64) {
    int64_t* back = malloc((size_t)(rows * cols) * 8);
    OK(accrete_array_get(A, 0, rows, 0, cols, back, rows));
    int64_t bad = 0;
    for (int64_t k = 0; k < rows * cols; ++k)
      bad += back[k] != (int64_t)(4 * aval(k % rows, k / rows)) + np * (np + 1) / 2;
    CHECK(bad == 0);
    free(back);
  } else {
    check_array(A, dt, rows, cols, added);
  }
  /* access: the local part is zero-copy and sees the same values. */
  void* loc = NULL;
  int64_t lld = 0, lr = 0, lc = 0;
  OK(accrete_array_access(A, &loc, &lld, &lr, &lc));
  CHECK(lld >= (lr > 1 ? lr : 1));
  FAILS(accrete_array_access(A, &loc, NULL, NULL, NULL), ACCRETE_ERR_STATE, "already accessed");
  OK(accrete_array_release(A));
  FAILS(accrete_array_release(A), ACCRETE_ERR_STATE, "release without access");
  /* Bad patches and buffers: an error naming the bound, nothing moved. */
  double dummy[4] = {0};
  FAILS(accrete_array_put(A, 0, rows + 1, 0, 1, dummy, rows + 1), ACCRETE_ERR_ARG, "row_hi");
  FAILS(accrete_array_get(A, 2, 1, 0, 1, dummy, 1), ACCRETE_ERR_ARG, "row_hi");
  FAILS(accrete_array_acc(A, 0, 1, -1, 1, dummy, 1, NULL), ACCRETE_ERR_ARG, "col_lo");
  FAILS(accrete_array_put(A, 0, 2, 0, 1, NULL, 2), ACCRETE_ERR_ARG, "null buffer");
  FAILS(accrete_array_get(A, 0, 3, 0, 1, dummy, 2), ACCRETE_ERR_ARG, "ld = 2");
  OK(accrete_array_sync(A));
  free(full);
}

static void test_arrays(void) {
  const int64_t rows = 19, cols = 13;
  const accrete_dtype types[3] = {ACCRETE_DOUBLE, ACCRETE_INT64, ACCRETE_COMPLEX_DOUBLE};
  for (int t = 0; t < 3; ++t) {
    const accrete_dtype dt = types[t];
    named_array arrs[4] = {{"block", NULL}, {"irregular", NULL}, {"block_cyclic", NULL}, {"element_cyclic", NULL}};
    OK(accrete_array_create_block(&arrs[0].a, dt, rows, cols, 0, 0));
    /* Irregular: np row blocks of uneven heights, one column block. */
    int64_t rb[8], cb[2] = {0, cols};
    rb[0] = 0;
    for (int k = 1; k < np; ++k) rb[k] = k * 3 < rows ? k * 3 : rows;
    rb[np] = rows;
    OK(accrete_array_create_irregular(&arrs[1].a, dt, rb, np, cb, 1));
    OK(accrete_array_create_block_cyclic(&arrs[2].a, dt, rows, cols, 3, 2, 0, 0));
    OK(accrete_array_create_element_cyclic(&arrs[3].a, dt, rows, cols, 1, np));
    for (int k = 0; k < 4; ++k) {
      int owner = -1;
      OK(accrete_array_locate(arrs[k].a, rows - 1, cols - 1, &owner));
      CHECK(owner >= 0 && owner < np);
      test_array_kind(arrs[k].a, dt);
    }
    for (int k = 0; k < 4; ++k) OK(accrete_array_free(&arrs[k].a));
  }
  accrete_array bad = NULL;
  FAILS(accrete_array_create_block(&bad, (accrete_dtype)9, 4, 4, 0, 0), ACCRETE_ERR_ARG, "dtype = 9");
  FAILS(accrete_array_create_block_cyclic(&bad, ACCRETE_DOUBLE, 4, 4, 2, 2, np + 1, 1), ACCRETE_ERR_ARG, "");
  CHECK(bad == NULL);
}

/* A convergent_matrix file loads into a dist_array of the same shape; norm
 * is the Frobenius norm. */
static void test_matrix_file_into_array(void) {
  const int64_t m = 37, n = 29;
  accrete_array A = NULL;
  OK(accrete_array_create_block(&A, ACCRETE_DOUBLE, m, n, 0, 0));
  OK(accrete_array_load(A, path_d));
  double* all = malloc((size_t)(m * n) * sizeof(double));
  OK(accrete_array_get(A, 0, m, 0, n, all, m));
  int64_t bad = 0;
  double ss = 0;
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      double want = 0;
      for (int p = 0; p < np; ++p) want += contribution(p, i, j);
      bad += all[i + j * m] != want;
      ss += want * want;
    }
  CHECK(bad == 0);
  double nrm = -1;
  OK(accrete_array_norm(A, &nrm));
  CHECK(fabs(nrm - sqrt(ss)) <= 1e-12 * sqrt(ss));
  accrete_array W = NULL;
  OK(accrete_array_create_block(&W, ACCRETE_INT32, m, n, 0, 0));
  FAILS(accrete_array_load(W, path_d), ACCRETE_ERR_IO, path_d);
  OK(accrete_array_free(&W));
  OK(accrete_array_free(&A));
  free(all);
}

/* Every task handed out exactly once: each taker adds 1 to its task's slot. */
static void test_counter(void) {
  const int64_t tasks = 20000;
  accrete_counter C = NULL;
  accrete_array seen = NULL;
  OK(accrete_counter_create(&C, 0));
  OK(accrete_array_create_block(&seen, ACCRETE_INT64, tasks, 1, 0, 0));
  OK(accrete_array_zero(seen));
  int64_t t = 0, mine = 0;
  const int64_t one = 1;
  for (;;) {
    OK(accrete_counter_fetch_add(C, 1, &t));
    if (t >= tasks) break;
    OK(accrete_array_acc(seen, t, t + 1, 0, 1, &one, 1, NULL));
    ++mine;
  }
  OK(accrete_array_flush(seen));
  OK(accrete_array_sync(seen));
  int64_t total = 0;
  MPI_Allreduce(&mine, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  CHECK(total == tasks);
  if (me == 0) {
    int64_t* s = malloc((size_t)tasks * sizeof(int64_t));
    OK(accrete_array_get(seen, 0, tasks, 0, 1, s, tasks));
    int64_t bad = 0;
    for (int64_t k = 0; k < tasks; ++k) bad += s[k] != 1;
    CHECK(bad == 0);
    free(s);
  }
  OK(accrete_counter_reset(C, 100));
  OK(accrete_counter_fetch_add(C, 0, &t));
  CHECK(t == 100);
  OK(accrete_array_sync(seen));
  FAILS(accrete_counter_fetch_add(C, 1, NULL), ACCRETE_ERR_ARG, "null output pointer");
  OK(accrete_array_free(&seen));
  OK(accrete_counter_free(&C));
  FAILS(accrete_counter_free(&C), ACCRETE_ERR_ARG, "null handle");
}

/* Every local element is the global one its indices name: A(i, j) =
 * 1000 i + j, written through put / update, read in place. */
static void test_local_indices(void) {
  enum { M = 11, N = 5 };
  double all[M * N];
  int64_t ix[M], jx[N], rows[M], cols[N], lld = 0, lr = -1, lc = -1;
  for (int64_t j = 0; j < N; ++j) jx[j] = j;
  for (int64_t i = 0; i < M; ++i) ix[i] = i;
  for (int64_t j = 0; j < N; ++j)
    for (int64_t i = 0; i < M; ++i) all[i + j * M] = (double)(1000 * i + j);
  accrete_array A = NULL;
  CHECK(accrete_array_create_element_cyclic(&A, ACCRETE_DOUBLE, M, N, 0, 0) == ACCRETE_SUCCESS);
  if (me == 0) CHECK(accrete_array_put(A, 0, M, 0, N, all, M) == ACCRETE_SUCCESS);
  CHECK(accrete_array_sync(A) == ACCRETE_SUCCESS);
  double* part = NULL;
  CHECK(accrete_array_local_shape(A, &lr, &lc) == ACCRETE_SUCCESS);
  CHECK(accrete_array_local_indices(A, rows, cols) == ACCRETE_SUCCESS);
  CHECK(accrete_array_access(A, (void**)&part, &lld, NULL, NULL) == ACCRETE_SUCCESS);
  for (int64_t j = 0; j < lc; ++j)
    for (int64_t i = 0; i < lr; ++i) CHECK(part[i + j * lld] == all[rows[i] + cols[j] * M]);
  CHECK(accrete_array_release(A) == ACCRETE_SUCCESS);
  CHECK(accrete_array_free(&A) == ACCRETE_SUCCESS);
  accrete_matrix H = NULL;
  CHECK(accrete_matrix_create(&H, ACCRETE_DOUBLE, M, N, 0, 0, 3, 2, NULL) == ACCRETE_SUCCESS);
  if (me == 0) CHECK(accrete_matrix_update(H, all, M, ix, M, jx, N, ACCRETE_COL_MAJOR) == ACCRETE_SUCCESS);
  CHECK(accrete_matrix_commit(H) == ACCRETE_SUCCESS);
  CHECK(accrete_matrix_local(H, (void**)&part, &lld, &lr, &lc) == ACCRETE_SUCCESS);
  CHECK(accrete_matrix_local_indices(H, rows, NULL) == ACCRETE_SUCCESS);
  CHECK(accrete_matrix_local_indices(H, NULL, cols) == ACCRETE_SUCCESS);
  for (int64_t j = 0; j < lc; ++j)
    for (int64_t i = 0; i < lr; ++i) CHECK(part[i + j * lld] == all[rows[i] + cols[j] * M]);
  CHECK(accrete_matrix_free(&H) == ACCRETE_SUCCESS);
}

int main(int argc, char** argv) {
  const int user_mpi = argc > 1 && strcmp(argv[1], "--user-mpi") == 0;
  if (user_mpi) MPI_Init(&argc, &argv);
  if (accrete_init() != ACCRETE_SUCCESS) {
    fprintf(stderr, "accrete_init: %s\n", accrete_last_error());
    return 1;
  }
  OK(accrete_rank_me(&me));
  OK(accrete_rank_n(&np));
  snprintf(path_f, sizeof path_f, "c_api_test_%d%s_f.bin", np, user_mpi ? "u" : "");
  snprintf(path_d, sizeof path_d, "c_api_test_%d%s_d.bin", np, user_mpi ? "u" : "");
  test_runtime();
  test_matrix(ACCRETE_FLOAT);
  test_matrix(ACCRETE_DOUBLE);
  test_symmetric();
  test_merge_and_reproducible();
  test_complex_and_atomic();
  test_arrays();
  test_matrix_file_into_array();
  test_counter();
  test_local_indices();

  /* After finalize every call reports the state, and freeing is refused. */
  accrete_matrix late = NULL;
  OK(accrete_matrix_create(&late, ACCRETE_DOUBLE, 8, 8, 0, 0, 2, 2, NULL));
  int all_failures = 0;
  MPI_Allreduce(&failures, &all_failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (me == 0) {
    remove(path_f);
    remove(path_d);
  }
  OK(accrete_finalize());
  FAILS(accrete_matrix_commit(late), ACCRETE_ERR_STATE, "");
  FAILS(accrete_matrix_free(&late), ACCRETE_ERR_STATE, "accrete_finalize");
  FAILS(accrete_finalize(), ACCRETE_ERR_STATE, "not initialized");
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (user_mpi) {
    CHECK(!finalized);
    MPI_Finalize();
  } else {
    CHECK(finalized);
  }
  all_failures += failures; /* checks after finalize are local */
  if (me == 0 || failures) printf("c_api_test rank %d of %d: %d failure(s)%s\n", me, np, all_failures,
                                  user_mpi ? " (user-initialised MPI)" : "");
  return all_failures ? 1 : 0;
}
