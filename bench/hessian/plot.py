"""Plots bench_hessian JSON results: T vs P per implementation (one panel per
MPI and preset) and the per-process time breakdown (binning / moving /
applying / waiting) for the largest P, like Fig. 4C of French et al."""
import glob
import json
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

folder = sys.argv[1] if len(sys.argv) > 1 else "bench/hessian/results"
runs = [json.load(open(f)) for f in sorted(glob.glob(os.path.join(folder, "*.json")))]
if not runs:
    sys.exit("no results in " + folder)
groups = defaultdict(list)
for r in runs:
    mpi = "MPICH" if "MPICH" in r["mpi"] else r["mpi"].split(",")[0].split(" v")[0].strip()
    groups[(mpi, r["preset"], r["node_size"], r["k"])].append(r)

for (mpi, preset, node, k), rs in groups.items():
    rs.sort(key=lambda r: r["P"])
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.5))
    names = []
    for r in rs:
        for x in r["results"]:
            if x["name"] != "compute_only" and x["name"] not in names:
                names.append(x["name"])
    for name in names:
        ps, ts = [], []
        for r in rs:
            for x in r["results"]:
                if x["name"] == name:
                    ps.append(r["P"])
                    ts.append(x["T"])
        ax.plot(ps, ts, marker="o", label=name)
    ax.set_xlabel("processes P")
    ax.set_ylabel("T [s] (median)")
    ax.set_title(f"hessian {preset} (k={k}): {mpi}, node size {node}")
    ax.set_xticks(sorted({r["P"] for r in rs}))
    ax.legend(fontsize=8)
    big = rs[-1]
    parts = ["bin", "move", "apply", "wait"]
    bottom = [0.0] * len(names)
    for part in parts:
        vals = [next((x[part] for x in big["results"] if x["name"] == n), 0.0) for n in names]
        bx.bar(range(len(names)), vals, bottom=bottom, label=part)
        bottom = [b + v for b, v in zip(bottom, vals)]
    bx.set_xticks(range(len(names)))
    bx.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
    bx.set_ylabel("seconds (max over processes)")
    bx.set_title(f"time breakdown at P = {big['P']}")
    bx.legend(fontsize=8)
    fig.tight_layout()
    png = os.path.join(folder, f"hessian-{mpi.replace(' ', '_')}-{preset}-k{k}-node{node}.png")
    fig.savefig(png, dpi=110)
    print("wrote", png)
