/* The C API of the sparse matrix (accrete_sparse_*) under mpiexec -n P,
 * checked exactly against a dense reference every process computes from
 * every process's elements: uneven row ranges (rank 1 owns none when
 * P >= 3), elements with repeated indices, rows nobody touches, several
 * rounds on the frozen pattern, a growing pattern, double and float
 * complex, column- and row-major blocks, and the error paths' codes and
 * messages. */
#include <complex.h>
#include <mpi.h>
#include <stdlib.h>

#include "c_checks.h"

enum { elements_per_rank = 40, ne = 4 };

static int64_t local_rows_of(int p) { return (np >= 3 && p == 1) ? 0 : 3 + p % 3; }

/* A small deterministic generator (each rank's elements from its seed). */
static uint64_t next(uint64_t* s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 33;
}

/* Element e of rank p: ne global rows (repeats allowed; the last row, M - 1,
 * and row 0 are never used, so they stay empty) and the values, multiples
 * of 1/4 (exact sums in float). In round `round` the values are scaled by
 * round + 1. */
static void element(int p, int e, int64_t m, int round, int64_t* ix, double* v) {
  uint64_t s = (uint64_t)(p * 1000 + e) * 2654435761u + 17;
  for (int a = 0; a < ne; ++a) ix[a] = 1 + (int64_t)(next(&s) % (uint64_t)(m - 2));
  for (int k = 0; k < ne * ne; ++k) v[k] = 0.25 * (double)(1 + next(&s) % 13) * (round + 1);
}

/* The reference rows [r0, r1) x all columns (row-major), summed over every
 * process's elements, and whether each entry was touched. */
static void reference(int64_t m, int64_t n, int64_t r0, int64_t r1, int round, double* ref, char* touched) {
  memset(ref, 0, sizeof(double) * (size_t)((r1 - r0) * n));
  memset(touched, 0, (size_t)((r1 - r0) * n));
  int64_t ix[ne];
  double v[ne * ne];
  for (int p = 0; p < np; ++p)
    for (int e = 0; e < elements_per_rank; ++e) {
      element(p, e, m, round, ix, v);
      for (int a = 0; a < ne; ++a)
        for (int b = 0; b < ne; ++b)
          if (ix[a] >= r0 && ix[a] < r1) {
            ref[(ix[a] - r0) * n + ix[b]] += v[a + b * ne]; /* column-major element */
            touched[(ix[a] - r0) * n + ix[b]] = 1;
          }
    }
}

/* This process's elements of `round`: column-major blocks for double,
 * row-major for complex (value v - (v/2) i). */
static void assemble(accrete_sparse A, accrete_dtype t, int64_t m, int round) {
  int64_t ix[ne];
  double v[ne * ne];
  for (int e = 0; e < elements_per_rank; ++e) {
    element(me, e, m, round, ix, v);
    if (t == ACCRETE_DOUBLE) {
      OK(accrete_sparse_update(A, v, ne, ix, ne, ix, ne, ACCRETE_COL_MAJOR));
    } else {
      float complex zf[ne * ne];
      for (int a = 0; a < ne; ++a)
        for (int b = 0; b < ne; ++b) zf[a * ne + b] = (float)v[a + b * ne] - (float)(v[a + b * ne] / 2) * I;
      OK(accrete_sparse_update(A, zf, ne, ix, ne, ix, ne, ACCRETE_ROW_MAJOR));
    }
  }
}

/* The committed rows of A against the reference: every entry of both
 * blocks, the pattern (exactly the touched entries), and get(). */
