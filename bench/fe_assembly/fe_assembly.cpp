// bench_fe_assembly: finite-element matrix assembly (the workload of
// ../shared/bench/fe-assembly.md, fe_workload.hpp) into a distributed
// sparse matrix, R rounds on one pattern, every implementation computing
// the same element matrices in the same run:
//
//   accrete        sparse_matrix<double>: round 0 discovers the pattern,
//                  later rounds reset() and add into its frozen slots
//   accrete_repro  the same with reproducible = true
//   mpi_alltoallv  plain MPI: (row, col, value) triples binned by owner,
//                  one MPI_Alltoallv, a local sort-and-sum into CSR, every round
//   bound          the local-apply bound: each process adds its element
//                  matrices (rows of other processes included) into a
//                  private CSR through precomputed slots; no communication
//
// Time per round: from a barrier to the matrix complete on every process
// (max over processes), element computation included. Each repetition
// runs every implementation (order rotated), R rounds each; first round
// and the median of later rounds are reported, medians over repetitions,
// and ratios to the bound. Every implementation's last round is checked
// (untimed): the checksum of all entries exactly, and 1% of the rows
// exactly against a serial assembly of the elements around them.
//
// Usage: bench_fe_assembly [--preset tiny|small|paper|large] [--partition slab|rcb]
//                          [--rounds R] [--reps K] [--json PATH] [--only NAME[,NAME...]]
//                          [--layout row|col] [--phases]
// (--only NAME[,NAME...] runs those implementations, for profiling; the
// ratios to the others are then empty. --layout: how accrete is handed the
// element matrices, row-major as they are generated (default) or
// column-major. --phases: accrete's rounds split by phase on every
// process, reset(), the element loop and commit(), in a table and the JSON)
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include <mpi.h>

#include <accrete/accrete.hpp>
#include <accrete/sparse/sparse_matrix.hpp>

#include "fe_workload.hpp"
#include "harness.hpp"
#include "util/add_scattered.hpp"
#include "util/huge_pages.hpp"
#include "util/prefetch.hpp"

#ifdef ACCRETE_BENCH_PETSC
#include <petscksp.h>

#include <accrete/sparse/petsc.hpp>
#endif
#ifdef ACCRETE_BENCH_TPETRA
#include <Tpetra_Assembly_Helpers.hpp>
#include <Tpetra_Core.hpp>
#include <Tpetra_FECrsGraph.hpp>
#include <Tpetra_FECrsMatrix.hpp>
#include <Tpetra_Map.hpp>
#endif
#ifdef ACCRETE_BENCH_HYPRE
#include <HYPRE_parcsr_ls.h>

#include <accrete/sparse/hypre.hpp>
#endif

