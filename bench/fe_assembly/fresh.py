"""The table of bench/fe_assembly/fresh.sh's runs: each implementation's
first round alone in a new process, medians over runs, and the ratios the
first-round goals name (another implementation's time over accrete's, per
run, then the median).

    python3 bench/fe_assembly/fresh.py [DIR]

Reads DIR (default results/fresh), prints a Markdown table and writes
DIR/summary.json."""
import collections
import glob
import json
import os
import re
import sys
from statistics import median

HERE = os.path.dirname(os.path.abspath(__file__))
DIR = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "results", "fresh")
MPI_NAME = {"openmpi": "Open MPI", "mpich": "MPICH"}
NAME = re.compile(r"(\w+?)_(\w+?)_(\w+?)_np(\d+)_(\w+)_run(\d+)\.json$")


def main():
    first = collections.defaultdict(dict)  # cell -> impl -> run -> seconds
    for f in glob.glob(os.path.join(DIR, "*_run*.json")):
        m = NAME.search(os.path.basename(f))
        if not m:
            continue
        mpi, preset, part, np, impl, run = m.groups()
        r = json.load(open(f))
        if r.get("checks_failed", 0):
            raise SystemExit(f"{f}: checks failed")
        first[(mpi, preset, part, int(np))].setdefault(impl, {})[int(run)] = r["results"][impl]["first_s"][0]
    peers = ["petsc_setvalues", "petsc_coo", "tpetra_fe", "hypre_ij"]
    shown = [p for p in peers if any(p in v for v in first.values())]
    head = ["cell", "runs", "accrete first [s], per run"] + [f"{p} / accrete, median" for p in shown]
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    summary = {}
    for cell in sorted(first, key=lambda c: (c[0] != "openmpi", c[1] != "small", c[2], c[3])):
        mpi, preset, part, np = cell
        imp = first[cell]
        acc = imp.get("accrete", {})
        row = [f"{MPI_NAME.get(mpi, mpi)} {preset} {part} {np}", str(len(acc)),
               ", ".join(f"{acc[k]:.3f}" for k in sorted(acc))]
        tag = f"{mpi}_{preset}_{part}_np{np}"
        for p in shown:
            runs = [k for k in sorted(acc) if k in imp.get(p, {})]
            if not runs:
                row.append("")
                continue
            ratios = [imp[p][k] / acc[k] for k in runs]
            row.append(f"{median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})")
            summary[f"{tag}_{p}_first_over_accrete_first"] = median(ratios)
        print("| " + " | ".join(row) + " |")
    with open(os.path.join(DIR, "summary.json"), "w") as f:
        json.dump({"benchmark": "fe_assembly first round, one implementation per new process",
                   "summary": summary}, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
