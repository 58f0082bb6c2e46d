#!/usr/bin/env bash
# A/B of the single-threaded (seq) path between two builds of accrete:
# bench_rma (node-local and MPI path, --quick, up to 64 KiB) and bench_dht
# (rpc and lz tables, P = 2), the two builds alternating first and second
# over 4 rounds; then, per cell, B's time over A's (> 1: B slower), as the
# median over rounds of each build's median.
#
#   bench/par_flood/ab_seq.sh OLD_BUILD_DIR NEW_BUILD_DIR [OUT_DIR]
#
# Open MPI builds (mpiexec.openmpi).
set -euo pipefail
A=$1 B=$2 R=${3:-ab_seq_results}
mkdir -p "$R"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
run() { mpiexec.openmpi --oversubscribe -n 2 -x ACCRETE_NODE_SIZE "$@" > /dev/null 2>&1; }
for round in 1 2 3 4; do
  if [ $((round % 2)) = 1 ]; then order="b a"; else order="a b"; fi
  for v in $order; do
    if [ "$v" = a ]; then b=$A; else b=$B; fi
    ACCRETE_NODE_SIZE= run "$b/bench/rma/bench_rma" --quick --max-size 65536 --json "$R/rma_local_${v}_$round.json"
    ACCRETE_NODE_SIZE=1 run "$b/bench/rma/bench_rma" --quick --max-size 65536 --json "$R/rma_mpi_${v}_$round.json"
    ACCRETE_NODE_SIZE= run "$b/bench/dht/bench_dht" --reps 3 --tables rpc,lz --json "$R/dht_${v}_$round.json"
  done
done
python3 - "$R" <<'PY'
import json, statistics as st, sys
R = sys.argv[1]
def report(name, cells):
    r = sorted(cells)
    print(f"{name}: {len(r)} cells, B/A time: median {st.median(r):.3f}, min {r[0]:.3f}, max {r[-1]:.3f}")
for mode in ("local", "mpi"):
    c = {}
    for v in "ab":
        for k in range(1, 5):
            for p in json.load(open(f"{R}/rma_{mode}_{v}_{k}.json"))["results"]:
                c.setdefault((p["size"], p["op"], p["kind"]), {}).setdefault(v, []).append(p["accrete"]["median"])
    report(f"bench_rma {mode}", [st.median(x["b"]) / st.median(x["a"]) if key[2] == "lat"
                                 else st.median(x["a"]) / st.median(x["b"]) for key, x in c.items()])
c = {}
for v in "ab":
    for k in range(1, 5):
        for x in json.load(open(f"{R}/dht_{v}_{k}.json"))["results"]:
            if x["table"] in ("rpc", "lz"):
                for ph in ("inserts_per_s", "finds_per_s"):
                    c.setdefault((x["table"], x["value_bytes"], ph), {}).setdefault(v, []).append(x[ph])
report("bench_dht rpc+lz", [st.median(x["a"]) / st.median(x["b"]) for x in c.values()])
PY
