"""The C++ benchmark's accrete_packets run (bench/hessian/hessian_bench.cpp,
run_accrete) in Python: the same H, the same generator loop, the same
clock (barrier, generation + update per update, commit, max over
processes). Prints "T = <s>" and whether the checksum is exact.

    mpiexec -n 2 python bench/python_hessian/bench.py [preset]
"""
import sys
import time

import numpy as np
from mpi4py import MPI

import accrete
from accrete import workload

accrete.init()
comm = MPI.COMM_WORLD
prm = workload.preset(sys.argv[1] if len(sys.argv) > 1 else "paper")
P, me = accrete.rank_n(), accrete.rank_me()
H = accrete.ConvergentMatrix(prm.N, prm.N, dtype=np.float32, grid=workload.grid_shape(P), block=(64, 64))
gen = workload.Generator(prm, me)
accrete.barrier()
t0 = time.perf_counter()
for u in range(prm.U):
    ix, B = gen.make(u)
    H.update(B, ix, ix)
H.commit()
T = comm.allreduce(time.perf_counter() - t0, op=MPI.MAX)
checksum = comm.allreduce(float(H.local.sum(dtype=np.float64)))
ok = checksum == workload.expected_checksum(prm, P)
st = H.stats()
phases = {k: comm.allreduce(st[k], op=MPI.MAX) for k in ("t_bin", "t_move", "t_apply", "t_wait")}
if me == 0:
    print(f"T = {T:.6f} s, checksum {'ok' if ok else 'MISMATCH'}; " +
          ", ".join(f"{k[2:]} {v:.4f} s" for k, v in phases.items()))
sys.exit(0 if ok else 1)
