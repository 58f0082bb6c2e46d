#!/bin/bash
# A/B of bench_dht, this build against an older one, interleaved (the order
# alternates per round), P = 1 and 2, both MPIs. Run from the repository root
# after `./x build && MPI=mpich ./x build`. BASE: a checkout of the older
# commit (here b1f3559) with bench_dht built per MPI in $BASE/build-<mpi>
# (Release, the same MPI compilers as ./x).
#   BASE=/tmp/abase bench/dht/results/alloc_reply_ab/run.sh
#   python3 bench/dht/results/alloc_reply_ab/table.py bench/dht/results/alloc_reply_ab
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=${OUT:-bench/dht/results/alloc_reply_ab}
for r in 1 2 3 4 5; do
  for m in openmpi mpich; do
    for p in 1 2; do
      if [ $((r % 2)) = 1 ]; then order="base new"; else order="new base"; fi
      for b in $order; do
        if [ $b = base ]; then exe=$BASE/build-$m/bench/dht/bench_dht; else exe=build/$m/bench/dht/bench_dht; fi
        extra=""; [ $m = openmpi ] && extra="--oversubscribe"
        mpiexec.$m $extra -n $p $exe --reps 5 --n8 50000 --n512 20000 --n8k 3000 --tables mpi,rpc,lz \
          --json $out/${b}_${m}_P${p}_r$r.json > $out/${b}_${m}_P${p}_r$r.txt 2>&1
      done
    done
  done
done
