/* The C tests' checks: a failed one counts in `failures` and prints the
 * rank (`me`), file, line and condition; the program decides its exit
 * status from `failures`. */
#ifndef ACCRETE_TESTS_C_CHECKS_H
#define ACCRETE_TESTS_C_CHECKS_H

#include <stdio.h>

static int failures = 0;
static int me = 0, np = 1;

#define CHECK(cond)                                                                       \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      ++failures;                                                                         \
      fprintf(stderr, "[%d] %s:%d: CHECK(%s) failed\n", me, __FILE__, __LINE__, #cond); \
    }                                                                                     \
  } while (0)

#endif
