/* A C interface to the "hessian" workload (hessian_workload.hpp), so programs
 * in C, Fortran (examples/fortran) and Python produce the very updates the
 * C++ demo and benchmarks produce. Built from hessian_workload_c.cpp. */
#ifndef ACCRETE_BENCH_HESSIAN_WORKLOAD_C_H
#define ACCRETE_BENCH_HESSIAN_WORKLOAD_C_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hw_params {
  int64_t N, Lr, Ll, U; /* matrix dimension, radial levels, lateral nodes per update, updates per process */
  int32_t k;            /* Jacobian panel rows (0: closed-form values) */
  uint64_t seed;
} hw_params;

/* Fills *p with a preset (tiny, small, paper, large); 0 on success, -1 for
 * an unknown name. */
int hw_preset(const char* name, hw_params* p);
/* 0 when the parameters describe a workload, else -1. */
int hw_validate(const hw_params* p);
/* The update dimension n = Lr * Ll. */
int64_t hw_update_dim(const hw_params* p);
/* Update u of process `rank`: ix (n ascending 0-based global indices) and B
 * (n x n, column-major). */
void hw_make_update(const hw_params* p, int rank, int64_t u, int64_t* ix, float* B);
/* The sum of every entry of every process's updates (P processes). */
double hw_expected_checksum(const hw_params* p, int P);
/* The spec's grid: pr = the largest divisor of P not above sqrt(P), pc = P / pr. */
void hw_grid_shape(int P, int* pr, int* pc);

#ifdef __cplusplus
}
#endif
#endif
