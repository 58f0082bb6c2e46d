"""Plots and Markdown tables of bench_fe_assembly's JSON (bench/fe_assembly/run.sh
writes it to bench/fe_assembly/results/).

    python3 bench/fe_assembly/plot.py

Writes results/fe_assembly-<preset>.png (time per round over the local-apply
bound, first and later rounds, every implementation and configuration) and
prints the README's tables (medians as the JSON holds them)."""
import glob
import json
import os
import sys
from statistics import median

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ORDER = ["accrete", "accrete_repro", "mpi_alltoallv", "petsc_setvalues", "petsc_coo", "hypre_ij", "tpetra_fe", "bound"]
MPI_NAME = {"openmpi": "Open MPI", "mpich": "MPICH"}


def load():
    runs = []
    for f in sorted(glob.glob(os.path.join(HERE, "results", "*_np*.json"))):
        r = json.load(open(f))
        r["mpi"] = os.path.basename(f).split("_")[0]
        runs.append(r)
    return runs


def key(r):
    return (r["mpi"] != "openmpi", r["partition"], r["processes"])


def table(runs, preset):
    print(f"\n`{preset}`: seconds per round (median of {runs[0]['reps']} repetitions), "
          "and the median over repetitions of the ratio to the bound\n")
    print("| MPI, partition, P | implementation | first round | later rounds | slowest later | first / bound | later / bound | CG iterations |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in sorted(runs, key=key):
        label = f"{MPI_NAME[r['mpi']]}, {r['partition']}, {r['processes']}"
        b = r["results"]["bound"]
        for name in ORDER:
            if name not in r["results"]:
                continue
            x = r["results"][name]
            fb = median([f / g for f, g in zip(x["first_s"], b["first_s"])])
            lb = median([f / g for f, g in zip(x["later_median_s"], b["later_median_s"])])
            its = r.get("solve", {}).get(name, {}).get("iterations", "")
            print(f"| {label} | {name} | {median(x['first_s']):.4f} | {median(x['later_median_s']):.4f} | {median(x.get('later_max_s', [float('nan')])):.4f} | {fb:.2f} | {lb:.2f} | {its} |")
            label = ""


GOALS = [
    ("later / bound (goal <= 1.1)", "accrete_later_over_bound"),
    ("COO / accrete, later (goal >= 1.2)", "petsc_coo_over_accrete_later"),
    ("MatSetValues / accrete, later (goal >= 3)", "petsc_setvalues_over_accrete_later"),
    ("hypre / accrete, later (goal >= 2)", "hypre_ij_over_accrete_later"),
    ("MPI / accrete, later (goal > 1)", "mpi_alltoallv_over_accrete_later"),
    ("Tpetra / accrete, later", "tpetra_fe_over_accrete_later"),
    ("MatSetValues / accrete, first (goal >= 2)", "petsc_setvalues_over_accrete_first"),
    ("COO / accrete, first (goal >= 5)", "petsc_coo_over_accrete_first"),
    ("Tpetra / accrete, first", "tpetra_fe_over_accrete_first"),
    ("repro / default, later (goal <= 1.5)", "accrete_repro_over_accrete_later"),
]


def goals(runs):
    print("\nThe goals' ratios (JSON `summary`; other implementation's time over accrete's)\n")
    print("| cell | " + " | ".join(h for h, _ in GOALS) + " |")
    print("| --- |" + " ---: |" * len(GOALS))
    for r in sorted(runs, key=lambda r: (r["mpi"] != "openmpi", r["preset"] != "paper", r["partition"], r["processes"])):
        cell = f"{MPI_NAME[r['mpi']]} {r['preset']} {r['partition']} {r['processes']}"
        vals = [r["summary"].get(k) for _, k in GOALS]
        print(f"| {cell} | " + " | ".join("" if v is None else f"{v:.2f}" for v in vals) + " |")


def plot(runs, preset):
    runs = sorted(runs, key=key)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=False)
    for ax, which in zip(axes, ["first_s", "later_median_s"]):
        labels = [f"{MPI_NAME[r['mpi']]}\n{r['partition']} P={r['processes']}" for r in runs]
        names = [n for n in ORDER if n != "bound" and any(n in r["results"] for r in runs)]
        w = 0.8 / len(names)
        for k, name in enumerate(names):
            ys = []
            for r in runs:
                if name in r["results"]:
                    b = r["results"]["bound"][which]
                    ys.append(median([f / g for f, g in zip(r["results"][name][which], b)]))
                else:
                    ys.append(float("nan"))
            ax.bar([i + k * w for i in range(len(runs))], ys, w, label=name)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_yscale("log")
        ax.set_xticks([i + 0.4 - w / 2 for i in range(len(runs))])
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_ylabel("time / local-apply bound (log)")
        ax.set_title(f"{preset}: {'first round' if which == 'first_s' else 'later rounds (median)'}")
    axes[0].legend(fontsize=8)
    png = os.path.join(HERE, "results", f"fe_assembly-{preset}.png")
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)
    print("wrote", png, file=sys.stderr)


def main():
    runs = load()
    goals(runs)
    for preset in sorted({r["preset"] for r in runs}):
        mine = [r for r in runs if r["preset"] == preset]
        table(mine, preset)
        plot(mine, preset)


if __name__ == "__main__":
    main()
