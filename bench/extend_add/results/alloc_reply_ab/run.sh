#!/bin/bash
# Run from the repository root after ./x build and MPI=mpich ./x build; BASE: a checkout of
# b1f3559 with bench_extend_add (and bench_dht) built per MPI in $BASE/build-<mpi>.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=${OUT:-bench/extend_add/results/alloc_reply_ab}

for r in 1 2 3 4 5 6; do
  for m in openmpi mpich; do
    extra=""; [ $m = openmpi ] && extra="--oversubscribe"
    if [ $((r % 2)) = 1 ]; then order="base new"; else order="new base"; fi
    for b in $order; do
      if [ $b = base ]; then pre=$BASE/build-$m; else pre=build/$m; fi
      mpiexec.$m $extra -n 2 $pre/bench/extend_add/bench_extend_add --n 24,32,40 --reps 15 \
        --json $out/ea_${b}_512K_${m}_r$r.json > $out/ea_${b}_512K_${m}_r$r.txt 2>&1
    done
  done
done

