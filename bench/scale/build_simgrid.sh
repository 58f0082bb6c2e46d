#!/usr/bin/env bash
# Builds SimGrid (SMPI only: no Python, Java, model checker or docs) from
# its PyPI source distribution into a prefix, for bench/scale/run_smpi.sh
# (SIMGRID_PREFIX=...). Why not Debian 12's 3.32: README.md, "Design notes".
#
#   bench/scale/build_simgrid.sh [PREFIX] [VERSION]     # default /opt/simgrid-4.1, 4.1
#
# Needs cmake, ninja, g++ and Boost headers (libboost-dev; Debian's
# libsimgrid-dev pulls it in). About 10 minutes on 2 cores.
set -euo pipefail
prefix=$(realpath -m "${1:-/opt/simgrid-4.1}")
version=${2:-4.1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# SimGrid's configure leaves a test program in the working directory.
cd "$work"
python3 -m pip download --quiet --no-deps --no-binary :all: "simgrid==$version" -d "$work"
tar xzf "$work/simgrid-$version.tar.gz" -C "$work"
# SimGrid's output goes to a log, shown only when a step fails.
logged() { "$@" >>"$work/build.log" 2>&1 || { tail -30 "$work/build.log" >&2; exit 1; }; }
logged cmake -S "$work/simgrid-$version" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX="$prefix" -Denable_smpi=ON -Denable_python=OFF -Denable_java=OFF \
  -Denable_documentation=OFF -Denable_model-checking=OFF -Denable_fortran=OFF -Denable_ns3=OFF
logged cmake --build "$work/build" -j "$(nproc)" --target install
echo "SimGrid $version installed in $prefix: SIMGRID_PREFIX=$prefix BUILD_DIR=build/smpi-$version bench/scale/run_smpi.sh P ..."
