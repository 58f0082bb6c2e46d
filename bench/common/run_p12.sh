#!/usr/bin/env bash
# Issue 41's P <= 2 check: DHT, HF proxy, matmul, heat3d and extend-add at
# P = 1 and 2 under both MPIs, ROUNDS rounds (default 5) interleaved across
# every cell, each run its benchmark's own median of repetitions. JSON per
# run in bench/common/results/p12/ (OUT to change); then
#   /usr/bin/python3 bench/common/p12_table.py
# prints accrete against the best plain-MPI baseline of the same run, per
# cell. Uses the existing builds (./x build; MPI=mpich ./x build), or those
# under BUILDS (BUILDS/<mpi>/bench/..., for an A/B against another commit's
# build); FIRST_ROUND numbers the rounds from there (default 1).
set -uo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-5}
OUT=${OUT:-bench/common/results/p12}
MPIS=${MPIS:-openmpi mpich}
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1 HWLOC_COMPONENTS=-gl
export HF_PROXY_SKIP_GA_ELEMENT_CYCLIC=1
start=$(date +%s)
BUILDS=${BUILDS:-build}
FIRST_ROUND=${FIRST_ROUND:-1}
for r in $(seq "$FIRST_ROUND" $((FIRST_ROUND + ROUNDS - 1))); do
  for mpi in $MPIS; do
    if [ "$mpi" = openmpi ]; then run="mpiexec.openmpi --oversubscribe"; unset ARMCI_USE_WIN_ALLOCATE
    else run="mpiexec.mpich"; export ARMCI_USE_WIN_ALLOCATE=0; fi
    b=$BUILDS/$mpi/bench
    go() {  # name, P, node size (real or 1), command...
      local name=$1 p=$2 ns=$3; shift 3
      if [ "$ns" = real ]; then unset ACCRETE_NODE_SIZE; else export ACCRETE_NODE_SIZE=$ns; fi
      $run -n "$p" "$@" --json "$OUT/${name}_${mpi}_P${p}_node${ns}_r$r.json" > "$OUT/${name}_${mpi}_P${p}_node${ns}_r$r.txt" 2>&1 \
        || echo "FAILED: $name $mpi P=$p node $ns round $r"
      unset ACCRETE_NODE_SIZE
    }
    for p in 1 2; do
      go dht "$p" real $b/dht/bench_dht --reps 5 --n8 50000 --n512 20000 --n8k 3000 --tables mpi,rpc,lz
      for preset in small paper; do
        go hf_$preset "$p" real $b/hf_proxy/bench_hf_proxy --preset $preset --reps 3
      done
      go matmul_small "$p" real $b/matmul/bench_matmul --preset small --reps 3
      for ns in real 1; do
        [ "$p" = 1 ] && [ "$ns" = 1 ] && continue
        for sync in 0 1; do
          go heat3d_sync$sync "$p" $ns $b/heat3d/bench_heat3d --n 128 --steps 300 --reps 5 --sync $sync
        done
      done
      [ "$p" = 2 ] && go extend_add "$p" real $b/extend_add/bench_extend_add --n 24,32,40 --reps 15
    done
  done
  echo "round $r done at $(( $(date +%s) - start )) s"
done
