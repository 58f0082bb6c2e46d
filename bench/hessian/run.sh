#!/usr/bin/env bash
# Runs bench_hessian for several presets, process counts and both MPIs, then
# plots. Usage: bench/hessian/run.sh [presets] [process counts] [mpis]
#   e.g. bench/hessian/run.sh "tiny small paper" "1 2 4" "openmpi mpich"
# Extra bench arguments via BENCH_ARGS (e.g. "--reps 5"); ACCRETE_NODE_SIZE
# is passed through. Results: bench/hessian/results/<mpi>-<preset>-P<p>[-node1].json
set -euo pipefail
cd "$(dirname "$0")/../.."
presets=${1:-"tiny small paper"}
nps=${2:-"1 2 4"}
mpis=${3:-"openmpi mpich"}
out=bench/hessian/results
mkdir -p "$out"
tag=""; [ "${ACCRETE_NODE_SIZE:-}" = 1 ] && tag="-node1"
for mpi in $mpis; do
  MPI=$mpi ./x build >/dev/null
  for preset in $presets; do
    for np in $nps; do
      json="$out/$mpi-$preset-P$np$tag.json"
      echo "== $mpi $preset P=$np ${ACCRETE_NODE_SIZE:+node size $ACCRETE_NODE_SIZE}"
      MPI=$mpi NP=$np ./x bench hessian --preset "$preset" --json "$json" ${BENCH_ARGS:-}
    done
  done
done
py=/usr/bin/python3; [ -x "$py" ] || py=python3
if "$py" -c 'import matplotlib' 2>/dev/null; then
  "$py" bench/hessian/plot.py "$out"
else
  echo "(python3-matplotlib not installed: no plots; apt-get install python3-matplotlib)"
fi