namespace {

struct context {
  fe::mesh m;
  int me = 0, np = 1, rounds = 3;
  // How accrete is handed each element matrix: row-major, as
  // fe::element_matrix writes it (the default), or column-major (the same
  // values: the matrices are symmetric), which costs it strided reads.
  accrete::matrix_layout layout = accrete::matrix_layout::row_major;
  std::vector<std::int64_t> elements;  // mine
  std::int64_t r0 = 0, r1 = 0;         // my rows
  // Entries of each own row in the diagonal columns and the others: the
  // exact preallocation the peers are given (computed before any timing).
  std::vector<std::int32_t> d_nnz, o_nnz;
};

// The result of CG + Jacobi on A x = A 1 (the spec's solve).
struct solve_result {
  std::string solver;  // empty: not solved
  long iterations = 0;
  double error = 0;  // |x - 1|_inf
};

// Rows of the matrix as (column, value), ascending, for the checks.
using row_values = std::vector<std::pair<std::int64_t, double>>;

// One implementation: run(round) assembles one round; row(i) reads back
// an own row; checksum() sums the own rows' stored values.
struct impl {
  std::string name;
  virtual ~impl() = default;
  virtual void setup() {}
  virtual void run(int round) = 0;
  virtual bool checked() const { return true; }
  virtual row_values row(std::int64_t) const { return {}; }
  virtual double checksum() const { return 0; }
  virtual solve_result solve() { return {}; }
  // After each repetition (collective): the matrix is freed, so that only
  // one implementation's memory is held at a time (paper needs it).
  virtual void release() {}
};

#ifdef ACCRETE_BENCH_PETSC
void petsc_call(PetscErrorCode e, const char* what) {
  if (e != 0) {
    std::fprintf(stderr, "bench_fe_assembly: %s failed (PETSc error %d)\n", what, int(e));
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
}

// CG + Jacobi to a relative residual of 1e-8 on M x = M 1, from zero.
solve_result petsc_solve(Mat M) {
  Vec x, b, one;
  petsc_call(MatCreateVecs(M, &x, &b), "MatCreateVecs");
  VecDuplicate(x, &one);
  VecSet(one, 1.0);
  MatMult(M, one, b);
  KSP ksp;
  KSPCreate(PETSC_COMM_WORLD, &ksp);
  KSPSetOperators(ksp, M, M);
  KSPSetType(ksp, KSPCG);
  PC pc;
  KSPGetPC(ksp, &pc);
  PCSetType(pc, PCJACOBI);
  KSPSetTolerances(ksp, 1e-8, 1e-50, PETSC_DEFAULT, 10000);
  petsc_call(KSPSolve(ksp, b, x), "KSPSolve");
  solve_result r;
  r.solver = "PETSc CG + Jacobi";
  PetscInt its;
  KSPGetIterationNumber(ksp, &its);
  r.iterations = its;
  VecAXPY(x, -1.0, one);
  VecNorm(x, NORM_INFINITY, &r.error);
  KSPDestroy(&ksp);
  VecDestroy(&x);
  VecDestroy(&b);
  VecDestroy(&one);
  return r;
}

row_values petsc_row(Mat M, std::int64_t i) {
  row_values out;
  PetscInt n;
  const PetscInt* cols;
  const PetscScalar* vals;
  MatGetRow(M, PetscInt(i), &n, &cols, &vals);
  for (PetscInt k = 0; k < n; ++k) out.push_back({cols[k], vals[k]});
  MatRestoreRow(M, PetscInt(i), &n, &cols, &vals);
  std::sort(out.begin(), out.end());
  return out;
}

double petsc_checksum(Mat M, std::int64_t r0, std::int64_t r1) {
  double s = 0;
  for (std::int64_t i = r0; i < r1; ++i)
    for (const auto& [j, v] : petsc_row(M, i)) s += v;
  return s;
}
#endif

#ifdef ACCRETE_BENCH_PETSC
// The own rows as CSR with global columns, copied into a PETSc Mat and solved.
solve_result petsc_solve_csr(const context& c, const std::vector<std::int64_t>& ptr,
                             const std::vector<std::int64_t>& col, const std::vector<double>& val) {
  const std::vector<PetscInt> pi(ptr.begin(), ptr.end()), pj(col.begin(), col.end());
  Mat M;
  const PetscInt nl = PetscInt(c.r1 - c.r0);
  petsc_call(MatCreateMPIAIJWithArrays(PETSC_COMM_WORLD, nl, nl, PETSC_DETERMINE, PETSC_DETERMINE, pi.data(), pj.data(),
                                       val.data(), &M),
             "MatCreateMPIAIJWithArrays");
  solve_result r = petsc_solve(M);
  r.solver += " (CSR copied in)";
  MatDestroy(&M);
  return r;
}
#endif

// What --phases reports, in the order of accrete_impl::phase_s.
constexpr int phase_count = 5;
constexpr const char* phase_names[phase_count] = {"first update", "first commit", "later reset", "later update",
                                                  "later commit"};
constexpr const char* phase_keys[phase_count] = {"first_update_s", "first_commit_s", "reset_s", "update_s",
                                                 "commit_s"};  // in the JSON

struct accrete_impl : impl {
  const context& c;
  bool repro;
  std::unique_ptr<accrete::sparse_matrix<double>> A;
  accrete_impl(const context& cx, bool r) : c(cx), repro(r) { name = r ? "accrete_repro" : "accrete"; }
  void setup() override {
    accrete::sparse_matrix_options o;
    o.reproducible = repro;
    A.reset();
    A = std::make_unique<accrete::sparse_matrix<double>>(c.r1 - c.r0, c.r1 - c.r0, o);
  }
  void release() override { A.reset(); }
  // This process's time in each phase (phase_names) of every round
  // (--phases): the first round's element loop (generation and update())
  // and commit(); a later round's reset(), element loop and commit().
  std::array<std::vector<double>, phase_count> phase_s;
  void run(int round) override {
    const double t0 = bench::now();
    if (round > 0) A->reset();
    const double t1 = bench::now();
    const int ne = c.m.element_unknowns();
    std::vector<double> K(std::size_t(ne) * ne);
    std::vector<std::int64_t> rows(static_cast<std::size_t>(ne));
    for (std::int64_t e : c.elements) {
      c.m.element_rows(e, rows.data());
      fe::element_matrix(c.m, round, e, K.data());
      A->update(K.data(), ne, rows, rows, c.layout);
    }
    const double t2 = bench::now();
    A->commit();
    const double t3 = bench::now();
    if (round == 0) {
      phase_s[0].push_back(t2 - t1);
      phase_s[1].push_back(t3 - t2);
    } else {
      phase_s[2].push_back(t1 - t0);
      phase_s[3].push_back(t2 - t1);
      phase_s[4].push_back(t3 - t2);
    }
  }
  row_values row(std::int64_t i) const override {
    row_values out;
    const std::int64_t lr = i - c.r0;
    const auto d = A->diag(), o = A->offdiag();
    for (auto k = d.row_ptr[lr]; k < d.row_ptr[lr + 1]; ++k) out.push_back({A->col_begin() + d.col[k], d.value[k]});
    for (auto k = o.row_ptr[lr]; k < o.row_ptr[lr + 1]; ++k) out.push_back({A->col_map()[o.col[k]], o.value[k]});
    std::sort(out.begin(), out.end());
    return out;
  }
  double checksum() const override {
    double s = 0;
    for (double v : A->diag().value) s += v;
    for (double v : A->offdiag().value) s += v;
    return s;
  }
#ifdef ACCRETE_BENCH_PETSC
  solve_result solve() override {
    Mat M = accrete::to_petsc(*A);  // over accrete's values, no copy
    solve_result r = petsc_solve(M);
    r.solver += " (zero-copy handoff)";
    MatDestroy(&M);
    return r;
  }
#endif
};

struct mpi_impl : impl {
  const context& c;
  std::vector<std::int64_t> ptr, col;
  std::vector<double> val;
  explicit mpi_impl(const context& cx) : c(cx) { name = "mpi_alltoallv"; }
  void release() override {
    std::vector<std::int64_t>().swap(ptr);
    std::vector<std::int64_t>().swap(col);
    std::vector<double>().swap(val);
  }
  struct triple {
    std::int64_t row, col;
    double v;
  };
  void run(int round) override {
    const int ne = c.m.element_unknowns(), np = c.np;
    std::vector<double> K(std::size_t(ne) * ne);
    std::vector<std::int64_t> rows(static_cast<std::size_t>(ne));
    std::vector<std::vector<triple>> out(static_cast<std::size_t>(np));
    const auto& rs = c.m.row_start;
    for (std::int64_t e : c.elements) {
      c.m.element_rows(e, rows.data());
      fe::element_matrix(c.m, round, e, K.data());
      for (int a = 0; a < ne; ++a) {
        const int p = int(std::upper_bound(rs.begin(), rs.end(), rows[std::size_t(a)]) - rs.begin()) - 1;
        auto& v = out[std::size_t(p)];
        for (int b = 0; b < ne; ++b)
          v.push_back({rows[std::size_t(a)], rows[std::size_t(b)], K[std::size_t(a) * ne + b]});
      }
    }
    const auto nps = static_cast<std::size_t>(np);
    std::vector<int> scount(nps), rcount(nps), sdisp(nps), rdisp(nps);
    std::vector<triple> sbuf;
    for (int p = 0; p < np; ++p) {
      sdisp[std::size_t(p)] = int(sbuf.size());
      scount[std::size_t(p)] = int(out[std::size_t(p)].size());
      sbuf.insert(sbuf.end(), out[std::size_t(p)].begin(), out[std::size_t(p)].end());
      std::vector<triple>().swap(out[std::size_t(p)]);
    }
    MPI_Alltoall(scount.data(), 1, MPI_INT, rcount.data(), 1, MPI_INT, MPI_COMM_WORLD);
    int total = 0;
    for (int p = 0; p < np; ++p) rdisp[std::size_t(p)] = total, total += rcount[std::size_t(p)];
    std::vector<triple> rbuf(static_cast<std::size_t>(total));
    MPI_Datatype t;
    MPI_Type_contiguous(int(sizeof(triple)), MPI_BYTE, &t);
    MPI_Type_commit(&t);
    MPI_Alltoallv(sbuf.data(), scount.data(), sdisp.data(), t, rbuf.data(), rcount.data(), rdisp.data(), t,
                  MPI_COMM_WORLD);
    MPI_Type_free(&t);
    std::vector<triple>().swap(sbuf);
    std::sort(rbuf.begin(), rbuf.end(),
              [](const triple& a, const triple& b) { return a.row != b.row ? a.row < b.row : a.col < b.col; });
    const std::int64_t nl = c.r1 - c.r0;
    ptr.assign(std::size_t(nl) + 1, 0);
    col.clear();
    val.clear();
    for (std::size_t i = 0; i < rbuf.size();) {
      std::size_t j = i;
      double s = 0;
      for (; j < rbuf.size() && rbuf[j].row == rbuf[i].row && rbuf[j].col == rbuf[i].col; ++j) s += rbuf[j].v;
      col.push_back(rbuf[i].col);
      val.push_back(s);
      ++ptr[std::size_t(rbuf[i].row - c.r0) + 1];
      i = j;
    }
    std::partial_sum(ptr.begin(), ptr.end(), ptr.begin());
  }
  row_values row(std::int64_t i) const override {
    row_values out;
    const std::int64_t lr = i - c.r0;
    for (auto k = ptr[std::size_t(lr)]; k < ptr[std::size_t(lr) + 1]; ++k)
      out.push_back({col[std::size_t(k)], val[std::size_t(k)]});
    return out;
  }
  double checksum() const override { return std::accumulate(val.begin(), val.end(), 0.0); }
#ifdef ACCRETE_BENCH_PETSC
  solve_result solve() override { return petsc_solve_csr(c, ptr, col, val); }
#endif
};

#ifdef ACCRETE_BENCH_PETSC
// PETSc's classic path: MatSetValues(ADD_VALUES) per element, off-process
// rows through its stash, exact preallocation (counted before the timing;
// creating the Mat is part of the first round).
struct petsc_setvalues_impl : impl {
  const context& c;
  Mat M = nullptr;
  explicit petsc_setvalues_impl(const context& cx) : c(cx) { name = "petsc_setvalues"; }
  ~petsc_setvalues_impl() override { MatDestroy(&M); }
  void setup() override { MatDestroy(&M); }
  void release() override { MatDestroy(&M); }
  void run(int round) override {
    const PetscInt nl = PetscInt(c.r1 - c.r0);
    if (round == 0) {
      const std::vector<PetscInt> dn(c.d_nnz.begin(), c.d_nnz.end()), on(c.o_nnz.begin(), c.o_nnz.end());
      petsc_call(
          MatCreateAIJ(PETSC_COMM_WORLD, nl, nl, PETSC_DETERMINE, PETSC_DETERMINE, 0, dn.data(), 0, on.data(), &M),
          "MatCreateAIJ");
      MatSetOption(M, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_TRUE);
    } else {
      MatZeroEntries(M);
    }
    const int ne = c.m.element_unknowns();
    std::vector<double> K(std::size_t(ne) * ne);
    std::vector<std::int64_t> rows(static_cast<std::size_t>(ne));
    std::vector<PetscInt> prow(static_cast<std::size_t>(ne));
    for (std::int64_t e : c.elements) {
      c.m.element_rows(e, rows.data());
      for (int a = 0; a < ne; ++a) prow[std::size_t(a)] = PetscInt(rows[std::size_t(a)]);
      fe::element_matrix(c.m, round, e, K.data());
      MatSetValues(M, ne, prow.data(), ne, prow.data(), K.data(), ADD_VALUES);
    }
    petsc_call(MatAssemblyBegin(M, MAT_FINAL_ASSEMBLY), "MatAssemblyBegin");
    petsc_call(MatAssemblyEnd(M, MAT_FINAL_ASSEMBLY), "MatAssemblyEnd");
  }
  row_values row(std::int64_t i) const override { return petsc_row(M, i); }
  double checksum() const override { return petsc_checksum(M, c.r0, c.r1); }
  solve_result solve() override { return petsc_solve(M); }
};

// PETSc's COO path: every entry's (row, column) given once
// (MatSetPreallocationCOO, in the first round), then each round the values
// of every element materialised in that order and MatSetValuesCOO.
struct petsc_coo_impl : impl {
  const context& c;
  Mat M = nullptr;
  std::vector<double> v;
  explicit petsc_coo_impl(const context& cx) : c(cx) { name = "petsc_coo"; }
  ~petsc_coo_impl() override { MatDestroy(&M); }
  void setup() override { MatDestroy(&M); }
  void release() override { MatDestroy(&M); }
  void run(int round) override {
    const int ne = c.m.element_unknowns();
    const std::size_t nn = std::size_t(ne) * std::size_t(ne);
    if (round == 0) {
      const PetscInt nl = PetscInt(c.r1 - c.r0);
      MatCreate(PETSC_COMM_WORLD, &M);
      MatSetSizes(M, nl, nl, PETSC_DETERMINE, PETSC_DETERMINE);
      MatSetType(M, MATAIJ);
      std::vector<PetscInt> ci, cj;
      ci.reserve(c.elements.size() * nn);
      cj.reserve(c.elements.size() * nn);
      std::vector<std::int64_t> rows(static_cast<std::size_t>(ne));
      for (std::int64_t e : c.elements) {
        c.m.element_rows(e, rows.data());
        for (int a = 0; a < ne; ++a)
          for (int b = 0; b < ne; ++b)
            ci.push_back(PetscInt(rows[std::size_t(a)])), cj.push_back(PetscInt(rows[std::size_t(b)]));
      }
      petsc_call(MatSetPreallocationCOO(M, PetscCount(ci.size()), ci.data(), cj.data()), "MatSetPreallocationCOO");
      v.resize(ci.size());
    }
    double* at = v.data();
    for (std::int64_t e : c.elements) {
      fe::element_matrix(c.m, round, e, at);
      at += nn;
    }
    petsc_call(MatSetValuesCOO(M, v.data(), INSERT_VALUES), "MatSetValuesCOO");
  }
  row_values row(std::int64_t i) const override { return petsc_row(M, i); }
  double checksum() const override { return petsc_checksum(M, c.r0, c.r1); }
  solve_result solve() override { return petsc_solve(M); }
};
#endif

#ifdef ACCRETE_BENCH_HYPRE
// hypre's IJ interface: HYPRE_IJMatrixAddToValues per element, off-process
// rows through its stash, exact diagonal/off-diagonal row sizes (counted
// before the timing); later rounds zero the values and add again.
struct hypre_ij_impl : impl {
  const context& c;
  HYPRE_IJMatrix H = nullptr;
  explicit hypre_ij_impl(const context& cx) : c(cx) { name = "hypre_ij"; }
  ~hypre_ij_impl() override { release(); }
  void release() override {
    if (H) HYPRE_IJMatrixDestroy(H);
    H = nullptr;
  }
  void setup() override { release(); }
  void run(int round) override {
    const int ne = c.m.element_unknowns();
    if (round == 0) {
      HYPRE_IJMatrixCreate(MPI_COMM_WORLD, c.r0, c.r1 - 1, c.r0, c.r1 - 1, &H);
      HYPRE_IJMatrixSetObjectType(H, HYPRE_PARCSR);
      const std::vector<HYPRE_Int> dn(c.d_nnz.begin(), c.d_nnz.end()), on(c.o_nnz.begin(), c.o_nnz.end());
      HYPRE_IJMatrixSetDiagOffdSizes(H, dn.data(), on.data());
      HYPRE_IJMatrixInitialize(H);
    } else {
      HYPRE_IJMatrixInitialize(H);
      HYPRE_IJMatrixSetConstantValues(H, 0.0);
    }
    std::vector<double> K(std::size_t(ne) * ne);
    std::vector<std::int64_t> rows(static_cast<std::size_t>(ne));
    std::vector<HYPRE_BigInt> hr(static_cast<std::size_t>(ne)), hc(std::size_t(ne) * ne);
    std::vector<HYPRE_Int> ncols(static_cast<std::size_t>(ne), ne);
    for (std::int64_t e : c.elements) {
      c.m.element_rows(e, rows.data());
      for (int a = 0; a < ne; ++a) hr[std::size_t(a)] = HYPRE_BigInt(rows[std::size_t(a)]);
      for (int a = 0; a < ne; ++a) std::copy(hr.begin(), hr.end(), hc.begin() + std::ptrdiff_t(a) * ne);
      fe::element_matrix(c.m, round, e, K.data());
      HYPRE_IJMatrixAddToValues(H, ne, ncols.data(), hr.data(), hc.data(), K.data());
    }
    if (HYPRE_IJMatrixAssemble(H) != 0) {
      std::fprintf(stderr, "bench_fe_assembly: HYPRE_IJMatrixAssemble failed\n");
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
  }
  HYPRE_ParCSRMatrix parcsr() const {
    HYPRE_ParCSRMatrix P;
    HYPRE_IJMatrixGetObject(H, reinterpret_cast<void**>(&P));
    return P;
  }
  row_values row(std::int64_t i) const override {
    row_values out;
    HYPRE_Int n;
    HYPRE_BigInt* cols;
    HYPRE_Complex* vals;
    HYPRE_ParCSRMatrixGetRow(parcsr(), HYPRE_BigInt(i), &n, &cols, &vals);
    for (HYPRE_Int k = 0; k < n; ++k) out.push_back({cols[k], vals[k]});
    HYPRE_ParCSRMatrixRestoreRow(parcsr(), HYPRE_BigInt(i), &n, &cols, &vals);
    std::sort(out.begin(), out.end());
    return out;
  }
  double checksum() const override {
    double s = 0;
    for (std::int64_t i = c.r0; i < c.r1; ++i)
      for (const auto& [j, v] : row(i)) s += v;
    return s;
  }
  // hypre's PCG with diagonal scaling (Jacobi), relative residual 1e-8.
  solve_result solve() override {
    HYPRE_IJVector vx, vb, vo;
    HYPRE_ParVector x, b, one;
    for (HYPRE_IJVector* v : {&vx, &vb, &vo}) {
      HYPRE_IJVectorCreate(MPI_COMM_WORLD, c.r0, c.r1 - 1, v);
      HYPRE_IJVectorSetObjectType(*v, HYPRE_PARCSR);
      HYPRE_IJVectorInitialize(*v);
      HYPRE_IJVectorAssemble(*v);
    }
    HYPRE_IJVectorGetObject(vx, reinterpret_cast<void**>(&x));
    HYPRE_IJVectorGetObject(vb, reinterpret_cast<void**>(&b));
    HYPRE_IJVectorGetObject(vo, reinterpret_cast<void**>(&one));
    HYPRE_ParVectorSetConstantValues(x, 0.0);
    HYPRE_ParVectorSetConstantValues(one, 1.0);
    HYPRE_ParCSRMatrixMatvec(1.0, parcsr(), one, 0.0, b);
    HYPRE_Solver pcg;
    HYPRE_ParCSRPCGCreate(MPI_COMM_WORLD, &pcg);
    HYPRE_PCGSetTol(pcg, 1e-8);
    HYPRE_PCGSetMaxIter(pcg, 10000);
    HYPRE_PCGSetTwoNorm(pcg, 1);
    HYPRE_PCGSetPrecond(pcg, reinterpret_cast<HYPRE_PtrToSolverFcn>(HYPRE_ParCSRDiagScale),
                        reinterpret_cast<HYPRE_PtrToSolverFcn>(HYPRE_ParCSRDiagScaleSetup), nullptr);
    HYPRE_ParCSRPCGSetup(pcg, parcsr(), b, x);
    HYPRE_ParCSRPCGSolve(pcg, parcsr(), b, x);
    solve_result r;
    r.solver = "hypre PCG + diagonal scaling";
    HYPRE_Int its;
    HYPRE_PCGGetNumIterations(pcg, &its);
    r.iterations = its;
    std::vector<HYPRE_BigInt> idx;
    for (std::int64_t i = c.r0; i < c.r1; ++i) idx.push_back(i);
    std::vector<double> xv(idx.size());
    if (!idx.empty()) HYPRE_IJVectorGetValues(vx, HYPRE_Int(idx.size()), idx.data(), xv.data());
    for (double xi : xv) r.error = std::max(r.error, std::abs(xi - 1.0));
    r.error = bench::reduce(r.error, MPI_MAX);
    HYPRE_ParCSRPCGDestroy(pcg);
    for (HYPRE_IJVector v : {vx, vb, vo}) HYPRE_IJVectorDestroy(v);
    return r;
  }
};
#endif

#ifdef ACCRETE_BENCH_TPETRA
// Trilinos Tpetra::FECrsMatrix, its finite-element assembly: each process
// adds its element matrices into an overlapped matrix (its own rows and the
// rows its elements share with others), and endAssembly() sends the shared
// rows to their owners. Round 0 builds the FECrsGraph from the elements
// (timed, as the other implementations' pattern discovery); later rounds
// beginAssembly, zero, add, endAssembly. The element connectivity in the
// overlap map's local numbering is mesh data, computed before the timing.
struct tpetra_fe_impl : impl {
  using map_t = Tpetra::Map<>;
  using GO = map_t::global_ordinal_type;
  using LO = map_t::local_ordinal_type;
  using graph_t = Tpetra::FECrsGraph<LO, GO>;
  using matrix_t = Tpetra::FECrsMatrix<double, LO, GO>;
  const context& c;
  Teuchos::RCP<const map_t> owned, overlap;
  Teuchos::RCP<graph_t> graph;
  Teuchos::RCP<matrix_t> A;
  std::vector<GO> grows;  // per element, its rows (global)
  std::vector<LO> lrows;  // per element, its rows in the overlap map's numbering
  std::vector<LO> lcols;  // per element, its columns in the matrix's column map (made in round 0)
  explicit tpetra_fe_impl(const context& cx) : c(cx) { name = "tpetra_fe"; }
  void setup() override {
    release();
    if (!owned.is_null()) return;
    const int ne = c.m.element_unknowns();
    std::vector<std::int64_t> rows(static_cast<std::size_t>(ne)), shared;
    for (std::int64_t e : c.elements) {
      c.m.element_rows(e, rows.data());
      for (std::int64_t r : rows)
        if (r < c.r0 || r >= c.r1) shared.push_back(r);
    }
    std::sort(shared.begin(), shared.end());
    shared.erase(std::unique(shared.begin(), shared.end()), shared.end());
    std::vector<GO> gids;  // own rows first, as FECrsGraph requires
    for (std::int64_t r = c.r0; r < c.r1; ++r) gids.push_back(GO(r));
    for (std::int64_t r : shared) gids.push_back(GO(r));
    auto comm = Tpetra::getDefaultComm();
    const auto invalid = Teuchos::OrdinalTraits<Tpetra::global_size_t>::invalid();
    owned = Teuchos::rcp(new map_t(invalid, Teuchos::ArrayView<const GO>(gids.data(), c.r1 - c.r0), 0, comm));
    overlap = Teuchos::rcp(new map_t(invalid, Teuchos::ArrayView<const GO>(gids), 0, comm));
    lrows.clear();
    grows.clear();
    for (std::int64_t e : c.elements) {
      c.m.element_rows(e, rows.data());
      for (std::int64_t r : rows) grows.push_back(GO(r)), lrows.push_back(overlap->getLocalElement(GO(r)));
    }
  }
  void release() override {
    A = Teuchos::null;
    graph = Teuchos::null;
    lcols.clear();
  }
  void run(int round) override {
    const int ne = c.m.element_unknowns();
    std::vector<double> K(std::size_t(ne) * ne);
    if (round == 0) {
      const std::size_t most = std::size_t(27 * c.m.d);  // a Q1 node's neighbours, d unknowns each
      graph = Teuchos::rcp(new graph_t(owned, overlap, most));
      Tpetra::beginAssembly(*graph);
      const GO* gr = grows.data();
      for (std::size_t k = 0; k < c.elements.size(); ++k, gr += ne)
        for (int a = 0; a < ne; ++a) graph->insertGlobalIndices(gr[a], Teuchos::ArrayView<const GO>(gr, ne));
      Tpetra::endAssembly(*graph);
      A = Teuchos::rcp(new matrix_t(graph));
      // The elements' columns in the column map endAssembly made.
      const auto colmap = A->getColMap();
      lcols.resize(grows.size());
      for (std::size_t k = 0; k < grows.size(); ++k) lcols[k] = colmap->getLocalElement(grows[k]);
    }
    Tpetra::beginAssembly(*A);
    if (round > 0) A->setAllToScalar(0.0);
    const LO* lr = lrows.data();
    const LO* lc = lcols.data();
    for (std::int64_t e : c.elements) {
      fe::element_matrix(c.m, round, e, K.data());
      for (int a = 0; a < ne; ++a)
        A->sumIntoLocalValues(lr[a], Teuchos::ArrayView<const LO>(lc, ne),
                              Teuchos::ArrayView<const double>(K.data() + std::size_t(a) * ne, ne));
      lr += ne;
      lc += ne;
    }
    Tpetra::endAssembly(*A);
  }
  row_values row(std::int64_t i) const override {
    const std::size_t n = A->getNumEntriesInGlobalRow(GO(i));
    std::vector<GO> cols(n);
    std::vector<double> vals(n);
    std::size_t got = 0;
    A->getGlobalRowCopy(GO(i), cols, vals, got);
    row_values out;
    for (std::size_t k = 0; k < got; ++k) out.push_back({std::int64_t(cols[k]), vals[k]});
    std::sort(out.begin(), out.end());
    return out;
  }
  void csr(std::vector<std::int64_t>& ptr, std::vector<std::int64_t>& col, std::vector<double>& val) const {
    ptr.assign(1, 0);
    for (std::int64_t i = c.r0; i < c.r1; ++i) {
      for (const auto& [j, v] : row(i)) col.push_back(j), val.push_back(v);
      ptr.push_back(std::int64_t(col.size()));
    }
  }
  double checksum() const override {
    std::vector<std::int64_t> ptr, col;
    std::vector<double> val;
    csr(ptr, col, val);
    return std::accumulate(val.begin(), val.end(), 0.0);
  }
#ifdef ACCRETE_BENCH_PETSC
  solve_result solve() override {
    std::vector<std::int64_t> ptr, col;
    std::vector<double> val;
    csr(ptr, col, val);
    return petsc_solve_csr(c, ptr, col, val);
  }
#endif
};
#endif

struct bound_impl : impl {
  const context& c;
  std::vector<std::int32_t> slot;  // per element entry
  std::vector<double> val;
  explicit bound_impl(const context& cx) : c(cx) { name = "bound"; }
  bool checked() const override { return false; }  // a private partial matrix, not an assembly
  void setup() override {
    // Untimed, once: the private pattern of every entry my elements touch.
    if (!slot.empty() || c.elements.empty()) return;
    const int ne = c.m.element_unknowns();
    std::vector<std::int64_t> rows(static_cast<std::size_t>(ne));
    std::vector<std::pair<std::int64_t, std::int64_t>> keys;
    keys.reserve(c.elements.size() * std::size_t(ne) * std::size_t(ne));
    for (std::int64_t e : c.elements) {
      c.m.element_rows(e, rows.data());
      for (int a = 0; a < ne; ++a)
        for (int b = 0; b < ne; ++b) keys.push_back({rows[std::size_t(a)], rows[std::size_t(b)]});
    }
    std::vector<std::pair<std::int64_t, std::int64_t>> uniq = keys;
    std::sort(uniq.begin(), uniq.end());
    uniq.erase(std::unique(uniq.begin(), uniq.end()), uniq.end());
    // Advised for huge pages as accrete's slot cache and values are
    // (src/util/huge_pages.hpp, ACCRETE_HUGE_PAGES): the same technique, so the
    // yardstick stays honest.
    accrete::detail::reserve_huge(slot, keys.size(), accrete::detail::huge_use::buffer);
    slot.resize(keys.size());
    for (std::size_t k = 0; k < keys.size(); ++k)
      slot[k] = std::int32_t(std::lower_bound(uniq.begin(), uniq.end(), keys[k]) - uniq.begin());
    accrete::detail::reserve_huge(val, uniq.size(), accrete::detail::huge_use::target);
    val.assign(uniq.size(), 0.0);
  }
  void run(int round) override {
    const int ne = c.m.element_unknowns();
    const std::size_t nn = std::size_t(ne) * std::size_t(ne);
    std::vector<double> K(nn);
    std::fill(val.begin(), val.end(), 0.0);
    const std::int32_t* s = slot.data();
    for (std::int64_t e : c.elements) {
      // The element's targets fetched while it is computed, as accrete's
      // replay does (src/sparse/sparse_matrix.cpp, update_in_place): the
      // same technique, so the yardstick stays honest.
      for (std::size_t k = 0; k < nn; k += 8) __builtin_prefetch(val.data() + s[k], 1);
      fe::element_matrix(c.m, round, e, K.data());
      // An element's slots are distinct; the adds in batches, as accrete's
      // (src/util/add_scattered.hpp): the same technique, the honest yardstick.
      accrete::detail::add_scattered(val.data(), s, K.data(), 1, nn);
      s += nn;
      // The slots of the element after next, whose loads the target
      // prefetches above would otherwise wait on (as accrete's replay
      // fetches the record after next's).
      if (std::size_t(s - slot.data()) + 2 * nn <= slot.size())
        accrete::detail::prefetch_lines(s + nn, nn * sizeof(std::int32_t), false);
    }
  }
};

// The serial row i of round `round`: the elements around its node.
row_values serial_row(const context& c, const std::vector<std::int64_t>& old_of_new, std::int64_t i, int round) {
  const int n = c.m.n, d = c.m.d, ne = c.m.element_unknowns();
  const std::int64_t old = old_of_new[std::size_t(i / d - c.r0 / d)];
  const int x = int(old % (n + 1)), y = int((old / (n + 1)) % (n + 1)), z = int(old / (std::int64_t(n + 1) * (n + 1)));
  std::map<std::int64_t, double> acc;
  std::vector<double> K(std::size_t(ne) * ne);
  std::vector<std::int64_t> rows(static_cast<std::size_t>(ne));
  for (int ez = z - 1; ez <= z; ++ez)
    for (int ey = y - 1; ey <= y; ++ey)
      for (int ex = x - 1; ex <= x; ++ex) {
        if (ex < 0 || ey < 0 || ez < 0 || ex >= n || ey >= n || ez >= n) continue;
        const std::int64_t e = (std::int64_t(ez) * n + ey) * n + ex;
        c.m.element_rows(e, rows.data());
        fe::element_matrix(c.m, round, e, K.data());
        for (int a = 0; a < ne; ++a)
          if (rows[std::size_t(a)] == i)
            for (int b = 0; b < ne; ++b) acc[rows[std::size_t(b)]] += K[std::size_t(a) * ne + b];
      }
  return row_values(acc.begin(), acc.end());
}

struct result {
  std::vector<double> first, later, later_max;  // per repetition (later: the median of its later rounds)
};

int run_bench(int argc, char** argv);

}  // namespace

int main(int argc, char** argv) {
  accrete::runtime rt;
#ifdef ACCRETE_BENCH_PETSC
  petsc_call(PetscInitializeNoArguments(), "PetscInitialize");
#endif
#ifdef ACCRETE_BENCH_HYPRE
  HYPRE_Init();
#endif
#ifdef ACCRETE_BENCH_TPETRA
  int targc = 1;  // Kokkos reads no arguments of ours
  char* targv[] = {argv[0], nullptr};
  char** tp = targv;
  Tpetra::ScopeGuard tpetra(&targc, &tp);  // MPI is up already: Tpetra leaves it to us
#endif
  const int rc = run_bench(argc, argv);
#ifdef ACCRETE_BENCH_HYPRE
  HYPRE_Finalize();
#endif
#ifdef ACCRETE_BENCH_PETSC
  PetscFinalize();
#endif
  return rc;
}

namespace {
int run_bench(int argc, char** argv) {
  std::string preset_name = "tiny", partition = "slab", json, only, layout = "row";
  int rounds = -1, reps = 1;
  bool phases = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--phases") == 0) {
      phases = true;
      continue;
    }
    if (const char* v = bench::option(argc, argv, i, "--preset"))
      preset_name = v;
    else if (const char* v = bench::option(argc, argv, i, "--partition"))
      partition = v;
    else if (const char* v = bench::option(argc, argv, i, "--rounds"))
      rounds = std::atoi(v);
    else if (const char* v = bench::option(argc, argv, i, "--reps"))
      reps = std::atoi(v);
    else if (const char* v = bench::option(argc, argv, i, "--json"))
      json = v;
    else if (const char* v = bench::option(argc, argv, i, "--only"))
      only = v;
    else if (const char* v = bench::option(argc, argv, i, "--layout"))
      layout = v;
    else {
      if (accrete::rank_me() == 0)
        std::fprintf(stderr,
                     "usage: bench_fe_assembly [--preset tiny|small|paper|large] [--partition slab|rcb] "
                     "[--rounds R] [--reps K] [--json PATH] [--only NAME[,NAME...]] [--layout row|col] "
                     "[--phases]\n");
      return 2;
    }
  }
  if (layout != "row" && layout != "col") {
    if (accrete::rank_me() == 0)
      std::fprintf(stderr, "bench_fe_assembly: --layout %s: expected row or col\n", layout.c_str());
    return 2;
  }
  const fe::preset pre = fe::preset_named(preset_name);
  context c;
  c.me = accrete::rank_me();
  c.np = accrete::rank_n();
  c.rounds = rounds > 1 ? rounds : pre.rounds;
  c.layout = layout == "row" ? accrete::matrix_layout::row_major : accrete::matrix_layout::col_major;
  c.m = fe::make_mesh(pre.n, pre.d, c.np, partition);
  for (std::int64_t e = 0; e < std::int64_t(c.m.owner_of_element.size()); ++e)
    if (c.m.owner_of_element[std::size_t(e)] == c.me) c.elements.push_back(e);
  c.r0 = c.m.row_start[std::size_t(c.me)];
  c.r1 = c.m.row_start[std::size_t(c.me) + 1];
  // Own nodes' old indices, for the sampled-row check.
  std::vector<std::int64_t> old_of_new(std::size_t((c.r1 - c.r0) / c.m.d));
  for (std::int64_t old = 0; old < c.m.nodes(); ++old) {
    const std::int64_t nn = c.m.node_number[std::size_t(old)];
    if (nn * c.m.d >= c.r0 && nn * c.m.d < c.r1) old_of_new[std::size_t(nn - c.r0 / c.m.d)] = old;
  }

  // The peers' exact preallocation: each own node's neighbours (the nodes
  // of the elements around it), d entries per neighbour node.
  c.d_nnz.assign(std::size_t(c.r1 - c.r0), 0);
  c.o_nnz.assign(std::size_t(c.r1 - c.r0), 0);
  for (std::size_t k = 0; k < old_of_new.size(); ++k) {
    const int n = c.m.n, d = c.m.d;
    const std::int64_t old = old_of_new[k];
    const int x = int(old % (n + 1)), y = int((old / (n + 1)) % (n + 1)),
              z = int(old / (std::int64_t(n + 1) * (n + 1)));
    std::int32_t nd = 0, no = 0;
    for (int zz = std::max(z - 1, 0); zz <= std::min(z + 1, n); ++zz)
      for (int yy = std::max(y - 1, 0); yy <= std::min(y + 1, n); ++yy)
        for (int xx = std::max(x - 1, 0); xx <= std::min(x + 1, n); ++xx) {
          const std::int64_t col = c.m.node_number[std::size_t(c.m.node_index(xx, yy, zz))] * d;
          (col >= c.r0 && col < c.r1 ? nd : no) += d;
        }
    for (int j = 0; j < d; ++j)
      c.d_nnz[k * std::size_t(d) + std::size_t(j)] = nd, c.o_nnz[k * std::size_t(d) + std::size_t(j)] = no;
  }

  std::vector<std::unique_ptr<impl>> impls;
  impls.push_back(std::make_unique<accrete_impl>(c, false));
  impls.push_back(std::make_unique<accrete_impl>(c, true));
  impls.push_back(std::make_unique<mpi_impl>(c));
#ifdef ACCRETE_BENCH_PETSC
  impls.push_back(std::make_unique<petsc_setvalues_impl>(c));
  impls.push_back(std::make_unique<petsc_coo_impl>(c));
#endif
#ifdef ACCRETE_BENCH_HYPRE
  impls.push_back(std::make_unique<hypre_ij_impl>(c));
#endif
#ifdef ACCRETE_BENCH_TPETRA
  impls.push_back(std::make_unique<tpetra_fe_impl>(c));
#endif
  impls.push_back(std::make_unique<bound_impl>(c));
  std::vector<result> res(impls.size());
  std::vector<solve_result> solved(impls.size());
  std::vector<std::string> failures;
  // The expected checksum of the last round: every element's entries.
  double expect_sum = 0;
  {
    const int ne = c.m.element_unknowns();
    std::vector<double> K(std::size_t(ne) * ne);
    for (std::int64_t e : c.elements) {
      fe::element_matrix(c.m, c.rounds - 1, e, K.data());
      for (double v : K) expect_sum += v;
    }
    expect_sum = bench::reduce(expect_sum, MPI_SUM);
  }
  for (int rep = 0; rep < reps; ++rep)
    for (std::size_t k = 0; k < impls.size(); ++k) {
      const std::size_t which = (k + std::size_t(rep)) % impls.size();
      impl& im = *impls[which];
      if (!only.empty() && ("," + only + ",").find("," + im.name + ",") == std::string::npos) continue;  // profiling
      im.setup();
      std::vector<double> later;
      for (int r = 0; r < c.rounds; ++r) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = bench::now();
        im.run(r);
        const double t = bench::reduce(bench::now() - t0, MPI_MAX);
        if (r == 0)
          res[which].first.push_back(t);
        else
          later.push_back(t);
      }
      res[which].later.push_back(bench::median(later));
      res[which].later_max.push_back(later.empty() ? 0 : *std::max_element(later.begin(), later.end()));
      if (!im.checked() || rep > 0) {
        im.release();
        continue;
      }
      const double sum = bench::reduce(im.checksum(), MPI_SUM);
      long bad = sum == expect_sum ? 0 : 1;
      long sampled = 0;
      for (std::int64_t i = c.r0; i < c.r1; ++i) {
        std::uint64_t h = std::uint64_t(i) * 977;  // 1% of the rows, the same in every run
        if (fe::splitmix_next(h) % 100 != 0) continue;
        ++sampled;
        if (im.row(i) != serial_row(c, old_of_new, i, c.rounds - 1)) ++bad;
      }
      bad = long(bench::reduce(double(bad), MPI_SUM));
      sampled = long(bench::reduce(double(sampled), MPI_SUM));
      if (c.me == 0)
        std::printf("check %-14s checksum %s (%.17g vs %.17g), %ld sampled rows, %ld bad\n", im.name.c_str(),
                    sum == expect_sum ? "exact" : "WRONG", sum, expect_sum, sampled, bad);
      if (bad) failures.push_back(im.name);
      solved[which] = im.solve();  // once, untimed, on the last round's matrix
      if (c.me == 0 && !solved[which].solver.empty())
        std::printf("solve %-14s %s: %ld iterations, |x - 1|_inf = %.3g\n", im.name.c_str(),
                    solved[which].solver.c_str(), solved[which].iterations, solved[which].error);
      im.release();
    }

