#!/usr/bin/env python3
"""The main table of bench/hessian/README.md from the JSON that sweep.sh
writes to results/main_table/: per cell, the medians over runs of each
implementation's time (milliseconds; per round for the 100-round rows) and
of each run's ratios.

    python3 bench/hessian/table.py [results/main_table]"""
import glob
import json
import os
import re
import statistics as st
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
where = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "results", "main_table")
runs = defaultdict(list)
for f in sorted(glob.glob(os.path.join(where, "*_run*.json"))):
    m = re.match(r"(.+)_(openmpi|mpich)_p(\d+)_run\d+\.json$", os.path.basename(f))
    runs[(m.group(1), m.group(2), int(m.group(3)))].append(json.load(open(f)))

ROWS = ["tiny", "small", "rounds_small", "large", "paper", "paper_node1"]
LABEL = {"rounds_small": "small (100 rounds, per round)", "paper_node1": "paper, node size 1"}
BASELINES = ["mpi_accumulate", "mpi_alltoallv", "mpi_shared_memory"]


def T(d, name):
    r = next((r for r in d["results"] if r["name"] == name), None)
    if r is None:
        return None
    return r["T"]  # per round in the 100-round rows, as the benchmark reports it


def bound(d):
    return d["physical_bound_T"]


def best(d):
    return min(t for t in (T(d, b) for b in BASELINES) if t is not None)


print("| preset | MPI | P | runs | packets [ms] | repro [ms] | MPI_Accumulate [ms] | Alltoallv [ms] | MPI-3 shm [ms] "
      "| local-apply ref [ms] | bound [ms] | best baseline / packets, per run | median | packets / bound | packets / ref "
      "| repro / packets | checksums |")
print("| --- | --- | --- | ---: | " + "---: | " * 7 + "--- | " + "---: | " * 4 + "--- |")
for key in sorted(runs, key=lambda k: (ROWS.index(k[0]), k[1] != "openmpi", k[2])):
    ds = runs[key]
    ms = lambda f: st.median(f(d) for d in ds) * 1e3
    cols = []
    for name in ["accrete_packets", "accrete_packets_repro", *BASELINES, "local_apply_ref"]:
        cols.append("-" if T(ds[0], name) is None else f"{ms(lambda d, n=name: T(d, n)):.3f}")
    pk = lambda d: T(d, "accrete_packets")
    per_run = [best(d) / pk(d) for d in ds]
    ratio = lambda num, den: st.median(num(d) / den(d) for d in ds)
    ok = all(r["checksum_ok"] for d in ds for r in d["results"] if r["name"] != "compute_only")
    mpi = {"mpich": "MPICH", "openmpi": "Open MPI"}[key[1]]
    print(f"| {LABEL.get(key[0], key[0])} | {mpi} | {key[2]} | {len(ds)} | " + " | ".join(cols) +
          f" | {ms(bound):.3f} | {', '.join(f'{x:.2f}' for x in per_run)} | {st.median(per_run):.2f}"
          f" | {ratio(pk, bound):.2f} | {ratio(pk, lambda d: T(d, 'local_apply_ref')):.2f}"
          f" | {ratio(lambda d: T(d, 'accrete_packets_repro'), pk):.2f} | {'ok' if ok else 'FAILED'} |")
