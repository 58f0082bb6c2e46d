/* The C tests' checks: a failed one counts in `failures` and prints the
 * rank (`me`), file, line and condition; the program decides its exit
 * status from `failures`. */
#ifndef ACCRETE_TESTS_C_CHECKS_H
#define ACCRETE_TESTS_C_CHECKS_H

#include <stdio.h>
#include <string.h>

#include "accrete/c/accrete.h"

static int failures = 0;
static int me = 0, np = 1;

#define CHECK(cond)                                                                       \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      ++failures;                                                                         \
      fprintf(stderr, "[%d] %s:%d: CHECK(%s) failed\n", me, __FILE__, __LINE__, #cond); \
    }                                                                                     \
  } while (0)

/* A call that must succeed. */
#define OK(call)                                                                                          \
  do {                                                                                                    \
    accrete_status st_ = (call);                                                                          \
    if (st_ != ACCRETE_SUCCESS) {                                                                         \
      ++failures;                                                                                         \
      fprintf(stderr, "[%d] %s:%d: %s returned %d: %s\n", me, __FILE__, __LINE__, #call, (int)st_,      \
              accrete_last_error());                                                                      \
    }                                                                                                     \
  } while (0)

/* A call that must fail with `code` and a message containing `text`. */
#define FAILS(call, code, text)                                                                       \
  do {                                                                                                \
    accrete_status st_ = (call);                                                                      \
    if (st_ != (code) || strstr(accrete_last_error(), (text)) == NULL) {                              \
      ++failures;                                                                                     \
      fprintf(stderr, "[%d] %s:%d: %s returned %d (want %d) with '%s' (want '%s')\n", me, __FILE__, \
              __LINE__, #call, (int)st_, (int)(code), accrete_last_error(), (text));                  \
    }                                                                                                 \
  } while (0)

#endif
