#!/bin/bash
# The first round as a program that assembles one matrix sees it: each
# implementation alone in a new process (`--only NAME --reps 1`), so none
# reuses memory another one (or an earlier repetition) freed. run.sh's
# tables take the median over repetitions in one process, where round 0
# mostly writes into pages the process already has. Implementations and
# cells interleaved, RUNS times; JSON per run in results/fresh/, then
# `python3 bench/fe_assembly/fresh.py [DIR]` prints the table and writes
# DIR/summary.json (DIR: results/fresh, or OUT when set).
#
#   bench/fe_assembly/fresh.sh [presets] [partitions] [Ps] [mpi] [runs] [implementations]
#   bench/fe_assembly/fresh.sh "small paper" "slab rcb" "2 4" openmpi 5 "accrete petsc_setvalues petsc_coo"
#   OUT=DIR bench/fe_assembly/fresh.sh ...     # JSON into DIR instead
#   SETTLE=S bench/fe_assembly/fresh.sh ...    # idle seconds before each run (default 8)
# The idle time puts every run on the same footing on a virtual machine
# whose host takes back free guest memory within seconds: without it, the
# run after one that freed a lot got memory the host still held, and was
# up to 5x faster in round 0 than the same run after an idle spell.
set -euo pipefail
cd "$(dirname "$0")/../.."
presets=${1:-"small paper"}
partitions=${2:-"slab rcb"}
nps=${3:-"2 4"}
mpi=${4:-openmpi}
runs=${5:-5}
impls=${6:-"accrete petsc_setvalues petsc_coo"}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
exe=build/$mpi/bench/fe_assembly/bench_fe_assembly
launcher=(mpiexec.$mpi)
[ "$mpi" = openmpi ] && launcher+=(--oversubscribe)
out=${OUT:-bench/fe_assembly/results/fresh}
mkdir -p "$out"
for run in $(seq "$runs"); do
  for preset in $presets; do
    for part in $partitions; do
      for np in $nps; do
        for impl in $impls; do
          f=$out/${mpi}_${preset}_${part}_np${np}_${impl}_run${run}.json
          echo "== run $run: $mpi $preset $part P=$np $impl" >&2
          sleep "${SETTLE:-8}"
          "${launcher[@]}" -n "$np" "$exe" --preset "$preset" --partition "$part" --reps 1 --rounds 2 \
            --only "$impl" --json "$f" > /dev/null
        done
      done
    done
  done
done
