#!/usr/bin/env bash
# Runs bench_dht at P = 1..4 (one launch per P) and gathers the JSON.
#
#   MPI=openmpi bench/dht/run.sh [bench_dht args]      (e.g. --reps 5)
#   MPI=mpich PS="2 4" ACCRETE_NODE_SIZE=1 bench/dht/run.sh
#
# Output: the tables on stdout; bench/dht/results/dht_<mpi>[_node<k>].json
# holding one entry per P.
set -euo pipefail
cd "$(dirname "$0")/../.."
MPI=${MPI:-openmpi}
export MPI
BUILD_DIR=${BUILD_DIR:-build/$MPI}
export BUILD_DIR
if [ -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake --build "$BUILD_DIR" --target bench_dht >/dev/null
else
  ./x build >/dev/null
fi
suffix=""
[ -n "${ACCRETE_NODE_SIZE:-}" ] && suffix="_node${ACCRETE_NODE_SIZE}"
out=bench/dht/results
mkdir -p "$out"
parts=()
for p in ${PS:-1 2 3 4}; do
  f="$out/.dht_${MPI}${suffix}_P$p.json"
  ./x run "$p" bench_dht --json "$f" "$@" | grep -v '^JSON'
  parts+=("$f")
done
python3 - "$out/dht_${MPI}${suffix}.json" "${parts[@]}" <<'PY'
import json, sys
runs = [json.load(open(f)) for f in sys.argv[2:]]
json.dump({"bench": "dht", "runs": runs}, open(sys.argv[1], "w"), indent=1)
print("wrote", sys.argv[1])
PY
rm -f "${parts[@]}"
