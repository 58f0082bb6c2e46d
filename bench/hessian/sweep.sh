#!/usr/bin/env bash
# The main table of bench/hessian/README.md: every preset at P = 1, 2, 4
# under both MPIs, 100 rounds of `small`, and `paper` with every process its
# own node (ACCRETE_NODE_SIZE=1) at P = 2, 4; RUNS runs per cell (default 3),
# interleaved across cells. JSON and console output go to
# bench/hessian/results/main_table/ (replaced); table.py prints the table.
# PRESETS (default "tiny small rounds_small large paper paper_node1") picks
# rows, OUT another directory (table.py OUT prints its table), e.g. issue
# 41's goal cells alone: RUNS=5 PRESETS=paper OUT=bench/hessian/results/x.
# Usage: bench/hessian/sweep.sh   (after ./x build, MPI=openmpi and MPI=mpich)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-bench/hessian/results/main_table}
presets=" ${PRESETS:-tiny small rounds_small large paper paper_node1} "
runs=${RUNS:-3}
only=accrete_packets,accrete_packets_repro,mpi_accumulate,mpi_alltoallv,mpi_shared_memory,local_apply_ref,compute_only
rm -rf "$out"
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
one() {  # mpi np name node_size bench-args...
  local mpi=$1 np=$2 name=$3 node=$4
  shift 4
  [[ $presets == *" ${name%_"${mpi}"_p*} "* ]] || return 0
  local launch=(mpiexec.$mpi -n "$np")
  [ "$mpi" = openmpi ] && launch+=(--oversubscribe)
  local env=()
  [ "$node" = 1 ] && env=(ACCRETE_NODE_SIZE=1)
  echo "== $name"
  env "${env[@]}" "${launch[@]}" "build/$mpi/bench/hessian/bench_hessian" --json "$out/$name.json" "$@" >"$out/$name.txt" 2>&1
}
start=$(date +%s)
for r in $(seq 1 "$runs"); do
  for mpi in openmpi mpich; do
    for p in 1 2 4; do
      one $mpi $p "tiny_${mpi}_p${p}_run$r" real --preset tiny --reps 5 --only $only
      one $mpi $p "small_${mpi}_p${p}_run$r" real --preset small --reps 5 --only $only
      one $mpi $p "rounds_small_${mpi}_p${p}_run$r" real --preset small --reps 3 --rounds 100 --only $only
      one $mpi $p "large_${mpi}_p${p}_run$r" real --preset large --reps 3 --only $only
      one $mpi $p "paper_${mpi}_p${p}_run$r" real --preset paper --reps 3 --only $only
    done
    for p in 2 4; do
      one $mpi $p "paper_node1_${mpi}_p${p}_run$r" 1 --preset paper --reps 3 --only $only
    done
  done
done
echo "sweep: $(( $(date +%s) - start )) s"