static void check_rows(accrete_sparse A, accrete_dtype t, int64_t m, int round) {
  int64_t mm, n, r0, r1, c0, c1;
  OK(accrete_sparse_ranges(A, &mm, &n, &r0, &r1, &c0, &c1));
  CHECK(mm == m);
  double* ref = calloc((size_t)((r1 - r0) * n + 1), sizeof(double));
  char* touched = calloc((size_t)((r1 - r0) * n + 1), 1);
  double* got = calloc((size_t)((r1 - r0) * n + 1), sizeof(double));
  char* stored = calloc((size_t)((r1 - r0) * n + 1), 1);
  reference(m, n, r0, r1, round, ref, touched);
  for (int off = 0; off < 2; ++off) {
    const int64_t *ptr = NULL, *map = NULL;
    const int32_t* col = NULL;
    void* val = NULL;
    int64_t nnz = -1, nmap = -1;
    OK(accrete_sparse_block(A, off, &ptr, &col, &val, &nnz, &map, &nmap));
    if (ptr == NULL) continue;
    CHECK(ptr[r1 - r0] == nnz);
    for (int64_t i = 0; i < r1 - r0; ++i)
      for (int64_t k = ptr[i]; k < ptr[i + 1]; ++k) {
        const int64_t j = off ? map[col[k]] : c0 + col[k];
        CHECK(j >= 0 && j < n && (off ? (j < c0 || j >= c1) : (j >= c0 && j < c1)));
        if (k > ptr[i]) CHECK(col[k] > col[k - 1]); /* ascending */
        CHECK(!stored[i * n + j]);
        stored[i * n + j] = 1;
        if (t == ACCRETE_DOUBLE) {
          got[i * n + j] = ((double*)val)[k];
        } else {
          const float complex z = ((float complex*)val)[k];
          got[i * n + j] = crealf(z);
          CHECK(cimagf(z) == -(float)(ref[i * n + j] / 2));
        }
      }
    for (int64_t k = 1; off && k < nmap; ++k) CHECK(map[k] > map[k - 1]);
  }
  long bad = 0;
  for (int64_t x = 0; x < (r1 - r0) * n; ++x) {
    if (stored[x] != touched[x]) ++bad;
    if (got[x] != ref[x]) ++bad;
  }
  CHECK(bad == 0);
  if (r1 > r0) {
    double g = -1;
    float complex gz = -1;
    void* out = t == ACCRETE_DOUBLE ? (void*)&g : (void*)&gz;
    for (int64_t j = 0; j < n; ++j) {
      OK(accrete_sparse_get(A, r0, j, out));
      CHECK((t == ACCRETE_DOUBLE ? g : (double)crealf(gz)) == ref[j]);
    }
  }
  free(ref);
  free(touched);
  free(got);
  free(stored);
}

static int64_t total_rows(void) {
  int64_t m = 0;
  for (int p = 0; p < np; ++p) m += local_rows_of(p);
  return m;
}

static void test_rounds(accrete_dtype t) {
  const int64_t m = total_rows();
  accrete_sparse A = NULL;
  OK(accrete_sparse_create(&A, t, local_rows_of(me), local_rows_of(me), NULL));
  for (int round = 0; round < 3; ++round) {
    if (round > 0) OK(accrete_sparse_reset(A));
    assemble(A, t, m, round);
    OK(accrete_sparse_commit(A));
    check_rows(A, t, m, round);
  }
  /* Row 0 and row M - 1 are outside the pattern: every process, owner or
   * not, is told before anything is applied. */
  OK(accrete_sparse_reset(A));
  {
    const double one[1] = {1};
    const float complex onez[1] = {1};
    const int64_t i0[1] = {0};
    FAILS(accrete_sparse_update(A, t == ACCRETE_DOUBLE ? (const void*)one : (const void*)onez, 1, i0, 1, i0, 1,
                                ACCRETE_COL_MAJOR),
          ACCRETE_ERR_STATE, "(row 0, column 0)");
    CHECK(strstr(accrete_last_error(), "accrete_sparse_update: ") == accrete_last_error());
  }
  OK(accrete_sparse_commit(A));
  check_rows(A, t, m, -1); /* nothing applied: every value zero */
  OK(accrete_sparse_free(&A));
  CHECK(A == NULL);
}

/* A growing pattern: round 1 adds entries (row 0 and row M - 1, from rank
 * 0) that round 0 did not have. */
