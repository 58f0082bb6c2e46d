#!/usr/bin/env bash
# heat3d halo exchange under MPICH with every process its own node
# (ACCRETE_NODE_SIZE=1), P = 2: the automatic choice (strided faces as one
# message each) against ACCRETE_NONCONTIG=datatype (one derived-datatype
# MPI_Put/MPI_Get per face, the automatic choice before), ROUNDS rounds
# interleaved (FIRST_ROUND numbers them from there), the command of
# bench/common/run_p12.sh. Then
#   /usr/bin/python3 bench/heat3d/results/message_ab/table.py
set -uo pipefail
cd "$(dirname "$0")/../../../.."
OUT=${OUT:-bench/heat3d/results/message_ab}
ROUNDS=${ROUNDS:-5}
FIRST_ROUND=${FIRST_ROUND:-1}
export OPENBLAS_NUM_THREADS=1 HWLOC_COMPONENTS=-gl ACCRETE_NODE_SIZE=1
for r in $(seq "$FIRST_ROUND" $((FIRST_ROUND + ROUNDS - 1))); do
  for sync in 0 1; do
    for m in auto datatype; do
      ACCRETE_NONCONTIG=$m mpiexec.mpich -n 2 build/mpich/bench/heat3d/bench_heat3d --n 128 --steps 300 --reps 5 \
        --sync $sync --json "$OUT/heat3d_sync${sync}_${m}_r$r.json" > "$OUT/heat3d_sync${sync}_${m}_r$r.txt" 2>&1 \
        || echo "FAILED: sync $sync $m round $r"
    done
  done
  echo "round $r done"
done
