#!/usr/bin/env bash
# Runs bench_heat3d for P = 1, 2, 4, node size "all" (real node) and 1,
# each without and with --sync (halo time incl. / excl. waiting for neighbours),
# for the MPI in $MPI (default openmpi); tables to stdout, JSON to results/.
# Uses an existing build (BUILD_DIR, default build/$MPI): ./x build first.
set -euo pipefail
cd "$(dirname "$0")/../.."
MPI=${MPI:-openmpi}
export MPI
ARGS=${ARGS:---n 128 --steps 300 --reps 5}
for P in 1 2 4; do
  for NS in all 1; do
    [ "$P" = 1 ] && [ "$NS" = 1 ] && continue
    if [ "$NS" = all ]; then unset ACCRETE_NODE_SIZE; else export ACCRETE_NODE_SIZE=$NS; fi
    for SYNC in 0 1; do
      echo "### MPI=$MPI P=$P node size $NS sync $SYNC"
      ./x run "$P" bench_heat3d $ARGS --sync $SYNC --json "bench/heat3d/results/heat3d_${MPI}_P${P}_node${NS}_sync${SYNC}.json"
    done
  done
done
