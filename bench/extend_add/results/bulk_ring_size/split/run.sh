#!/bin/bash
# BASE: a checkout of eda7e3f with small_message_max = 32 KiB in src/backend/mpi/messages.cpp, bench_fe_assembly
# and bench_extend_add built per MPI in $BASE/build-<mpi> (BUILD_DIR=$BASE/build-<mpi> MPI=<mpi> ./x build).
# Which messages take the small ring: up to 16 KiB (A, HEAD) or up to 32 KiB (B, BASE build with
# small_message_max = 32 KiB), both with the 8 MiB bulk ring; C: HEAD with the old 2 MiB bulk ring.
# bench_fe_assembly small slab P = 2 (--only accrete,bound) and bench_extend_add P = 2; order rotated per round.
cd "$(dirname "$0")/../../../../.."   # the repository root
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=${OUT:-bench/extend_add/results/bulk_ring_size/split}
BASE=${BASE:-/tmp/abase}
for r in $(seq 1 ${ROUNDS:-6}); do
  for m in openmpi mpich; do
    extra=""; [ $m = openmpi ] && extra="--oversubscribe"
    case $((r % 3)) in 1) cfgs="A B C";; 2) cfgs="B C A";; 0) cfgs="C A B";; esac
    for c in $cfgs; do
      pre=build/$m; env=""
      [ $c = B ] && pre=$BASE/build-$m
      [ $c = C ] && env="ACCRETE_AM_BULK_RING_BYTES=2M"
      env $env mpiexec.$m $extra -n 2 $pre/bench/fe_assembly/bench_fe_assembly --preset small --partition slab --reps 3 \
        --only accrete,bound --json $out/fe_${c}_${m}_r$r.json > $out/fe_${c}_${m}_r$r.txt 2>&1
      env $env mpiexec.$m $extra -n 2 $pre/bench/extend_add/bench_extend_add --n 24,32,40 --reps 15 \
        --json $out/ea_${c}_${m}_r$r.json > $out/ea_${c}_${m}_r$r.txt 2>&1
    done
  done
done
echo done > $out/done
