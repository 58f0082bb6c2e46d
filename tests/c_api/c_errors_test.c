/* Every C entry point given bad input returns an error, and its message
 * speaks the C user's words: it starts with the function the user called,
 * names the bad value, and names no C++ class (the C user made none).
 * Collective calls fail on every process together. Run at P = 1 and 2. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <accrete/c/accrete.h>

#include "c_checks.h"

/* Names of the C++ layer a C message must not contain. */
static const char* const internal_words[] = {"accrete::", "block_cyclic", "process_grid", "axis", "shared_block",
                                             "array_core", "assembly_engine", "distribution", "detail", "std::"};

static void expect_error(accrete_status st, accrete_status code, const char* fn, const char* needle, int line) {
  const char* msg = accrete_last_error();
  int ok = st == code && strncmp(msg, fn, strlen(fn)) == 0 && msg[strlen(fn)] == ':' && strstr(msg, needle) != NULL;
  for (size_t i = 0; ok && i < sizeof internal_words / sizeof *internal_words; ++i)
    if (strstr(msg + strlen(fn), internal_words[i])) ok = 0; /* (accrete_array_create_block_cyclic) */
  if (!ok) {
    ++failures;
    fprintf(stderr, "[%d] line %d: %s returned %d (expected %d): \"%s\" (expected to start with \"%s:\", to "
                    "contain \"%s\" and no C++ name)\n", me, line, fn, (int)st, (int)code, msg, fn, needle);
  } else if (me == 0) {
    printf("%-36s %s\n", fn, msg);
  }
}
#define EXPECT_ARG(call, fn, needle) expect_error((call), ACCRETE_ERR_ARG, fn, needle, __LINE__)

