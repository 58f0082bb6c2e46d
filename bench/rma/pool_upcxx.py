#!/usr/bin/env python3
"""upcxx-x of bench_rma pooled over several runs of one mode.

One run's upcxx-x per cell is the median of 7 within-repetition ratios;
for the smallest transfers (about 10 ns per operation node-local) that
median moves by +-5% from run to run on a 2-core machine. Pooling the
ratios of every repetition of every run gives each cell one median over
3 x 7 ratios.

    bench/rma/pool_upcxx.py MODE run1.json run2.json ... [--json OUT]

Prints the mode's pooled median, maximum and the cells over 1.05, and the
cells that were over 1.05 in any single run.
"""
import json
import statistics
import sys


def ratios(cell):
    # upcxx-x: upcxx time over accrete time; bandwidth runs store GB/s.
    a, u = cell["accrete"]["reps"], cell["upcxx"]["reps"]
    if cell["kind"] == "bw":
        return [x / y for x, y in zip(a, u)]
    return [y / x for x, y in zip(a, u)]


def main(argv):
    out = None
    if "--json" in argv:
        i = argv.index("--json")
        out = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    mode, files = argv[0], argv[1:]
    runs = [json.load(open(f)) for f in files]
    cells = []
    for i, c in enumerate(runs[0]["results"]):
        if "upcxx" not in c:
            continue
        pooled, single = [], []
        for run in runs:
            cc = run["results"][i]
            if (cc["op"], cc["kind"], cc["size"]) != (c["op"], c["kind"], c["size"]):
                sys.exit(f"{mode}: runs differ in their cells")
            pooled += ratios(cc)
            single.append(cc["upcxx_slowdown"])
        cells.append({"op": c["op"], "kind": c["kind"], "size": c["size"],
                      "upcxx_x": round(statistics.median(pooled), 4), "per_run": single})
    xs = [c["upcxx_x"] for c in cells]
    over = [c for c in cells if c["upcxx_x"] > 1.05]
    summary = {"mode": mode, "runs": len(runs), "cells": len(cells),
               "upcxx_x_median": round(statistics.median(xs), 4), "upcxx_x_max": max(xs),
               "cells_over_1_05": len(over),
               "single_run_cells_over_1_05": [sum(c["per_run"][r] > 1.05 for c in cells) for r in range(len(runs))]}
    print(f"{mode}: {len(runs)} runs, {len(cells)} cells, pooled upcxx-x median {summary['upcxx_x_median']:.3f}, "
          f"max {summary['upcxx_x_max']:.3f}, over 1.05: {len(over)}; single runs over 1.05: "
          f"{summary['single_run_cells_over_1_05']}")
    for c in over:
        print(f"  {c['op']} {c['kind']} {c['size']} B: pooled {c['upcxx_x']:.3f}, runs {c['per_run']}")
    if out:
        json.dump({"summary": summary, "cells": cells}, open(out, "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
