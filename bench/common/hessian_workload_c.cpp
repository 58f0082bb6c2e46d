// The C interface of the hessian workload (hessian_workload_c.h).
#include "hessian_workload_c.h"

#include <algorithm>
#include <exception>

#include "hessian_workload.hpp"

namespace {
bench::hessian::params to_cpp(const hw_params* p) {
  bench::hessian::params q;
  q.N = p->N, q.Lr = p->Lr, q.Ll = p->Ll, q.U = p->U, q.k = p->k, q.seed = p->seed;
  return q;
}
}  // namespace

extern "C" {
int hw_preset(const char* name, hw_params* p) {
  try {
    const auto q = bench::hessian::preset(name ? name : "");
    *p = hw_params{q.N, q.Lr, q.Ll, q.U, q.k, q.seed};
    return 0;
  } catch (const std::exception&) {
    return -1;
  }
}
int hw_validate(const hw_params* p) {
  try {
    to_cpp(p).validate();
    return 0;
  } catch (const std::exception&) {
    return -1;
  }
}
int64_t hw_update_dim(const hw_params* p) { return p->Lr * p->Ll; }
void hw_make_update(const hw_params* p, int rank, int64_t u, int64_t* ix, float* B) {
  bench::hessian::update up;
  bench::hessian::make_update(to_cpp(p), rank, u, up);
  std::copy(up.ix.begin(), up.ix.end(), ix);
  std::copy(up.B.begin(), up.B.end(), B);
}
double hw_expected_checksum(const hw_params* p, int P) { return bench::hessian::expected_checksum(to_cpp(p), P); }
void hw_grid_shape(int P, int* pr, int* pc) {
  const auto [r, c] = bench::hessian::grid_shape(P);
  *pr = r, *pc = c;
}
}