int main(void) {
  CHECK(accrete_init() == ACCRETE_SUCCESS);
  accrete_rank_me(&me);
  accrete_rank_n(&np);

  /* ---- convergent_matrix -------------------------------------------------------- */
  accrete_matrix m = NULL;
  EXPECT_ARG(accrete_matrix_create(&m, ACCRETE_DOUBLE, -4, 8, 0, 0, 2, 2, NULL), "accrete_matrix_create", "-4");
  EXPECT_ARG(accrete_matrix_create(&m, ACCRETE_DOUBLE, 8, 8, 0, 0, 0, 2, NULL), "accrete_matrix_create", "0");
  EXPECT_ARG(accrete_matrix_create(&m, (accrete_dtype)42, 8, 8, 0, 0, 2, 2, NULL), "accrete_matrix_create", "42");
  EXPECT_ARG(accrete_matrix_create(&m, ACCRETE_DOUBLE, 8, 8, np + 2, 1, 2, 2, NULL), "accrete_matrix_create",
             "grid");
  EXPECT_ARG(accrete_matrix_create(&m, ACCRETE_DOUBLE, 8, 8, -1, 2, 2, 2, NULL), "accrete_matrix_create", "-1");
  accrete_matrix_options o;
  accrete_matrix_default_options(&o);
  o.merge = 7;
  EXPECT_ARG(accrete_matrix_create(&m, ACCRETE_DOUBLE, 8, 8, 0, 0, 2, 2, &o), "accrete_matrix_create", "7");
  accrete_matrix_default_options(&o);
  o.buffer_cap = 0;
  EXPECT_ARG(accrete_matrix_create(&m, ACCRETE_DOUBLE, 8, 8, 0, 0, 2, 2, &o), "accrete_matrix_create", "0");

  CHECK(accrete_matrix_create(&m, ACCRETE_DOUBLE, 8, 6, 0, 0, 2, 2, NULL) == ACCRETE_SUCCESS);
  double blk[4] = {1, 2, 3, 4}, v = 0;
  int64_t rows[2] = {0, 8}, cols[2] = {0, 1}, neg[2] = {-3, 0};
  EXPECT_ARG(accrete_matrix_update(m, blk, 2, rows, 2, cols, 2, ACCRETE_COL_MAJOR), "accrete_matrix_update", "8");
  EXPECT_ARG(accrete_matrix_update(m, blk, 2, cols, 2, neg, 2, ACCRETE_COL_MAJOR), "accrete_matrix_update", "-3");
  EXPECT_ARG(accrete_matrix_update(m, blk, 1, cols, 2, cols, 2, ACCRETE_COL_MAJOR), "accrete_matrix_update",
             "leading dimension 1");
  EXPECT_ARG(accrete_matrix_update(m, blk, 2, cols, -2, cols, 2, ACCRETE_COL_MAJOR), "accrete_matrix_update", "-2");
  EXPECT_ARG(accrete_matrix_update(m, blk, 2, cols, 2, cols, 2, (accrete_layout)5), "accrete_matrix_update", "5");
  EXPECT_ARG(accrete_matrix_update_symmetric(m, blk, 2, rows, 2, ACCRETE_COL_MAJOR), "accrete_matrix_update_symmetric",
             "8");
  CHECK(accrete_matrix_commit(m) == ACCRETE_SUCCESS);
  EXPECT_ARG(accrete_matrix_get(m, 8, 0, &v), "accrete_matrix_get", "8");
  EXPECT_ARG(accrete_matrix_get(m, 0, -1, &v), "accrete_matrix_get", "-1");
  EXPECT_ARG(accrete_matrix_get(m, 0, 6, &v), "accrete_matrix_get", "6");
  EXPECT_ARG(accrete_matrix_snapshot_local(m, blk, -1), "accrete_matrix_snapshot_local", "-1");
  /* Collective, and this matrix is not square. */
  expect_error(accrete_matrix_symmetrize(m), ACCRETE_ERR_ARG, "accrete_matrix_symmetrize", "8 x 6", __LINE__);
  CHECK(accrete_matrix_free(&m) == ACCRETE_SUCCESS);
  EXPECT_ARG(accrete_matrix_commit(NULL), "accrete_matrix_commit", "null");

  /* ---- dist_array ---------------------------------------------------------------- */
  accrete_array a = NULL;
  EXPECT_ARG(accrete_array_create_block(&a, ACCRETE_DOUBLE, -5, 4, 0, 0), "accrete_array_create_block", "-5");
  EXPECT_ARG(accrete_array_create_block(&a, ACCRETE_DOUBLE, 5, 4, np + 1, 1), "accrete_array_create_block", "grid");
  EXPECT_ARG(accrete_array_create_block(&a, (accrete_dtype)42, 5, 4, 0, 0), "accrete_array_create_block", "42");
  int64_t bad_bounds[3] = {0, 4, 2}, cb[2] = {0, 3};
  EXPECT_ARG(accrete_array_create_irregular(&a, ACCRETE_DOUBLE, bad_bounds, 3, cb, 2),
             "accrete_array_create_irregular", "2");
  EXPECT_ARG(accrete_array_create_block_cyclic(&a, ACCRETE_DOUBLE, 5, 4, 0, 2, 0, 0),
             "accrete_array_create_block_cyclic", "0");
  EXPECT_ARG(accrete_array_create_element_cyclic(&a, ACCRETE_DOUBLE, 5, -4, 0, 0),
             "accrete_array_create_element_cyclic", "-4");

  CHECK(accrete_array_create_block(&a, ACCRETE_DOUBLE, 12, 4, 0, 0) == ACCRETE_SUCCESS);
  double buf[64] = {0};
  int rank = -1;
  EXPECT_ARG(accrete_array_put(a, 5, 3, 0, 1, buf, 8), "accrete_array_put", "inverted");
  EXPECT_ARG(accrete_array_get(a, 0, 1, 3, 2, buf, 8), "accrete_array_get", "inverted");
  EXPECT_ARG(accrete_array_acc(a, 10, 13, 0, 1, buf, 8, NULL), "accrete_array_acc", "13");
  EXPECT_ARG(accrete_array_put(a, -1, 2, 0, 1, buf, 8), "accrete_array_put", "-1");
  EXPECT_ARG(accrete_array_get(a, 0, 4, 0, 2, buf, 3), "accrete_array_get", "ld");
  /* Out of range and a bad ld at once: the range is named first. */
  EXPECT_ARG(accrete_array_get(a, 0, 14, 0, 2, buf, 3), "accrete_array_get", "14");
  EXPECT_ARG(accrete_array_locate(a, 12, 0, &rank), "accrete_array_locate", "12");
  EXPECT_ARG(accrete_array_locate(a, 0, -2, &rank), "accrete_array_locate", "-2");
  EXPECT_ARG(accrete_array_put(NULL, 0, 1, 0, 1, buf, 8), "accrete_array_put", "null");
  CHECK(accrete_array_free(&a) == ACCRETE_SUCCESS);

  /* ---- counter ------------------------------------------------------------------- */
  int64_t old = 0;
  EXPECT_ARG(accrete_counter_fetch_add(NULL, 1, &old), "accrete_counter_fetch_add", "null");

  CHECK(accrete_finalize() == ACCRETE_SUCCESS);
  if (me == 0) printf("c_errors_test: %d failure(s)\n", failures);
  return failures != 0;
}
