#!/usr/bin/env bash
# Runs a simulated scaling series (bench/scale/README.md) and writes one
# JSON per P into OUT, then prints T(P)/T(first P) per implementation.
#
#   bench/scale/series.sh weak   OUT "16 32 64" [bench_hessian args...]   # fixed U per process
#   bench/scale/series.sh strong OUT "16 32 64" [bench_hessian args...]   # fixed U x P (U_TOTAL)
#
# Environment: ONLY (implementations, default accrete_packets,mpi_accumulate,
# mpi_alltoallv,local_apply_ref), U (updates per process, weak; default 8),
# U_TOTAL (strong: total updates, default 16 x U), plus run_smpi.sh's.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 3 ] || { sed -n '2,11p' "$0"; exit 2; }
mode=$1 out=$2 ps=$3; shift 3
mkdir -p "$out"
only=${ONLY:-accrete_packets,mpi_accumulate,mpi_alltoallv,local_apply_ref}
u=${U:-8}
total=${U_TOTAL:-$((16 * u))}
export ACCRETE_SEGMENT_SIZE=${ACCRETE_SEGMENT_SIZE:-1M}
for p in $ps; do
  if [ "$mode" = strong ]; then up=$((total / p)); [ "$up" -ge 1 ] || { echo "U_TOTAL $total < P $p" >&2; exit 2; }; else up=$u; fi
  start=$(date +%s)
  bench/scale/run_smpi.sh "$p" --U "$up" --reps 1 --only "$only" --json "$out/P$p.json" "$@" > "$out/P$p.txt" 2>&1 ||
    { echo "P=$p failed (see $out/P$p.txt)" >&2; tail -5 "$out/P$p.txt" >&2; exit 1; }
  echo "P=$p U=$up done in $(( $(date +%s) - start )) s of real time" | tee -a "$out/series.log"
done
python3 - "$out" $ps <<'PY'
import json, sys
out, ps = sys.argv[1], sys.argv[2:]
runs = {int(p): json.load(open(f"{out}/P{p}.json")) for p in ps}
names = [r["name"] for r in runs[int(ps[0])]["results"]]
first = int(ps[0])
print("P      " + "".join(f"{n:>24}" for n in names))
for p in sorted(runs):
    row = {r["name"]: r for r in runs[p]["results"]}
    cells = []
    for n in names:
        t, t0 = row[n]["T"], {r["name"]: r for r in runs[first]["results"]}[n]["T"]
        ok = "" if row[n]["checksum_ok"] else " BAD"
        cells.append(f"{t:10.5f} ({t / t0:5.2f}x){ok}")
    print(f"{p:<7}" + "".join(f"{c:>24}" for c in cells))
PY
