# matmul at P = 1 and 2 under both MPIs, three runs per cell, interleaved
# (bench/matmul/README.md, "P = 1 and 2"). PRESET=small (default) or paper.
cd "$(dirname "$0")/../../../.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HWLOC_COMPONENTS=-gl OPENBLAS_NUM_THREADS=1
for r in 1 2 3; do for P in 1 2; do for MPI in openmpi mpich; do
  X=; [ $MPI = openmpi ] && X=--oversubscribe
  E=; [ $MPI = mpich ] && E="env ARMCI_USE_WIN_ALLOCATE=0"
  $E mpiexec.$MPI $X -n $P build/$MPI/bench/matmul/bench_matmul --preset ${PRESET:-small} --reps 3 --json bench/matmul/results/p12/mm_${MPI}_${PRESET:-small}_P${P}_run$r.json > bench/matmul/results/p12/mm_${MPI}_${PRESET:-small}_P${P}_run$r.txt 2>&1
done; done; done
