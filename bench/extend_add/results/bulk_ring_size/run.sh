#!/bin/bash
# The bulk ring's default, 2 MiB against 8 MiB (ACCRETE_AM_BULK_RING_BYTES on the same binaries), interleaved,
# order alternating per round: bench_extend_add P = 2 (n = 24, 32, 40) and bench_fe_assembly small slab P = 2
# (accrete's sparse packets to a node-local owner take the rings), both MPIs.
cd "$(dirname "$0")/../../../.."   # the repository root
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=${OUT:-bench/extend_add/results/bulk_ring_size}
mkdir -p $out
for r in $(seq 1 ${ROUNDS:-5}); do
  for m in openmpi mpich; do
    extra=""; [ $m = openmpi ] && extra="--oversubscribe"
    cfgs="2M 8M"; [ $((r % 2)) = 0 ] && cfgs="8M 2M"
    for ring in $cfgs; do
      ACCRETE_AM_BULK_RING_BYTES=$ring mpiexec.$m $extra -n 2 build/$m/bench/extend_add/bench_extend_add --n 24,32,40 --reps 15 \
        --json $out/ea_${ring}_${m}_r$r.json > $out/ea_${ring}_${m}_r$r.txt 2>&1
      ACCRETE_AM_BULK_RING_BYTES=$ring mpiexec.$m $extra -n 2 build/$m/bench/fe_assembly/bench_fe_assembly --preset small \
        --partition slab --reps 3 --only accrete,bound --json $out/fe_${ring}_${m}_r$r.json > $out/fe_${ring}_${m}_r$r.txt 2>&1
    done
  done
done
# Five more rounds of bench_fe_assembly alone (rounds 6-10), to see whether the ring's size moves it.
for r in $(seq 6 10); do
  for m in openmpi mpich; do
    extra=""; [ $m = openmpi ] && extra="--oversubscribe"
    cfgs="2M 8M"; [ $((r % 2)) = 0 ] && cfgs="8M 2M"
    for ring in $cfgs; do
      ACCRETE_AM_BULK_RING_BYTES=$ring mpiexec.$m $extra -n 2 build/$m/bench/fe_assembly/bench_fe_assembly --preset small \
        --partition slab --reps 3 --only accrete,bound --json $out/fe_${ring}_${m}_r$r.json > $out/fe_${ring}_${m}_r$r.txt 2>&1
    done
  done
done
