"""Plots and Markdown tables of the dist_array benchmarks' JSON
(bench/common/run_array_benches.sh writes it to bench/<name>/results/).

    python3 bench/common/plot_array.py [hf_proxy matmul array_rma]

Writes bench/<name>/results/<name>-<mpi>-....png and prints, per benchmark,
the Markdown tables recorded in its README (medians as the JSON holds them).
"""
import glob
import json
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

IMPLS = ["accrete", "mpi", "ga"]
SHORT = {"block": "blk", "block_cyclic": "blk-cyc", "element_cyclic": "elem-cyc"}


def load(name):
    runs = []
    for f in sorted(glob.glob(f"bench/{name}/results/{name}_*.json")):
        r = json.load(open(f))
        r["_file"] = f
        runs.append(r)
    if not runs:
        print(f"no results for {name}", file=sys.stderr)
    return runs


def save(fig, name, stem):
    png = f"bench/{name}/results/{stem}.png"
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)
    print("wrote", png, file=sys.stderr)


def table_head(title, cols):
    print(f"### {title}\n")
    print("| " + " | ".join(cols) + " |")
    print("|" + " --- |" * len(cols))


def label(ax, ticks, ylabel, title, **tick_kw):
    ax.set_xticks(range(len(ticks)))
    ax.set_xticklabels(ticks, **tick_kw)
    ax.set_ylabel(ylabel)
    ax.set_title(title)


def finish(fig, axes, name, title, stem):
    axes[0].legend(fontsize=7)
    fig.suptitle(title)
    save(fig, name, stem)


def per_mpi(runs, width):
    """One figure per MPI with a panel per run (small before paper, then by P)."""
    by_mpi = defaultdict(list)
    for r in runs:
        by_mpi[r["mpi"]].append(r)
    for mpi, rs in sorted(by_mpi.items()):
        rs.sort(key=lambda r: (r["preset"] != "small", r["P"]))
        fig, axes = plt.subplots(1, len(rs), figsize=(width * len(rs), 4), squeeze=False)
        yield mpi, rs, fig, axes[0]


def hf_proxy():
    runs = load("hf_proxy")
    table_head("hf_proxy: T [ms] per phase (acc / get), median; ratio = T / T_accrete",
               ["MPI", "preset", "P", "distribution", "accrete", "plain MPI", "ratio", "GA", "ratio"])
    for mpi, rs, fig, axes in per_mpi(runs, 4):
        for ax, r in zip(axes, rs):
            cells = {(c["distribution"], c["impl"]): c for c in r["cells"]}
            dists = list(dict.fromkeys(c["distribution"] for c in r["cells"]))
            for d in dists:
                a = cells[(d, "accrete")]
                row = [mpi, r["preset"], str(r["P"]), d, f"{a['acc_s']*1e3:.1f} / {a['get_s']*1e3:.1f}"]
                for impl in ["mpi", "ga"]:
                    c = cells.get((d, impl))
                    if not c or c.get("skipped"):
                        row += ["not run", ""]
                        continue
                    row += [f"{c['acc_s']*1e3:.1f} / {c['get_s']*1e3:.1f}",
                            f"{c['acc_over_accrete']:.2f} / {c['get_over_accrete']:.2f}"]
                print("| " + " | ".join(row) + " |")
            w = 0.2
            for k, impl in enumerate(["mpi", "ga"]):
                for ph, hatch in (("acc", ""), ("get", "//")):
                    ys = []
                    for d in dists:
                        c = cells.get((d, impl))
                        ys.append(c[f"{ph}_over_accrete"] if c and not c.get("skipped") else 0)
                    xs = [i + (2 * k + (ph == "get")) * w - 1.5 * w for i in range(len(dists))]
                    ax.bar(xs, ys, w, hatch=hatch, color=f"C{k + 1}", label=f"{impl} {ph}")
            ax.axhline(1.0, color="k", lw=0.8)
            ax.axhline(1.4, color="r", lw=0.8, ls="--", label="goal for GA (1.4)")
            ax.set_yscale("log")
            label(ax, dists, "T / T_accrete", f"{r['preset']}, P = {r['P']}", fontsize=8)
        finish(fig, axes, "hf_proxy", f"hf_proxy, {mpi}: time relative to accrete (higher = accrete faster)",
               f"hf_proxy-{mpi}")
    print()


