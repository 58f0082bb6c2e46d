#!/bin/bash
# Run from the repository root after ./x build and MPI=mpich ./x build; BASE: a checkout of
# b1f3559 with bench_extend_add (and bench_dht) built per MPI in $BASE/build-<mpi>.
# extend-add P=2: base@512K, new@512K, new@2M, new@8M; dht P=2 new@512K/2M/8M. Interleaved, order rotating.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=${OUT:-bench/extend_add/results/ring_size}

for r in 1 2 3; do
  for m in openmpi mpich; do
    extra=""; [ $m = openmpi ] && extra="--oversubscribe"
    cfgs="base:512K new:512K new:2M new:8M"
    [ $r = 2 ] && cfgs="new:8M new:2M new:512K base:512K"
    [ $r = 3 ] && cfgs="new:2M base:512K new:8M new:512K"
    for c in $cfgs; do
      b=${c%%:*}; ring=${c##*:}
      if [ $b = base ]; then pre=$BASE/build-$m; else pre=build/$m; fi
      ACCRETE_AM_RING_BYTES=$ring mpiexec.$m $extra -n 2 $pre/bench/extend_add/bench_extend_add --n 24,32,40 --reps 15 \
        --json $out/ea_${b}_${ring}_${m}_r$r.json > $out/ea_${b}_${ring}_${m}_r$r.txt 2>&1
      if [ $b = new ]; then
        ACCRETE_AM_RING_BYTES=$ring mpiexec.$m $extra -n 2 $pre/bench/dht/bench_dht --reps 5 --n8 50000 --n512 20000 --n8k 3000 --tables mpi,rpc,lz \
          --json $out/dht_${ring}_${m}_r$r.json > $out/dht_${ring}_${m}_r$r.txt 2>&1
      fi
    done
  done
done

