#!/bin/bash
# A/B of f417f06 (message buffers sized once and kept) against cbbdc56, run from
# the repository root after ./x build and MPI=mpich ./x build; BASE: a checkout
# of cbbdc56 with bench_extend_add and bench_dht built per MPI in
# $BASE/build-<mpi> (Release, the same MPI compilers as ./x).
#   BASE=/tmp/abase bench/extend_add/results/pool_ab/run.sh
#   python3 bench/extend_add/results/pool_ab/table.py bench/extend_add/results/pool_ab/ea bench/extend_add/results/pool_ab/dht1
set -e
d=bench/extend_add/results/pool_ab
OUT=$d/ea bash bench/extend_add/results/alloc_reply_ab/run.sh     # 6 rounds, P = 2, both MPIs
OUT=$d/dht1 bash bench/dht/results/alloc_reply_ab/run.sh          # 5 rounds, P = 1 and 2, both MPIs
OUT=$d/dht2 bash bench/dht/results/alloc_reply_ab/run.sh          # the same, a second sitting
# 10 rounds of the 8-byte cells at P = 2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for r in $(seq 1 10); do
  for m in openmpi mpich; do
    extra=""; [ $m = openmpi ] && extra="--oversubscribe"
    if [ $((r % 2)) = 1 ]; then order="base new"; else order="new base"; fi
    for b in $order; do
      if [ $b = base ]; then exe=$BASE/build-$m/bench/dht/bench_dht; else exe=build/$m/bench/dht/bench_dht; fi
      mpiexec.$m $extra -n 2 $exe --reps 5 --n8 50000 --sizes 8 --tables mpi,rpc,lz \
        --json $d/dht3_8B/${b}_${m}_P2_r$r.json > /dev/null 2>&1
    done
  done
done
