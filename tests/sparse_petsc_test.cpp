// accrete/sparse/petsc.hpp: a sparse_matrix handed to PETSc is the matrix
// PETSc assembles itself from the same elements (MatSetValues with
// ADD_VALUES, off-process entries through its stash), entry for entry and
// bit for bit (MatEqual), and CG + Jacobi solves with it to the same
// solution. Later rounds on the frozen pattern reach PETSc through the
// shared values and petsc_refresh. Built when PETSc is found for accrete's
// MPI; registered in sparse_interop.cmake.
#include <petscksp.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "accrete/accrete.hpp"
#include "accrete/sparse/petsc.hpp"
#include "accrete/sparse/sparse_matrix.hpp"
#include "sparse_fe_problem.hpp"

using namespace accrete;

namespace {

class petsc_environment : public testing::Environment {
 public:
  void SetUp() override { ASSERT_EQ(PetscInitializeNoArguments(), 0); }
  void TearDown() override { PetscFinalize(); }
};
const auto* const petsc_env = testing::AddGlobalTestEnvironment(new petsc_environment);

using fe_problem::assemble;

// PETSc's own assembly of the same round.
Mat petsc_assembled(int round) {
  const auto r = fe_problem::rows_of(rank_me(), rank_n());
  Mat B;
  MatCreateAIJ(world().mpi_comm(), r[1] - r[0], r[1] - r[0], fe_problem::unknowns, fe_problem::unknowns, 9, nullptr, 9,
               nullptr, &B);
  PetscInt rows[4];
  std::int64_t rows64[4];
  double K[16];
  for (int e = rank_me(); e < fe_problem::elements; e += rank_n()) {
    fe_problem::element(e, round, rows64, K);
    for (int a = 0; a < 4; ++a) rows[a] = PetscInt(rows64[a]);
    MatSetValues(B, 4, rows, 4, rows, K, ADD_VALUES);
  }
  MatAssemblyBegin(B, MAT_FINAL_ASSEMBLY);
  MatAssemblyEnd(B, MAT_FINAL_ASSEMBLY);
  return B;
}

struct solve_result {
  PetscInt iterations = 0;
  std::vector<double> x;  // this process's part
  double error = 0;       // max |x - x_true| over all processes
};

// CG + Jacobi on M x = M x_true, from zero, with a new solver or with
// `keep` (created at its first use, reused after: what PETSc derived from
// the matrix, the Jacobi diagonal, is refreshed only when the Mat says its
// values changed).
solve_result solve(Mat M, KSP* keep = nullptr) {
  Vec x, b, xt;
  MatCreateVecs(M, &x, &b);
  VecDuplicate(x, &xt);
  PetscInt lo, hi;
  VecGetOwnershipRange(xt, &lo, &hi);
  for (PetscInt i = lo; i < hi; ++i) VecSetValue(xt, i, fe_problem::x_true(i), INSERT_VALUES);
  VecAssemblyBegin(xt);
  VecAssemblyEnd(xt);
  MatMult(M, xt, b);
  KSP ksp = keep ? *keep : nullptr;
  if (!ksp) {
    KSPCreate(world().mpi_comm(), &ksp);
    KSPSetOperators(ksp, M, M);
    KSPSetType(ksp, KSPCG);
    PC pc;
    KSPGetPC(ksp, &pc);
    PCSetType(pc, PCJACOBI);
    KSPSetTolerances(ksp, 1e-12, 1e-50, PETSC_DEFAULT, 500);
    if (keep) *keep = ksp;
  }
  KSPSolve(ksp, b, x);
  solve_result r;
  KSPGetIterationNumber(ksp, &r.iterations);
  const double* xv;
  VecGetArrayRead(x, &xv);
  r.x.assign(xv, xv + (hi - lo));
  for (PetscInt i = lo; i < hi; ++i) r.error = std::max(r.error, std::abs(xv[i - lo] - fe_problem::x_true(i)));
  VecRestoreArrayRead(x, &xv);
  r.error = reduce_all(r.error, op_fast_max).wait();
  if (!keep) KSPDestroy(&ksp);
  VecDestroy(&x);
  VecDestroy(&b);
  VecDestroy(&xt);
  return r;
}

void expect_same(Mat ours, Mat theirs, KSP* keep = nullptr) {
  PetscBool eq = PETSC_FALSE;
  ASSERT_EQ(MatEqual(ours, theirs, &eq), 0);
  EXPECT_TRUE(eq) << "accrete's matrix differs from PETSc's own assembly";
  const solve_result a = solve(ours, keep), b = solve(theirs);
  EXPECT_GT(a.iterations, 1);
  EXPECT_EQ(a.iterations, b.iterations);
  EXPECT_EQ(a.x, b.x) << "the same matrix solved to a different solution";
  EXPECT_LT(a.error, 1e-9);
}

sparse_matrix<double> make_matrix(const sparse_matrix_options& o = {}) {
  const auto r = fe_problem::rows_of(rank_me(), rank_n());
  return sparse_matrix<double>(r[1] - r[0], r[1] - r[0], o);
}

}  // namespace

