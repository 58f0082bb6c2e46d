/* A C program built against the installed accrete with pkg-config: every
 * process adds 1 to every element of a 10 x 10 matrix; the counter numbers
 * the processes. */
#include <stdio.h>

#include <accrete/c/accrete.h>

#define TRY(call)                                                    \
  if ((call) != ACCRETE_SUCCESS) {                                   \
    fprintf(stderr, "%s failed: %s\n", #call, accrete_last_error()); \
    return 1;                                                        \
  }

int main(void) {
  int me, np;
  TRY(accrete_init());
  TRY(accrete_rank_me(&me));
  TRY(accrete_rank_n(&np));
  accrete_matrix A;
  TRY(accrete_matrix_create(&A, ACCRETE_DOUBLE, 10, 10, 0, 0, 4, 4, NULL));
  int64_t ix[10];
  double ones[100];
  for (int i = 0; i < 10; ++i) ix[i] = i;
  for (int i = 0; i < 100; ++i) ones[i] = 1.0;
  TRY(accrete_matrix_update(A, ones, 10, ix, 10, ix, 10, ACCRETE_COL_MAJOR));
  TRY(accrete_matrix_commit(A));
  double corner = 0;
  TRY(accrete_matrix_get(A, 9, 9, &corner));
  accrete_counter c;
  int64_t ticket = -1;
  TRY(accrete_counter_create(&c, 0));
  TRY(accrete_counter_fetch_add(c, 1, &ticket));
  TRY(accrete_barrier());
  int64_t total = -1;
  TRY(accrete_counter_fetch_add(c, 0, &total));
  const int ok = corner == np && ticket >= 0 && ticket < np && total == np;
  printf("c_consumer rank %d: %s\n", me, ok ? "ok" : "WRONG");
  TRY(accrete_counter_free(&c));
  TRY(accrete_matrix_free(&A));
  TRY(accrete_finalize());
  return ok ? 0 : 1;
}
