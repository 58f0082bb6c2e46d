#!/usr/bin/env python3
"""Python-driven Hessian assembly against the C++ benchmark, in one run.

Runs the C++ benchmark's accrete_packets implementation (bench_hessian
--only accrete_packets, one repetition per launch) and its Python twin
(bench/python_hessian/bench.py: the same matrix, generator loop and clock)
alternately, REPS times each, on the same preset, P and MPI. T is the
spec's: barrier, generation + update per update, commit, max over
processes. Prints a table, writes JSON with summary.python_over_cpp (the
issue's goal: at most 1.10); both must report an exact checksum.

    bench/python_hessian/run.py --mpi openmpi --python build/openmpi/python-venv/bin/python \\
        [--preset paper] [--np 2] [--reps 5]
(Build bench_hessian first: ./x build, MPI=mpich ./x build.)
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def launcher(mpi, np):
    if mpi == "openmpi":
        return ["/usr/bin/mpiexec.openmpi", "--oversubscribe", "-n", str(np)]
    return ["/usr/bin/mpiexec.mpich", "-n", str(np)]


def run(cmd, env, pattern):
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        sys.exit(f"failed ({out.returncode}): {' '.join(cmd)}\n{out.stdout}\n{out.stderr}")
    m = re.search(pattern, out.stdout)
    if not m:
        sys.exit(f"no time or checksum not ok: {' '.join(cmd)}\n{out.stdout}")
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpi", default="openmpi", choices=["openmpi", "mpich"])
    ap.add_argument("--python", required=True, help="the interpreter that has accrete installed")
    ap.add_argument("--preset", default="paper")
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()

    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    if a.mpi == "openmpi":
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cpp = os.path.join(ROOT, "build", a.mpi, "bench", "hessian", "bench_hessian")
    impls = {
        "cpp": (launcher(a.mpi, a.np) + [cpp, "--preset", a.preset, "--reps", "1", "--only", "accrete_packets",
                                         "--no-baselines"], r"accrete_packets +([0-9.]+) .* ok\n"),
        "python": (launcher(a.mpi, a.np) + [a.python, os.path.join(ROOT, "bench", "python_hessian", "bench.py"),
                                            a.preset], r"T = ([0-9.]+) s, checksum ok"),
    }
    times = {k: [] for k in impls}
    for rep in range(a.reps):  # interleaved: machine drift hits both alike
        for name, (cmd, pattern) in impls.items():
            times[name].append(run(cmd, env, pattern))
            print(f"rep {rep + 1}/{a.reps} {name:6s} T = {times[name][-1]:.4f} s", flush=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = med["python"] / med["cpp"]
    print(f"\nHessian assembly (accrete_packets), preset {a.preset}, P = {a.np}, {a.mpi}, medians of {a.reps}")
    print(f"{'impl':8s} {'T median (s)':>14s} {'min':>10s} {'max':>10s} {'/ C++':>8s}")
    for k in impls:
        print(f"{k:8s} {med[k]:14.4f} {min(times[k]):10.4f} {max(times[k]):10.4f} {med[k] / med['cpp']:8.3f}")
    print(f"goal: python/C++ <= 1.10: {'met' if ratio <= 1.10 else 'MISSED'} ({ratio:.3f})")
    out = a.out or os.path.join(ROOT, "bench", "python_hessian", "results",
                                f"python_hessian_{a.mpi}_{a.preset}_P{a.np}.json")
    with open(out, "w") as f:
        json.dump({"bench": "python_hessian", "mpi": a.mpi, "P": a.np, "preset": a.preset,
                   "reps": a.reps, "times": times, "median": med,
                   "summary": {"python_over_cpp": round(ratio, 6), "goal": 1.10, "met": ratio <= 1.10}},
                  f, indent=1)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