  const std::size_t ib = impls.size() - 1;
  // An implementation left out by --only has no times: it gets no row, no
  // JSON entry and no ratio (a 0 would read as a measurement).
  auto ran = [&](std::size_t k) { return !res[k].first.empty(); };
  auto ratio = [&](std::size_t a, bool first) {
    return bench::median_ratio(first ? res[a].first : res[a].later, first ? res[ib].first : res[ib].later);
  };
  // --phases: each process's median per phase over its rounds (all
  // repetitions), gathered on rank 0 (process q's at q * phase_count).
  // Where the round's time goes beyond the bound's: the adds themselves
  // (the element loop) or waiting for the other processes and their pieces
  // (commit).
  struct phase_table {
    std::string name;
    std::vector<double> median;
  };
  std::vector<phase_table> phase_tables;
  if (phases)
    for (const auto& p : impls) {
      const auto* a = dynamic_cast<const accrete_impl*>(p.get());
      if (!a || a->phase_s[0].empty()) continue;
      double mine[phase_count];
      for (int k = 0; k < phase_count; ++k) mine[k] = bench::median(a->phase_s[std::size_t(k)]);
      phase_table t{a->name, std::vector<double>(std::size_t(phase_count * c.np))};
      MPI_Gather(mine, phase_count, MPI_DOUBLE, t.median.data(), phase_count, MPI_DOUBLE, 0, MPI_COMM_WORLD);
      phase_tables.push_back(std::move(t));
    }
  // The mode ACCRETE_HUGE_PAGES resolved to (auto: targets on a guest whose
  // host takes back free memory): round 0's times depend on it.
  const char* huge_pages = accrete::detail::huge_pages_name(accrete::detail::huge_pages_level());
  if (c.me == 0) {
    std::printf(
        "\nbench_fe_assembly: preset %s (n = %d, d = %d, %lld unknowns), partition %s, P = %d, %d rounds, %d reps, "
        "accrete given %s-major blocks, huge pages: %s\n",
        pre.name.c_str(), pre.n, pre.d, (long long)c.m.unknowns(), partition.c_str(), c.np, c.rounds, reps,
        layout.c_str(), huge_pages);
    std::printf("%-15s %12s %12s %12s %12s\n", "implementation", "first [s]", "later [s]", "first/bound",
                "later/bound");
    for (std::size_t k = 0; k < impls.size(); ++k) {
      if (!ran(k)) continue;
      std::printf("%-15s %12.4g %12.4g", impls[k]->name.c_str(), bench::median(res[k].first),
                  bench::median(res[k].later));
      if (ran(ib)) std::printf(" %12.3f %12.3f", ratio(k, true), ratio(k, false));
      std::printf("\n");
    }
    for (const auto& t : phase_tables) {
      std::printf("\n%s by phase on each process (medians over rounds) [s]\n", t.name.c_str());
      std::printf("%-8s", "process");
      for (const char* n : phase_names) std::printf(" %12s", n);
      for (int q = 0; q < c.np; ++q) {
        std::printf("\n%-8d", q);
        for (int k = 0; k < phase_count; ++k) std::printf(" %12.4g", t.median[std::size_t(q * phase_count + k)]);
      }
      std::printf("\n");
    }
  }
  if (c.me == 0 && !json.empty()) {
    std::ofstream f(json);
    f << "{\n  \"benchmark\": \"bench_fe_assembly\",\n  \"preset\": \"" << pre.name << "\",\n  \"n\": " << pre.n
      << ",\n  \"d\": " << pre.d << ",\n  \"unknowns\": " << c.m.unknowns() << ",\n  \"partition\": \"" << partition
      << "\",\n  \"processes\": " << c.np << ",\n  \"rounds\": " << c.rounds << ",\n  \"reps\": " << reps
      << ",\n  \"layout\": \"" << layout << "\",\n  \"huge_pages\": \"" << huge_pages
      << "\",\n  \"checks_failed\": " << failures.size() << ",\n  \"results\": {";
    bool first_result = true;
    for (std::size_t k = 0; k < impls.size(); ++k) {
      if (!ran(k)) continue;
      f << (first_result ? "" : ",") << "\n    \"" << impls[k]->name << "\": {\"first_s\": [";
      first_result = false;
      for (std::size_t r = 0; r < res[k].first.size(); ++r) f << (r ? ", " : "") << bench::num(res[k].first[r]);
      f << "], \"later_median_s\": [";
      for (std::size_t r = 0; r < res[k].later.size(); ++r) f << (r ? ", " : "") << bench::num(res[k].later[r]);
      f << "], \"later_max_s\": [";
      for (std::size_t r = 0; r < res[k].later_max.size(); ++r) f << (r ? ", " : "") << bench::num(res[k].later_max[r]);
      f << "]}";
    }
    if (!phase_tables.empty()) {
      f << "\n  },\n  \"phases\": {";
      for (std::size_t i = 0; i < phase_tables.size(); ++i) {
        f << (i ? "," : "") << "\n    \"" << phase_tables[i].name << "\": {";
        for (int k = 0; k < phase_count; ++k) {
          f << (k ? ", " : "") << "\"" << phase_keys[k] << "\": [";
          for (int q = 0; q < c.np; ++q)
            f << (q ? ", " : "") << bench::num(phase_tables[i].median[std::size_t(q * phase_count + k)]);
          f << "]";
        }
        f << "}";
      }
    }
    f << "\n  },\n  \"solve\": {";
    bool first_solve = true;
    for (std::size_t k = 0; k < impls.size(); ++k) {
      if (solved[k].solver.empty()) continue;
      f << (first_solve ? "" : ",") << "\n    \"" << impls[k]->name << "\": {\"solver\": \"" << solved[k].solver
        << "\", \"iterations\": " << solved[k].iterations << ", \"error_inf\": " << bench::num(solved[k].error) << "}";
      first_solve = false;
    }
    // The goals' ratios: accrete against the bound, reproducible against
    // default, and each other implementation's time over accrete's (> 1:
    // accrete faster), first round and later rounds.
    f << "\n  },\n  \"summary\": {";
    const char* sep = "\n    \"";
    auto put = [&](const std::string& key, double v) {
      f << sep << key << "\": " << bench::num(v);
      sep = ",\n    \"";
    };
    if (ran(0) && ran(ib)) {
      put("accrete_later_over_bound", ratio(0, false));
      put("accrete_first_over_bound", ratio(0, true));
    }
    if (ran(0) && ran(1)) {
      put("accrete_repro_over_accrete_later", bench::median_ratio(res[1].later, res[0].later));
      put("accrete_repro_over_accrete_first", bench::median_ratio(res[1].first, res[0].first));
    }
    for (std::size_t k = 2; k < ib; ++k) {
      if (!ran(k)) continue;
      if (ran(0)) {
        put(impls[k]->name + "_over_accrete_later", bench::median_ratio(res[k].later, res[0].later));
        put(impls[k]->name + "_over_accrete_first", bench::median_ratio(res[k].first, res[0].first));
      }
      if (ran(ib)) put(impls[k]->name + "_later_over_bound", ratio(k, false));
    }
    f << "\n  }\n}\n";
  }
  if (!failures.empty() && c.me == 0) std::fprintf(stderr, "bench_fe_assembly: checks failed\n");
  return failures.empty() ? 0 : 1;
}
}  // namespace
