#!/bin/bash
# hf_proxy at P = 1 and 2, both MPIs, presets small and paper: 5 runs per cell
# (each the median of 3 interleaved repetitions), interleaved across cells.
cd /work/main
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HWLOC_COMPONENTS=-gl OPENBLAS_NUM_THREADS=1
export HF_PROXY_SKIP_GA_ELEMENT_CYCLIC=1
out=bench/hf_proxy/results/p12
mkdir -p $out
for r in 1 2 3 4 5; do
  for mpi in openmpi mpich; do
    if [ $mpi = openmpi ]; then run="mpiexec.openmpi --oversubscribe"; unset ARMCI_USE_WIN_ALLOCATE; else run="mpiexec.mpich"; export ARMCI_USE_WIN_ALLOCATE=0; fi
    for P in 1 2; do
      for preset in small paper; do
        $run -n $P build/$mpi/bench/hf_proxy/bench_hf_proxy --preset $preset --reps 3 \
          --json $out/hf_${mpi}_${preset}_P${P}_r$r.json > /dev/null 2>&1 || echo "FAIL $mpi $preset $P $r"
      done
    done
  done
  echo "round $r $(date +%T)"
done
