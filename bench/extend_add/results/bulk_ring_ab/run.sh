#!/bin/bash
# A/B of ffdf4d8 (a second node-local ring for messages over 16 KiB) against
# f417f06, run from the repository root after ./x build and MPI=mpich ./x
# build; BASE: a checkout of f417f06 with bench_extend_add and bench_dht
# built per MPI in $BASE/build-<mpi> (Release, the same MPI compilers as ./x).
#   BASE=/tmp/abase bench/extend_add/results/bulk_ring_ab/run.sh
#   python3 bench/extend_add/results/pool_ab/table.py bench/extend_add/results/bulk_ring_ab/ea bench/extend_add/results/bulk_ring_ab/dht
set -e
d=bench/extend_add/results/bulk_ring_ab
OUT=$d/ea bash bench/extend_add/results/alloc_reply_ab/run.sh     # 6 rounds, P = 2, both MPIs
OUT=$d/dht bash bench/dht/results/alloc_reply_ab/run.sh           # 5 rounds, P = 1 and 2, both MPIs
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
one() {  # mpi, round, out dir, bench_dht arguments...
  local m=$1 r=$2 o=$3; shift 3
  local extra=""; [ $m = openmpi ] && extra="--oversubscribe"
  local order="base new"; [ $((r % 2)) = 0 ] && order="new base"
  for b in $order; do
    if [ $b = base ]; then exe=$BASE/build-$m/bench/dht/bench_dht; else exe=build/$m/bench/dht/bench_dht; fi
    mpiexec.$m $extra -n 2 $exe --reps 5 "$@" --tables mpi,rpc,lz --json $o/${b}_${m}_P2_r$r.json > /dev/null 2>&1
  done
}
# 8 more rounds of the 512 B and 8 KiB cells at P = 2, then 12 of Open MPI's 512 B cells
for r in $(seq 1 8); do for m in openmpi mpich; do one $m $r $d/dht_p2 --n512 20000 --n8k 3000 --sizes 512,8192; done; done
for r in $(seq 1 12); do one openmpi $r $d/dht_p2_512 --n512 20000 --sizes 512; done
