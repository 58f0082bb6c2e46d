// accrete/sparse/hypre.hpp: a sparse_matrix handed to hypre holds, row for
// row, the values hypre's own IJ assembly of the same elements holds
// (HYPRE_IJMatrixAddToValues, off-process rows through its stash), and
// PCG + diagonal scaling solves with it to the same answer. Later rounds
// reach hypre through hypre_refresh. Built when hypre is found for
// accrete's MPI; registered in sparse_interop.cmake.
#include <HYPRE_parcsr_ls.h>
#include <_hypre_parcsr_mv.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "accrete/accrete.hpp"
#include "accrete/sparse/hypre.hpp"
#include "accrete/sparse/sparse_matrix.hpp"
#include "sparse_fe_problem.hpp"

using namespace accrete;

namespace {

class hypre_environment : public testing::Environment {
 public:
  void SetUp() override { ASSERT_EQ(HYPRE_Init(), 0); }
  void TearDown() override { HYPRE_Finalize(); }
};
const auto* const hypre_env = testing::AddGlobalTestEnvironment(new hypre_environment);

using fe_problem::assemble;

// hypre's own assembly of the same round, off-process entries included.
HYPRE_IJMatrix hypre_assembled(int round) {
  const auto r = fe_problem::rows_of(rank_me(), rank_n());
  HYPRE_IJMatrix H;
  HYPRE_IJMatrixCreate(world().mpi_comm(), r[0], r[1] - 1, r[0], r[1] - 1, &H);
  HYPRE_IJMatrixSetObjectType(H, HYPRE_PARCSR);
  HYPRE_IJMatrixInitialize(H);
  std::int64_t rows64[4];
  HYPRE_BigInt rows[4];
  HYPRE_Int ncols[4] = {4, 4, 4, 4};
  double K[16];
  for (int e = rank_me(); e < fe_problem::elements; e += rank_n()) {
    fe_problem::element(e, round, rows64, K);
    for (int a = 0; a < 4; ++a) rows[a] = HYPRE_BigInt(rows64[a]);
    std::vector<HYPRE_BigInt> cols;
    for (int a = 0; a < 4; ++a) cols.insert(cols.end(), rows, rows + 4);
    HYPRE_IJMatrixAddToValues(H, 4, ncols, rows, cols.data(), K);
  }
  HYPRE_IJMatrixAssemble(H);
  return H;
}

// Every local row of H as (column, value), ascending.
std::vector<std::vector<std::pair<HYPRE_BigInt, double>>> rows_of(HYPRE_IJMatrix H) {
  HYPRE_ParCSRMatrix P;
  HYPRE_IJMatrixGetObject(H, reinterpret_cast<void**>(&P));
  const auto r = fe_problem::rows_of(rank_me(), rank_n());
  std::vector<std::vector<std::pair<HYPRE_BigInt, double>>> out;
  for (std::int64_t i = r[0]; i < r[1]; ++i) {
    HYPRE_Int n;
    HYPRE_BigInt* c;
    HYPRE_Complex* v;
    HYPRE_ParCSRMatrixGetRow(P, HYPRE_BigInt(i), &n, &c, &v);
    std::vector<std::pair<HYPRE_BigInt, double>> row;
    for (HYPRE_Int k = 0; k < n; ++k) row.push_back({c[k], v[k]});
    HYPRE_ParCSRMatrixRestoreRow(P, HYPRE_BigInt(i), &n, &c, &v);
    std::sort(row.begin(), row.end());
    out.push_back(row);
  }
  return out;
}

struct solve_result {
  HYPRE_Int iterations = 0;
  std::vector<double> x;
  double error = 0;
};

// PCG + diagonal scaling on H x = H x_true, from zero.
solve_result solve(HYPRE_IJMatrix H) {
  const auto r = fe_problem::rows_of(rank_me(), rank_n());
  const MPI_Comm comm = world().mpi_comm();
  HYPRE_ParCSRMatrix P;
  HYPRE_IJMatrixGetObject(H, reinterpret_cast<void**>(&P));
  std::vector<HYPRE_BigInt> idx;
  std::vector<double> xt, zero;
  for (std::int64_t i = r[0]; i < r[1]; ++i) idx.push_back(i), xt.push_back(fe_problem::x_true(i)), zero.push_back(0);
  HYPRE_IJVector vx, vb, vt;
  for (HYPRE_IJVector* v : {&vx, &vb, &vt}) {
    HYPRE_IJVectorCreate(comm, r[0], r[1] - 1, v);
    HYPRE_IJVectorSetObjectType(*v, HYPRE_PARCSR);
    HYPRE_IJVectorInitialize(*v);
    HYPRE_IJVectorSetValues(*v, HYPRE_Int(idx.size()), idx.data(), v == &vt ? xt.data() : zero.data());
    HYPRE_IJVectorAssemble(*v);
  }
  HYPRE_ParVector x, b, t;
  HYPRE_IJVectorGetObject(vx, reinterpret_cast<void**>(&x));
  HYPRE_IJVectorGetObject(vb, reinterpret_cast<void**>(&b));
  HYPRE_IJVectorGetObject(vt, reinterpret_cast<void**>(&t));
  HYPRE_ParCSRMatrixMatvec(1.0, P, t, 0.0, b);
  HYPRE_Solver pcg;
  HYPRE_ParCSRPCGCreate(comm, &pcg);
  HYPRE_PCGSetTol(pcg, 1e-12);
  HYPRE_PCGSetMaxIter(pcg, 500);
  HYPRE_PCGSetTwoNorm(pcg, 1);
  HYPRE_PCGSetPrecond(pcg, reinterpret_cast<HYPRE_PtrToSolverFcn>(HYPRE_ParCSRDiagScale),
                      reinterpret_cast<HYPRE_PtrToSolverFcn>(HYPRE_ParCSRDiagScaleSetup), nullptr);
  HYPRE_ParCSRPCGSetup(pcg, P, b, x);
  HYPRE_ParCSRPCGSolve(pcg, P, b, x);
  solve_result res;
  HYPRE_PCGGetNumIterations(pcg, &res.iterations);
  res.x.resize(idx.size());
  if (!idx.empty()) HYPRE_IJVectorGetValues(vx, HYPRE_Int(idx.size()), idx.data(), res.x.data());
  for (std::size_t k = 0; k < idx.size(); ++k) res.error = std::max(res.error, std::abs(res.x[k] - xt[k]));
  res.error = reduce_all(res.error, op_fast_max).wait();
  HYPRE_ParCSRPCGDestroy(pcg);
  for (HYPRE_IJVector v : {vx, vb, vt}) HYPRE_IJVectorDestroy(v);
  return res;
}

void expect_same(HYPRE_IJMatrix ours, HYPRE_IJMatrix theirs) {
  EXPECT_EQ(rows_of(ours), rows_of(theirs)) << "accrete's matrix differs from hypre's own assembly";
  const solve_result a = solve(ours), b = solve(theirs);
  EXPECT_GT(a.iterations, 1);
  // hypre keeps each row's entries in insertion order (diagonal first), so
  // the two matrices' products may round differently: the same answer, not
  // the same bits.
  EXPECT_LE(std::abs(a.iterations - b.iterations), 1);
  EXPECT_LT(a.error, 1e-9);
  EXPECT_LT(b.error, 1e-9);
}

sparse_matrix<double> make_matrix() {
  const auto r = fe_problem::rows_of(rank_me(), rank_n());
  return sparse_matrix<double>(r[1] - r[0], r[1] - r[0]);
}

}  // namespace