def matmul():
    runs = load("matmul")
    table_head("matmul: GFLOP/s and fraction of the DGEMM bound (P x one process's t^3 DGEMM rate, in the same run)",
               ["MPI", "preset", "P", "bound GFLOP/s", "distribution", "op", "accrete", "plain MPI", "GA",
                "T_mpi/T_acc", "T_ga/T_acc"])
    for mpi, rs, fig, axes in per_mpi(runs, 5):
        for ax, r in zip(axes, rs):
            cells = {(c["distribution"], c["op"], c["impl"]): c for c in r["cells"]}
            keys = list(dict.fromkeys((c["distribution"], c["op"]) for c in r["cells"]))
            for d, op in keys:
                a = cells[(d, op, "accrete")]
                row = [mpi, r["preset"], str(r["P"]), f"{r['dgemm_bound_gflops']:.1f}", d, op]
                ratios = []
                for impl in IMPLS:
                    c = cells.get((d, op, impl))
                    row.append(f"{c['gflops']:.1f} ({c['fraction_of_bound']*100:.0f}%)" if c else "not run")
                    if impl != "accrete":
                        ratios.append(f"{c['over_accrete']:.2f}" if c else "")
                print("| " + " | ".join(row + ratios) + " |")
            w = 0.27
            for k, impl in enumerate(IMPLS):
                ys = [cells[(d, op, impl)]["fraction_of_bound"] if (d, op, impl) in cells else 0 for d, op in keys]
                ax.bar([i + (k - 1) * w for i in range(len(keys))], ys, w, label=impl, color=f"C{k}")
            ax.axhline(0.85, color="r", lw=0.8, ls="--", label="goal 85% (paper, P = 2)")
            ax.set_ylim(0, 1.05)
            label(ax, [f"{SHORT[d]} {op}" for d, op in keys], "fraction of the DGEMM bound",
                  f"{r['preset']}, P = {r['P']} (bound {r['dgemm_bound_gflops']:.0f} GFLOP/s)", rotation=60, fontsize=7)
        finish(fig, axes, "matmul", f"matmul, {mpi}", f"matmul-{mpi}")
    print()


def array_rma():
    runs = load("array_rma")
    table_head("array_rma: microseconds per completed operation, median (T / T_mpi; T / T_memcpy)",
               ["MPI", "path", "P", "op", "patch", "accrete", "plain MPI", "GA", "memcpy", "accrete/mpi",
                "accrete/memcpy"])
    for r in sorted(runs, key=lambda r: (r["mpi"], r["path"], r["P"])):
        cells = {(c["op"], c["patch"], c["impl"]): c for c in r["cells"]}
        ops = list(dict.fromkeys(c["op"] for c in r["cells"]))
        sizes = sorted({c["patch"] for c in r["cells"]})
        fig, axes = plt.subplots(1, len(ops), figsize=(4.5 * len(ops), 4), squeeze=False)
        for ax, op in zip(axes[0], ops):
            for s in sizes:
                a = cells[(op, s, "accrete")]
                mem = a["seconds"] / a["over_memcpy"]
                row = [r["mpi"], r["path"], str(r["P"]), op, f"{s}x{s}"]
                for impl in IMPLS:
                    c = cells.get((op, s, impl))
                    row.append(f"{c['seconds']*1e6:.2f}" if c else "")
                row += [f"{mem*1e6:.2f}", f"{a['over_mpi']:.2f}", f"{a['over_memcpy']:.2f}"]
                print("| " + " | ".join(row) + " |")
            for k, impl in enumerate(IMPLS):
                pts = [(s * s * 8, cells[(op, s, impl)]["mb_per_s"]) for s in sizes if (op, s, impl) in cells]
                if pts:
                    ax.plot(*zip(*pts), marker="o", label=impl, color=f"C{k}")
            mem_pts = []
            for s in sizes:
                a = cells[(op, s, "accrete")]
                mem_pts.append((s * s * 8, s * s * 8 / (a["seconds"] / a["over_memcpy"]) / 1e6))
            ax.plot(*zip(*mem_pts), ls="--", color="k", label="strided memcpy")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("patch bytes")
            ax.set_ylabel("MB/s per process")
            ax.set_title(op)
        finish(fig, axes[0], "array_rma", f"array_rma, {r['mpi']}, {r['path']}, P = {r['P']}",
               f"array_rma-{r['mpi']}-{r['path']}-P{r['P']}")
    print()


for name in sys.argv[1:] or ["hf_proxy", "matmul", "array_rma"]:
    {"hf_proxy": hf_proxy, "matmul": matmul, "array_rma": array_rma}[name]()
