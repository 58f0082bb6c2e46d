# P = 1 and 2 runs of bench_heat3d and bench_extend_add under both MPIs (bench/heat3d/README.md
# and bench/extend_add/README.md, "P = 1 and 2"). Run from anywhere; builds must exist.
cd "$(dirname "$0")/../../../.."
export HWLOC_COMPONENTS=-gl
for MPI in openmpi mpich; do
  export MPI
  for P in 1 2; do
    for NS in all 1; do
      [ "$P" = 1 ] && [ "$NS" = 1 ] && continue
      if [ "$NS" = all ]; then unset ACCRETE_NODE_SIZE; else export ACCRETE_NODE_SIZE=$NS; fi
      for SYNC in 0 1; do
        echo "### heat3d MPI=$MPI P=$P node size $NS sync $SYNC"
        ./x run "$P" bench_heat3d --n 128 --steps 300 --reps 5 --sync $SYNC --json bench/heat3d/results/p12/heat3d_${MPI}_P${P}_node${NS}_sync${SYNC}.json
      done
    done
  done
  unset ACCRETE_NODE_SIZE
  for P in 2; do
    echo "### extend_add MPI=$MPI P=$P"
    NP=$P ./x bench extend_add --n 24,32,40 --reps 15 --json bench/extend_add/results/p12/extend_add_${MPI}_P$P.json
  done
done