TEST(SparsePetsc, HandoffIsPetscsOwnAssemblyAndSolvesTheSame) {
  for (bool repro : {false, true}) {
    sparse_matrix_options o;
    o.reproducible = repro;
    auto A = make_matrix(o);
    assemble(A, 0);
    Mat M = to_petsc(A);
    // No copy: PETSc's diagonal block reads accrete's value array.
    Mat Ad, Ao;
    const PetscInt* garray;
    MatMPIAIJGetSeqAIJ(M, &Ad, &Ao, &garray);
    PetscScalar* a = nullptr;
    MatSeqAIJGetArray(Ad, &a);
    if (!A.diag().value.empty()) {
      EXPECT_EQ(a, A.diag().value.data());
    }
    MatSeqAIJRestoreArray(Ad, &a);
    Mat B = petsc_assembled(0);
    expect_same(M, B);
    MatDestroy(&B);
    MatDestroy(&M);
  }
}

TEST(SparsePetsc, LaterRoundsReachTheMatThroughRefresh) {
  auto A = make_matrix();
  assemble(A, 0);
  Mat M = to_petsc(A);
  Mat B0 = petsc_assembled(0);
  KSP ksp = nullptr;  // one solver for every round, as an application keeps it
  expect_same(M, B0, &ksp);
  for (int round = 1; round <= 2; ++round) {
    A.reset();
    assemble(A, round);
    petsc_refresh(M, A);
    Mat B = petsc_assembled(round);
    expect_same(M, B, &ksp);  // the kept solver's Jacobi diagonal is the new round's
    PetscBool eq0 = PETSC_TRUE;
    MatEqual(M, B0, &eq0);
    EXPECT_FALSE(eq0) << "round " << round << " left the values of round 0";
    MatDestroy(&B);
  }
  KSPDestroy(&ksp);
  MatDestroy(&B0);
  MatDestroy(&M);
}

TEST(SparsePetsc, BadUse) {
  auto A = make_matrix();
  try {
    (void)to_petsc(A);
    ADD_FAILURE() << "to_petsc before the first commit";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("commit"), std::string::npos) << e.what();
  }
  // A growing pattern that gains entries moves the storage: refresh refuses
  // on every process, even those whose rows did not grow.
  sparse_matrix_options o;
  o.growing_pattern = true;
  auto G = make_matrix(o);
  assemble(G, 0);
  Mat M = to_petsc(G);
  G.reopen();
  if (rank_me() == 0) G.update(1.0, 0, fe_problem::unknowns - 1);  // a new entry in row 0
  G.commit();
  try {
    petsc_refresh(M, G);
    ADD_FAILURE() << "petsc_refresh after the pattern grew";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("pattern changed"), std::string::npos) << e.what();
  }
  MatDestroy(&M);
  Mat N;
  try {
    N = nullptr;
    petsc_refresh(N = petsc_assembled(0), G);
    ADD_FAILURE() << "petsc_refresh on a Mat accrete did not make";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("not made by accrete::to_petsc"), std::string::npos) << e.what();
  }
  MatDestroy(&N);
}
