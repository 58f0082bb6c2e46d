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
    first = runs[ps[0]]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.2))
    if first.get("bench") == "dht":
        # Weak scaling of a fixed number of blocking finds per process: the
        # time of the phase is proportional to 1 / (finds per second).
        keys = [(x["table"], x["value_bytes"]) for x in first["results"]]
        sizes = sorted({k[1] for k in keys})
        for table, vb in keys:
            r = [next(x["finds_per_s"] for x in runs[p]["results"] if (x["table"], x["value_bytes"]) == (table, vb))
                 for p in ps]
            # Colour by value size, line style by table.
            look = dict(ls={"mpi": "-", "rpc": "--", "lz": ":"}.get(table, "-."), color=f"C{sizes.index(vb)}",
                        marker="o", label=f"{table} {vb} B")
            ax.plot(ps, r, **look)
            bx.plot(ps, [r[0] / v for v in r], **look)
        title = f"{os.path.basename(folder.rstrip('/'))}: DHT finds, weak scaling"
        labels = ("finds/s per process (simulated)", f"T(P) / T({ps[0]}) = rate({ps[0]}) / rate(P)")
    else:
        for n in [x["name"] for x in first["results"]]:
            t = [next(x["T"] for x in runs[p]["results"] if x["name"] == n) for p in ps]
            ax.plot(ps, t, marker="o", label=n)
            bx.plot(ps, [v / t[0] for v in t], marker="o", label=n)
        title = f"{os.path.basename(folder.rstrip('/'))}: preset {first['preset']}, N {first['N']}, n {first['n']}"
        labels = ("T [simulated s]", f"T(P) / T({ps[0]})")
    for a, yl in zip((ax, bx), labels):
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
