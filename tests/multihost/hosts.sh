#!/usr/bin/env bash
# Runs one MPI program across H pretend hosts on this machine: each host is a
# network namespace (with its own hostname in a UTS namespace), joined by veth
# pairs to a bridge that lives in a namespace of its own. MPI sees H nodes and
# moves everything between them over TCP on the test subnet; nothing is added
# to the machine's own network namespace, and every namespace goes on exit,
# failures included.
#
#   hosts.sh openmpi|mpich HOSTS PPN PROGRAM [ARGS...]
#
# Exit 77 (CTest's skip code) with the reason when namespaces cannot be made
# here (not root, no `ip netns`); never a fake pass. After the program, the
# script checks that at least ACCRETE_MH_MIN_BYTES (default 1 KiB) crossed
# the hosts' veth links, so a run that stayed in shared memory fails.
set -uo pipefail
[ $# -ge 4 ] || { echo "usage: hosts.sh openmpi|mpich HOSTS PPN PROGRAM [ARGS...]" >&2; exit 2; }
flavor=$1 hosts=$2 ppn=$3; shift 3
case "$flavor" in openmpi|mpich) ;; *) echo "hosts.sh: MPI must be openmpi or mpich, not '$flavor'" >&2; exit 2;; esac
here=$(cd "$(dirname "$0")" && pwd)

skip() { echo "SKIPPED: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "network namespaces need root"
command -v ip >/dev/null || skip "no 'ip' command (Debian package iproute2)"
command -v unshare >/dev/null || skip "no 'unshare' command (util-linux)"

# Names are unique per run, so CTest may run several of these at once; the
# addresses live only inside this run's namespaces and cannot collide.
pfx="acc$$"
subnet=10.213.0
made=()
cleanup() {
  local ns
  for ns in "${made[@]}"; do ip netns del "$ns" 2>/dev/null; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add "${pfx}sw" 2>/dev/null || skip "'ip netns add' is not permitted here"
made+=("${pfx}sw")
ip -n "${pfx}sw" link add br0 type bridge || skip "no bridge device in a network namespace"
ip -n "${pfx}sw" link set br0 up
for ((h = 0; h < hosts; ++h)); do
  ns="${pfx}h$h"
  ip netns add "$ns" || exit 1
  made+=("$ns")
  ip -n "${pfx}sw" link add "p$h" type veth peer name eth0 netns "$ns" || skip "no veth pairs here"
  ip -n "${pfx}sw" link set "p$h" master br0 up
  ip -n "$ns" addr add "$subnet.$((h + 1))/24" dev eth0
  ip -n "$ns" link set lo up
  ip -n "$ns" link set eth0 up
done

# The launcher agent (plm_rsh_agent / hydra's launcher-exec) finds a host's
# namespace from its address.
export ACCRETE_MH_PREFIX=$pfx ACCRETE_MH_SUBNET=$subnet
# The node is what MPI says it is; a pretend node size would hide the hosts.
unset ACCRETE_NODE_SIZE
hostlist=""
for ((h = 0; h < hosts; ++h)); do hostlist+="${hostlist:+,}$subnet.$((h + 1))"; done
np=$((hosts * ppn))

rx_bytes() {  # total bytes received on every host's veth end
  local h sum=0
  for ((h = 0; h < hosts; ++h)); do
    sum=$((sum + $(ip netns exec "${pfx}h$h" cat /sys/class/net/eth0/statistics/rx_bytes)))
  done
  echo "$sum"
}

if [ "$flavor" = openmpi ]; then
  hostfile=$(mktemp)
  for ((h = 0; h < hosts; ++h)); do echo "$subnet.$((h + 1)) slots=$ppn" >>"$hostfile"; done
  trap 'cleanup; rm -f "$hostfile"' EXIT
  # The one-sided component as the environment chooses (the atomics tests
  # exclude osc/rdma, README "Known limitations"), never UCX's.
  osc=${OMPI_MCA_osc:-^ucx}
  case "$osc" in ^*ucx*) ;; ^*) osc="$osc,ucx";; esac
  # Open MPI's own TCP path between hosts (ob1 + btl/tcp; vader inside one),
  # not UCX, whose TCP transport can hang in MPI_Finalize (multihost.cmake).
  launch=(/usr/bin/mpiexec.openmpi --allow-run-as-root --oversubscribe -n "$np" --hostfile "$hostfile"
          --map-by "ppr:$ppn:node" --mca plm_rsh_agent "$here/nsrsh" --mca plm_rsh_no_tree_spawn 1
          --mca pml ob1 --mca btl tcp,self,vader --mca btl_tcp_if_include "$subnet.0/24"
          --mca oob_tcp_if_include "$subnet.0/24" --mca osc "$osc"
          -x ACCRETE_MH_PREFIX -x ACCRETE_MH_SUBNET)
else
  # Hydra: every proxy, the local one too, starts through the agent. UCX
  # may use only the test interface between hosts (its shared-memory
  # transports cannot reach across: each host has its own IPC namespace and
  # /dev/shm).
  export UCX_NET_DEVICES=${UCX_NET_DEVICES:-eth0}
  launch=(/usr/bin/mpiexec.mpich -launcher ssh -launcher-exec "$here/nsrsh" -iface eth0
          -hosts "$(echo "$hostlist" | sed "s/\([0-9.]*\)/\1:$ppn/g")" -n "$np")
fi

before=$(rx_bytes)
echo "hosts.sh: $hosts hosts x $ppn processes ($flavor), subnet $subnet.0/24: $*"
# mpiexec runs on host 0, entered the way its other processes are.
"$here/nsrsh" "$subnet.1" "$(printf '%q ' "${launch[@]}" "$@")"
rc=$?
after=$(rx_bytes)
echo "hosts.sh: program exit $rc; $((after - before)) bytes crossed the hosts' links"
[ "$rc" = 0 ] || exit "$rc"
min=${ACCRETE_MH_MIN_BYTES:-1024}
if [ "$hosts" -gt 1 ] && [ $((after - before)) -lt "$min" ]; then
  echo "hosts.sh: FAILED: fewer than $min bytes crossed the links; the hosts did not talk over TCP" >&2
  exit 1
fi
exit 0
