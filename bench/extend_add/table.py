#!/usr/bin/env python3
"""The README's result tables from bench_extend_add's JSON: one row per
(P, n), milliseconds per distributed pass (medians of the run's reps) and
the plain-MPI variants' time over accrete's (above 1: accrete faster).
Usage: table.py FILE.json... (each one run, e.g. results/openmpi-P2.json)"""
import json, sys

cols = ["accrete_put", "accrete_rpc", "accrete_rpc_1msg", "mpi_alltoallv", "mpi_p2p"]
print("| P | n | root | max front | dist | MB moved | accrete_put | accrete_rpc | accrete_rpc_1msg | alltoallv "
      "| p2p | put vs a2av | put vs p2p | rpc vs a2av | rpc vs p2p | check |")
print("|" + "---|" * 16)
for path in sys.argv[1:]:
    j = json.load(open(path))
    for c in j["cases"]:
        v = {k: c["variants"][k]["median_s"] for k in cols}
        ms = " | ".join(f"{v[k] * 1e3:.2f}" for k in cols)
        r = lambda a, b: f"{v[b] / v[a]:.2f}x"
        print(f"| {j['P']} | {c['n']} | {c['root_front']} | {c['max_front']} | {c['dist_fronts']} | {c['mb_moved']:.1f} | "
              f"{ms} | {r('accrete_put', 'mpi_alltoallv')} | {r('accrete_put', 'mpi_p2p')} | "
              f"{r('accrete_rpc', 'mpi_alltoallv')} | {r('accrete_rpc', 'mpi_p2p')} | "
              f"{'exact' if c['exact'] else 'WRONG'} |")
