/* Collective C calls whose arguments one process rejects, or that differ
 * between processes: every process must return an error (the rejecting one
 * ACCRETE_ERR_ARG with its own message, the others ACCRETE_ERR_STATE naming
 * its rank), none may wait forever, and the next valid call must work.
 * Then the queries of an array that outlived accrete_finalize. Run at
 * P >= 2 (at P = 1 there is nobody to disagree with). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accrete/c/accrete.h"
#include "c_checks.h"

/* A collective call that rank `odd` gives a bad argument: it must get
 * ACCRETE_ERR_ARG with `text` in its message; every other rank
 * ACCRETE_ERR_STATE naming rank `odd`. */
static void expect_refused(accrete_status st, int odd, const char* text, const char* what) {
  char want[64];
  snprintf(want, sizeof want, "rejected on rank %d", odd);
  const char* msg = accrete_last_error();
  if (me == odd) {
    if (st != ACCRETE_ERR_ARG || strstr(msg, text) == NULL) {
      ++failures;
      fprintf(stderr, "[%d] %s: returned %d with '%s' (want %d with '%s')\n", me, what, (int)st, msg,
              (int)ACCRETE_ERR_ARG, text);
    }
  } else if (st != ACCRETE_ERR_STATE || strstr(msg, want) == NULL) {
    ++failures;
    fprintf(stderr, "[%d] %s: returned %d with '%s' (want %d with '%s')\n", me, what, (int)st, msg,
            (int)ACCRETE_ERR_STATE, want);
  }
}

int main(int argc, char** argv) {
  (void)argc;
  (void)argv;
  if (accrete_init() != ACCRETE_SUCCESS) {
    fprintf(stderr, "accrete_init: %s\n", accrete_last_error());
    return 1;
  }
  accrete_rank_me(&me);
  accrete_rank_n(&np);
  const int odd = np - 1; /* the process that differs */

  /* convergent_matrix: merge = 7 on one process. */
  accrete_matrix_options o;
  accrete_matrix_default_options(&o);
  if (me == odd) o.merge = 7;
  accrete_matrix M = NULL;
  expect_refused(accrete_matrix_create(&M, ACCRETE_DOUBLE, 8, 8, 0, 0, 4, 4, &o), odd, "merge = 7",
                 "matrix merge = 7");
  CHECK(M == NULL);
  /* buffer_cap = 0 on one process. */
  accrete_matrix_default_options(&o);
  if (me == odd) o.buffer_cap = 0;
  expect_refused(accrete_matrix_create(&M, ACCRETE_DOUBLE, 8, 8, 0, 0, 4, 4, &o), odd, "buffer_cap = 0",
                 "matrix buffer_cap = 0");
  /* A grid that one process gets wrong. */
  expect_refused(accrete_matrix_create(&M, ACCRETE_DOUBLE, 8, 8, me == odd ? 7 : 0, me == odd ? 3 : 0, 4, 4, NULL),
                 odd, "grid 7 x 3 has 21 places", "matrix grid 7 x 3");
  /* A dtype only one process gets wrong, for a matrix and for arrays. */
  expect_refused(accrete_matrix_create(&M, me == odd ? (accrete_dtype)42 : ACCRETE_DOUBLE, 8, 8, 0, 0, 4, 4, NULL),
                 odd, "dtype = 42", "matrix dtype = 42");
  accrete_array A = NULL;
  expect_refused(accrete_array_create_block(&A, me == odd ? (accrete_dtype)42 : ACCRETE_FLOAT, 4, 4, 0, 0), odd,
                 "dtype = 42", "array dtype = 42");
  const int64_t bounds_ok[2] = {0, 4}, bounds_bad[2] = {0, -4};
  int64_t* cb = malloc(sizeof(int64_t) * (size_t)(np + 1));
  for (int k = 0; k <= np; ++k) cb[k] = k;
  expect_refused(accrete_array_create_irregular(&A, ACCRETE_DOUBLE, me == odd ? bounds_bad : bounds_ok, 1, cb, np),
                 odd, "-4", "array irregular bounds");
  expect_refused(accrete_array_create_block_cyclic(&A, ACCRETE_DOUBLE, 8, 8, me == odd ? 0 : 2, 2, 0, 0), odd,
                 "mb = 0", "array block_cyclic mb = 0");
  expect_refused(accrete_array_create_element_cyclic(&A, ACCRETE_DOUBLE, 8, 8, me == odd ? -1 : 0, 0), odd,
                 "grid -1 x 0", "array element_cyclic grid");
  CHECK(A == NULL);
  /* The counter: a null output handle on one process. */
  accrete_counter C = NULL;
  expect_refused(accrete_counter_create(me == odd ? NULL : &C, 0), odd, "null output handle", "counter null out");
  CHECK(C == NULL);

  /* Arguments that are each valid but differ: every process fails with
   * ACCRETE_ERR_STATE naming the argument. */
  accrete_status st = accrete_array_create_block(&A, ACCRETE_DOUBLE, 4, me == odd ? 40000 : 4, 0, 0);
  CHECK(st == ACCRETE_ERR_STATE && strstr(accrete_last_error(), "cols = 40000 on rank") != NULL);
  accrete_matrix_default_options(&o);
  o.reproducible = me == odd;
  st = accrete_matrix_create(&M, ACCRETE_DOUBLE, 8, 8, 0, 0, 4, 4, &o);
  CHECK(st == ACCRETE_ERR_STATE && strstr(accrete_last_error(), "reproducible") != NULL);
  st = accrete_counter_create(&C, me == odd ? 3 : 0);
  CHECK(st == ACCRETE_ERR_STATE && strstr(accrete_last_error(), "initial = 3 on rank") != NULL);

  /* Valid calls still work after all of that. */
  if (accrete_array_create_block(&A, ACCRETE_DOUBLE, 4, 4, 0, 0) != ACCRETE_SUCCESS) {
    ++failures;
    fprintf(stderr, "[%d] valid array create: %s\n", me, accrete_last_error());
  }
  if (accrete_counter_create(&C, 5) != ACCRETE_SUCCESS) {
    ++failures;
    fprintf(stderr, "[%d] valid counter create: %s\n", me, accrete_last_error());
  } else {
    accrete_barrier();
    int64_t old = -1;
    if (me == 0) CHECK(accrete_counter_fetch_add(C, 1, &old) == ACCRETE_SUCCESS && old == 5);
    accrete_barrier();
    CHECK(accrete_counter_free(&C) == ACCRETE_SUCCESS);
  }
  free(cb);

  /* The array outlives the runtime (kept on purpose): its queries report
   * ACCRETE_ERR_STATE, as the header says, instead of answering. */
  int failed_any = 0;
  MPI_Allreduce(&failures, &failed_any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  CHECK(accrete_finalize() == ACCRETE_SUCCESS);
  int64_t r = -1, c = -1;
  int rank = -1;
  CHECK(accrete_array_shape(A, &r, &c) == ACCRETE_ERR_STATE);
  CHECK(accrete_array_locate(A, 0, 0, &rank) == ACCRETE_ERR_STATE);
  CHECK(r == -1 && c == -1 && rank == -1);
  if (failures) fprintf(stderr, "[%d] c_agree_test: %d failures\n", me, failures);
  else if (me == 0 && !failed_any) printf("c_agree_test: all checks passed on %d processes\n", np);
  return failures || failed_any ? 1 : 0;
}
