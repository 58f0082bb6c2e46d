"""The Hessian demo in Python: the same workload, calls and output as the
C++ demo (examples/hessian/hessian_demo.cpp), so the checksum and residual
match it at the same P.

    mpiexec -n 2 python python/examples/hessian.py [--preset tiny|small|paper|large]
        [--strategy packets|alltoall] [--lambda x] [--no-solve]
"""
import argparse
import sys
import time

import numpy as np
from mpi4py import MPI

import accrete
from accrete import linalg, workload


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="small")
    ap.add_argument("--strategy", default="packets", choices=["packets", "alltoall"])
    ap.add_argument("--lambda", dest="lam", type=float, default=-1.0)
    ap.add_argument("--no-solve", action="store_true")
    args = ap.parse_args()

    accrete.init()
    comm = MPI.COMM_WORLD
    me, P = accrete.rank_me(), accrete.rank_n()
    prm = workload.preset(args.preset)
    prm.validate()
    N, n = prm.N, prm.n
    grid = workload.grid_shape(P)
    H = accrete.ConvergentMatrix(N, N, dtype=np.float32, grid=grid, block=(64, 64), strategy=args.strategy)
    g = accrete.ConvergentMatrix(N, 1, dtype=np.float32, grid=grid, block=(64, 64), strategy=args.strategy)

    # ---- assembly: H[ix, ix] += B_u, g[ix] += B_u 1 -------------------------------
    zero = np.zeros(1, dtype=np.int64)
    t_gen = 0.0
    accrete.barrier()
    t0 = time.perf_counter()
    for u in range(prm.U):
        tg = time.perf_counter()
        ix, B = workload.make_update(prm, me, u)
        gu = B.sum(axis=1, dtype=np.float32).reshape(n, 1)  # B_u * 1 (a residual of ones)
        t_gen += time.perf_counter() - tg
        H.update(B, ix, ix)
        g.update(gu, ix, zero)
    H.commit()
    g.commit()
    T = comm.allreduce(time.perf_counter() - t0, op=MPI.MAX)

    loc = H.local
    checksum = comm.allreduce(float(loc.sum(dtype=np.float64)))
    expected = workload.expected_checksum(prm, P)
    sum_ok = checksum == expected if prm.k == 0 else abs(checksum - expected) <= 1e-5 * max(1.0, abs(expected))
    if me == 0:
        print(f"accrete Hessian assembly from Python (ConvergentMatrix float32, strategy {args.strategy})")
        print(f"  N = {N}, update n = {n} (Lr {prm.Lr} x Ll {prm.Ll}), U = {prm.U} per process, k = {prm.k}")
        print(f"  P = {P} processes on a {grid[0]} x {grid[1]} grid, blocks 64 x 64")
        print(f"  assembly time T = {T:.3f} s (max over processes, incl. generation {t_gen:.3f} s on rank 0)")
        print(f"  checksum {checksum:.6f}, expected {expected:.6f}: {'OK' if sum_ok else 'MISMATCH'}")
    rc = 0 if sum_ok else 1

    # ---- damped Gauss-Newton step with ScaLAPACK (the C++ demo's calls) -----------
    if not args.no_solve:
        H.fill_lower()
        lam = args.lam if args.lam >= 0 else 1.0001 * linalg.norm("1", H) + 1.0
        linalg.add_to_diagonal(H, lam)
        A = accrete.ConvergentMatrix(N, N, dtype=np.float32, grid=grid, block=(64, 64))
        r = accrete.ConvergentMatrix(N, 1, dtype=np.float32, grid=grid, block=(64, 64))
        A.local[...] = H.local  # zero-copy views: a copy of H + lambda I and of g
        r.local[...] = g.local
        gnorm = linalg.norm("F", g)
        accrete.barrier()
        ts = time.perf_counter()
        info = 0
        try:
            linalg.posv(H, g)  # H = U, g = dm
        except RuntimeError as e:
            info = -1
            if me == 0:
                print(e, file=sys.stderr)
        t_solve = comm.allreduce(time.perf_counter() - ts, op=MPI.MAX)
        linalg.gemm("N", "N", -1.0, A, g, 1.0, r)  # r = g - A dm
        rnorm, xnorm, anorm = linalg.norm("F", r), linalg.norm("F", g), linalg.norm("F", A)
        rel = rnorm / (anorm * xnorm + gnorm)
        solve_ok = info == 0 and rel < 1e-5
        if me == 0:
            print(f"damped Gauss-Newton step (H + lambda I) dm = g, lambda = {lam:.6g}, ScaLAPACK psposv")
            print(f"  solve time {t_solve:.3f} s, info = {info}, |dm| = {xnorm:.6g}, |g| = {gnorm:.6g}")
            print(f"  relative residual |g - (H + lambda I) dm| / (|A| |dm| + |g|) = {rel:.3e}: "
                  f"{'OK' if solve_ok else 'FAILED'}")
        rc = rc or (0 if solve_ok else 1)
    return rc


if __name__ == "__main__":
    sys.exit(main())
