"""Plots a simulated scaling series written by bench/scale/series.sh:
T(P) and T(P)/T(first P) per implementation, one PNG per series folder.

    python3 bench/scale/plot.py bench/scale/results/<series> [more folders]
"""
import glob
import json
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

for folder in sys.argv[1:]:
    runs = {}
    for f in glob.glob(os.path.join(folder, "P*.json")):
        runs[int(re.search(r"P(\d+)\.json$", f).group(1))] = json.load(open(f))
    if not runs:
        sys.exit("no P*.json in " + folder)
    ps = sorted(runs)
    names = [x["name"] for x in runs[ps[0]]["results"]]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.2))
    for n in names:
        t = [next(x["T"] for x in runs[p]["results"] if x["name"] == n) for p in ps]
        ax.plot(ps, t, marker="o", label=n)
        bx.plot(ps, [v / t[0] for v in t], marker="o", label=n)
    first = runs[ps[0]]
    title = f"{os.path.basename(folder.rstrip('/'))}: preset {first['preset']}, N {first['N']}, n {first['n']}"
    for a, yl in ((ax, "T [simulated s]"), (bx, f"T(P) / T({ps[0]})")):
        a.set_xscale("log", base=2)
        a.set_xlabel("P (24 per simulated node)")
        a.set_ylabel(yl)
        a.grid(True, alpha=0.3)
    ax.set_yscale("log")
    bx.axhline(1.05, color="grey", ls="--", lw=0.8)
    ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    out = os.path.join(folder, "scaling.png")
    fig.savefig(out, dpi=110)
    print("wrote", out)