TEST(SparseHypre, HandoffHoldsHypresOwnAssemblyAndSolvesTheSame) {
  auto A = make_matrix();
  assemble(A, 0);
  HYPRE_IJMatrix H = to_hypre(A);
  HYPRE_IJMatrix R = hypre_assembled(0);
  expect_same(H, R);
  // The diagonal entry first in each row of hypre's diagonal block, as its
  // smoothers and diagonal scaling read it.
  HYPRE_ParCSRMatrix P;
  HYPRE_IJMatrixGetObject(H, reinterpret_cast<void**>(&P));
  hypre_CSRMatrix* D = hypre_ParCSRMatrixDiag(reinterpret_cast<hypre_ParCSRMatrix*>(P));
  const HYPRE_Int* di = hypre_CSRMatrixI(D);
  const HYPRE_Int* dj = hypre_CSRMatrixJ(D);
  for (HYPRE_Int i = 0; i < hypre_CSRMatrixNumRows(D); ++i) {
    ASSERT_GT(di[i + 1], di[i]) << "local row " << i;
    EXPECT_EQ(dj[di[i]], i) << "local row " << i;
  }
  HYPRE_IJMatrixDestroy(R);
  HYPRE_IJMatrixDestroy(H);
}

TEST(SparseHypre, LaterRoundsThroughRefresh) {
  auto A = make_matrix();
  assemble(A, 0);
  HYPRE_IJMatrix H = to_hypre(A);
  for (int round = 1; round <= 2; ++round) {
    A.reset();
    assemble(A, round);
    hypre_refresh(H, A);
    HYPRE_IJMatrix R = hypre_assembled(round);
    expect_same(H, R);
    HYPRE_IJMatrixDestroy(R);
  }
  HYPRE_IJMatrixDestroy(H);
}

TEST(SparseHypre, BeforeTheFirstCommitThrows) {
  auto A = make_matrix();
  try {
    (void)to_hypre(A);
    ADD_FAILURE() << "to_hypre before the first commit";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("commit"), std::string::npos) << e.what();
  }
}
