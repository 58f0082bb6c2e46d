#!/usr/bin/env bash
# Runs bench_heat3d for P = 1, 2, 4, node size "all" (real node) and 1,
# for the MPI in $MPI (default openmpi); tables to stdout, JSON to results/.
# Uses an existing build (BUILD_DIR, default build/$MPI): ./x build first.
set -euo pipefail
cd "$(dirname "$0")/../.."
MPI=${MPI:-openmpi}
export MPI
ARGS=${ARGS:---n 96 --steps 100 --reps 3}
for P in 1 2 4; do
  for NS in all 1; do
    [ "$P" = 1 ] && [ "$NS" = 1 ] && continue
    if [ "$NS" = all ]; then unset ACCRETE_NODE_SIZE; else export ACCRETE_NODE_SIZE=$NS; fi
    echo "### MPI=$MPI P=$P node size $NS"
    ./x run "$P" bench_heat3d $ARGS --json "bench/heat3d/results/heat3d_${MPI}_P${P}_node${NS}.json"
  done
done
