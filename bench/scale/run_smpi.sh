#!/usr/bin/env bash
# Builds accrete and bench_hessian / bench_dht for SimGrid's SMPI
# (ACCRETE_SMPI=ON: smpicc/smpicxx compile and link everything, no
# ScaLAPACK) and runs one simulated configuration on bench/scale/edison.xml.
#
#   bench/scale/run_smpi.sh P [bench_hessian args...]
#   BENCH=bench_dht bench/scale/run_smpi.sh P [bench_dht args...]
#
# Needs Debian's libsimgrid-dev (installed here when run as root), or a
# SimGrid built by bench/scale/build_simgrid.sh: set SIMGRID_PREFIX to its
# prefix (and BUILD_DIR to a directory of its own). Debian 12's SimGrid 3.32
# spends most of a run at P >= 512 in its own bookkeeping (README.md,
# "Design notes"); 4.1 does not.
# Environment: BUILD_DIR (build/smpi), PER_NODE (24 processes per simulated
# node, as on Edison), HOST_SPEED (19.2Gf: this machine's core, taken as
# fast as an Edison core), PROBE_COST (1e-6 s per MPI_Iprobe/MPI_Test, see
# README.md), COLL_SELECTOR (mpich: the blocking collectives' algorithms
# of MPICH, which Edison's Cray MPI derives from; SMPI's default ones are
# naive, e.g. an allgather of P^2 messages inside every MPI_Win_create),
# SMPI_CFG (more --cfg=... options).
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 1 ] || { sed -n '2,20p' "$0"; exit 2; }
np=$1; shift
if [ -n "${SIMGRID_PREFIX:-}" ]; then
  [ -x "$SIMGRID_PREFIX/bin/smpicxx" ] || { echo "run_smpi.sh: no $SIMGRID_PREFIX/bin/smpicxx (bench/scale/build_simgrid.sh)" >&2; exit 1; }
  export PATH="$SIMGRID_PREFIX/bin:$PATH" LD_LIBRARY_PATH="$SIMGRID_PREFIX/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
elif ! command -v smpicxx >/dev/null; then
  [ "$(id -u)" = 0 ] || { echo "run_smpi.sh: needs libsimgrid-dev (smpicxx, smpirun)" >&2; exit 1; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libsimgrid-dev simgrid >/dev/null
fi
BUILD_DIR=${BUILD_DIR:-build/smpi}
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  gen=""; command -v ninja >/dev/null && gen="-G Ninja"
  cmake -S . -B "$BUILD_DIR" $gen -DCMAKE_BUILD_TYPE=Release -DACCRETE_SMPI=ON \
    -DCMAKE_C_COMPILER="$(command -v smpicc)" -DCMAKE_CXX_COMPILER="$(command -v smpicxx)" >/dev/null
fi
cmake --build "$BUILD_DIR" -j "$(nproc)" >/dev/null
bench=${BENCH:-bench_hessian}
prog=$(find "$BUILD_DIR/bench" -type f -perm -u+x -name "$bench" | head -1)
per=${PER_NODE:-24}
hosts=$(mktemp)
trap 'rm -f "$hosts"' EXIT
for ((r = 0; r < np; ++r)); do echo "nid$((r / per))"; done > "$hosts"
# Every simulated process lives in this one host process: small segments.
export ACCRETE_SEGMENT_SIZE=${ACCRETE_SEGMENT_SIZE:-16M} OPENBLAS_NUM_THREADS=1
cost=${PROBE_COST:-1e-6}
smpirun -np "$np" -platform bench/scale/edison.xml -hostfile "$hosts" \
  --cfg=smpi/host-speed:${HOST_SPEED:-19.2Gf} --cfg=smpi/iprobe:$cost --cfg=smpi/test:$cost \
  --cfg=smpi/grow-injected-times:no --cfg=smpi/coll-selector:${COLL_SELECTOR:-mpich} \
  --log=root.thresh:warning --log=smpi_mpi.thresh:error ${SMPI_CFG:-} "$prog" "$@"
