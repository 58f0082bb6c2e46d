#!/bin/bash
# The runs behind bench/fe_assembly/README.md's tables: every preset,
# partition and P named in the issue's goals, Open MPI (with the peers) and
# MPICH (accrete against the plain-MPI baseline). One run at a time, on a
# quiet machine. Writes results/<mpi>_<preset>_<partition>_np<P>.{json,txt};
# then `python3 bench/fe_assembly/plot.py` makes the plots and tables.
#
#   bench/fe_assembly/run.sh [presets] [partitions] [Ps] [mpis] [reps]
#   bench/fe_assembly/run.sh "small paper" "slab rcb" "2 4" "openmpi mpich" 3
set -euo pipefail
cd "$(dirname "$0")/../.."
presets=${1:-"small paper"}
partitions=${2:-"slab rcb"}
nps=${3:-"2 4"}
mpis=${4:-"openmpi mpich"}
reps=${5:-3}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for mpi in $mpis; do
  exe=build/$mpi/bench/fe_assembly/bench_fe_assembly
  launcher=(mpiexec.$mpi)
  [ "$mpi" = openmpi ] && launcher+=(--oversubscribe)
  for preset in $presets; do
    for part in $partitions; do
      for np in $nps; do
        out=bench/fe_assembly/results/${mpi}_${preset}_${part}_np${np}
        echo "== $mpi $preset $part P=$np" >&2
        "${launcher[@]}" -n "$np" "$exe" --preset "$preset" --partition "$part" --reps "$reps" \
          --json "$out.json" > "$out.txt"
        tail -n 12 "$out.txt" >&2
      done
    done
  done
done