static void test_growing(void) {
  const int64_t m = total_rows();
  accrete_sparse_options o;
  OK(accrete_sparse_default_options(&o));
  CHECK(o.growing_pattern == 0 && o.cache_slots == 1 && o.reproducible == 0 && o.merge == ACCRETE_MERGE_SUM);
  o.growing_pattern = 1;
  accrete_sparse A = NULL;
  OK(accrete_sparse_create(&A, ACCRETE_DOUBLE, local_rows_of(me), local_rows_of(me), &o));
  assemble(A, ACCRETE_DOUBLE, m, 0);
  OK(accrete_sparse_commit(A));
  check_rows(A, ACCRETE_DOUBLE, m, 0);
  OK(accrete_sparse_reopen(A));
  const int64_t corners[2] = {0, m - 1};
  const double v[4] = {1.5, 2.5, 3.5, 4.5};
  if (me == 0) OK(accrete_sparse_update(A, v, 2, corners, 2, corners, 2, ACCRETE_COL_MAJOR));
  OK(accrete_sparse_commit(A));
  int64_t r0, r1, n;
  OK(accrete_sparse_ranges(A, NULL, &n, &r0, &r1, NULL, NULL));
  for (int a = 0; a < 2; ++a)
    if (corners[a] >= r0 && corners[a] < r1)
      for (int b = 0; b < 2; ++b) {
        double g = 0;
        OK(accrete_sparse_get(A, corners[a], corners[b], &g));
        CHECK(g == v[a + 2 * b]);
      }
  OK(accrete_sparse_free(&A));
}

static void test_errors(void) {
  accrete_sparse A = NULL;
  /* The same bad argument everywhere: every process reports it. */
  FAILS(accrete_sparse_create(&A, ACCRETE_INT32, 2, 2, NULL), ACCRETE_ERR_ARG,
        "accrete_sparse_create: dtype = 4: a sparse matrix holds a floating-point type");
  CHECK(A == NULL);
  accrete_sparse_options o;
  OK(accrete_sparse_default_options(&o));
  o.merge = 7;
  FAILS(accrete_sparse_create(&A, ACCRETE_DOUBLE, 2, 2, &o), ACCRETE_ERR_ARG, "merge = 7 is not an accrete_merge");
  FAILS(accrete_sparse_create(&A, ACCRETE_DOUBLE, -1, 2, NULL), ACCRETE_ERR_ARG, "local_rows = -1 is negative");
  OK(accrete_sparse_create(&A, ACCRETE_DOUBLE, 2, 2, NULL));
  const int64_t m = 2 * np, rows[2] = {0, m}, good[2] = {0, 1};
  const double v[4] = {1, 2, 3, 4};
  FAILS(accrete_sparse_update(A, v, 2, rows, 2, good, 2, ACCRETE_COL_MAJOR), ACCRETE_ERR_ARG, "row");
  FAILS(accrete_sparse_update(A, v, 1, good, 2, good, 2, ACCRETE_COL_MAJOR), ACCRETE_ERR_ARG, "leading dimension 1");
  FAILS(accrete_sparse_update(A, v, 2, good, 2, good, 2, (accrete_layout)5), ACCRETE_ERR_ARG, "layout = 5");
  FAILS(accrete_sparse_update(A, v, 2, NULL, 2, good, 2, ACCRETE_COL_MAJOR), ACCRETE_ERR_ARG, "null rows");
  OK(accrete_sparse_update(A, v, 2, good, 2, good, 2, ACCRETE_COL_MAJOR));
  OK(accrete_sparse_commit(A));
  FAILS(accrete_sparse_block(A, 2, NULL, NULL, NULL, NULL, NULL, NULL), ACCRETE_ERR_ARG, "offdiag = 2");
  double g;
  FAILS(accrete_sparse_get(A, m, 0, &g), ACCRETE_ERR_ARG, "row");
  FAILS(accrete_sparse_get(A, 2 * me, 0, NULL), ACCRETE_ERR_ARG, "null output pointer");
  OK(accrete_sparse_free(&A));
  FAILS(accrete_sparse_commit(NULL), ACCRETE_ERR_ARG, "null handle");
  FAILS(accrete_sparse_free(&A), ACCRETE_ERR_ARG, "null handle");
}

int main(int argc, char** argv) {
  (void)argc;
  (void)argv;
  OK(accrete_init());
  OK(accrete_rank_me(&me));
  OK(accrete_rank_n(&np));
  test_rounds(ACCRETE_DOUBLE);
  test_rounds(ACCRETE_COMPLEX_FLOAT);
  test_growing();
  test_errors();
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  OK(accrete_finalize());
  if (me == 0) printf("c_sparse_test: %d processes, %s\n", np, all ? "FAILED" : "passed");
  return failures ? 1 : 0;
}
