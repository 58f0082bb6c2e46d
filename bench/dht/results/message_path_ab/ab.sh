#!/usr/bin/env bash
# A/B of the message path: bench_dht (P = 1, 2) and bench_extend_add
# (P = 2), both MPIs, the build under BASE (BASE/<mpi>/bench/...; here
# commit 8111196) and ./build interleaved, the order alternating per round.
# Tables: python3 bench/common/p12_table.py bench/dht/results/message_path_ab/{base,new}
set -uo pipefail
cd "$(dirname "$0")/../../../.."
BASE=${BASE:?BASE: the other build tree}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1 HWLOC_COMPONENTS=-gl
R=bench/dht/results/message_path_ab
start=$(date +%s)
for r in 1 2 3 4 5; do
  if [ $((r % 2)) = 1 ]; then order="base new"; else order="new base"; fi
  for mpi in openmpi mpich; do
    if [ "$mpi" = openmpi ]; then run="mpiexec.openmpi --oversubscribe"; else run="mpiexec.mpich"; fi
    for w in $order; do
      if [ $w = base ]; then b=$BASE/$mpi/bench; else b=build/$mpi/bench; fi
      mkdir -p $R/$w
      for p in 1 2; do
        $run -n $p $b/dht/bench_dht --reps 5 --n8 50000 --n512 20000 --n8k 3000 --tables mpi,rpc,lz --json $R/$w/dht_${mpi}_P${p}_nodereal_r$r.json > $R/$w/dht_${mpi}_P${p}_nodereal_r$r.txt 2>&1 || echo FAILED dht $w $mpi $p $r
      done
      $run -n 2 $b/extend_add/bench_extend_add --n 24,32,40 --reps 15 --json $R/$w/extend_add_${mpi}_P2_nodereal_r$r.json > $R/$w/extend_add_${mpi}_P2_nodereal_r$r.txt 2>&1 || echo FAILED ea $w $mpi $r
    done
  done
  echo "round $r done at $(( $(date +%s) - start )) s"
done
