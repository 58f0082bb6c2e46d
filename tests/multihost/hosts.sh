#!/usr/bin/env bash
# Runs one MPI program across H pretend hosts on this machine: each host is a
# network namespace (plus its own hostname, IPC, /sys and /dev/shm: nsrsh),
# joined by veth pairs to a bridge that lives in a namespace of its own. MPI sees H nodes and
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
# Is / a mount point here (so that each host can have its own /sys)? Not in
# a chroot.
own_root=0
unshare --mount --propagation unchanged /bin/sh -c 'mount --make-rprivate /' 2>/dev/null && own_root=1
# MPICH's UCX lists network devices in /sys, which nsrsh can give each host
# only where / is a mount point.
[ "$flavor" = openmpi ] || [ "$own_root" = 1 ] ||
  skip "MPICH's UCX lists network devices in /sys, and a pretend host gets its own /sys only where / is a mount point (not in a chroot)"
cleanup() {
  trap '' INT TERM  # a second signal must not cut the cleanup short
  local ns
  # Whatever still runs on a pretend host (a launcher stopped by a time-out
  # leaves its remote daemons and ranks behind) goes with it.
  for ns in "${made[@]}"; do ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null; done
  for ns in "${made[@]}"; do ip netns del "$ns" 2>/dev/null; done
  # In a chroot, `ip netns add` leaves /run/netns mounted inside the chroot,
  # which would keep the chroot from being removed: unmount it once empty.
  if [ "$own_root" = 0 ] && [ -z "$(ls -A /run/netns 2>/dev/null)" ]; then umount /run/netns 2>/dev/null; fi
  [ -z "${hostfile:-}" ] || rm -f "$hostfile"
}
trap cleanup EXIT
trap 'exit 143' INT TERM

# nsenter, not `ip -n` / `ip netns exec`: those remount / and fail where it
# is not a mount point (a chroot).
in_ns() { local ns=$1; shift; nsenter --net="/run/netns/$ns" "$@"; }
command -v nsenter >/dev/null || skip "no 'nsenter' command (util-linux)"
ip netns add "${pfx}sw" 2>/dev/null || skip "'ip netns add' is not permitted here"
made+=("${pfx}sw")
in_ns "${pfx}sw" ip link add br0 type bridge || skip "no bridge device in a network namespace"
in_ns "${pfx}sw" ip link set br0 up
for ((h = 0; h < hosts; ++h)); do
  ns="${pfx}h$h"
  ip netns add "$ns" || exit 1
  made+=("$ns")
  in_ns "${pfx}sw" ip link add "p$h" type veth peer name acc0 netns "$ns" || skip "no veth pairs here"
  in_ns "${pfx}sw" ip link set "p$h" master br0 up
  in_ns "$ns" ip addr add "$subnet.$((h + 1))/24" dev acc0
  in_ns "$ns" ip link set lo up
  in_ns "$ns" ip link set acc0 up
done

# The launcher agent (plm_rsh_agent / hydra's launcher-exec) finds a host's
# namespace from its address.
export ACCRETE_MH_PREFIX=$pfx ACCRETE_MH_SUBNET=$subnet
# The node is what MPI says it is; a pretend node size would hide the hosts.
unset ACCRETE_NODE_SIZE
hostlist=""
for ((h = 0; h < hosts; ++h)); do hostlist+="${hostlist:+,}$subnet.$((h + 1))"; done
# ACCRETE_MH_NP runs fewer processes than HOSTS x PPN, so that the hosts
# hold different numbers of them (the last ones fewer, or, cyclic, the
# hosts after the first few).
np=${ACCRETE_MH_NP:-$((hosts * ppn))}
case "$np" in ''|*[!0-9]*) echo "hosts.sh: ACCRETE_MH_NP must be a count, not '$np'" >&2; exit 2;; esac
((np >= 1 && np <= hosts * ppn)) || { echo "hosts.sh: ACCRETE_MH_NP=$np is outside 1..$((hosts * ppn))" >&2; exit 2; }

rx_bytes() {  # total bytes received on every host's veth end
  local h sum=0
  for ((h = 0; h < hosts; ++h)); do
    sum=$((sum + $(in_ns "${pfx}h$h" awk -F'[: ]+' '$2 == "acc0" { print $3 }' /proc/net/dev)))
  done
  echo "$sum"
}

# ACCRETE_MH_MAP=cyclic deals the ranks over the hosts in turn (rank r on
# host r mod HOSTS), as `--map-by node` or Slurm's cyclic distribution do,
# so that no node holds a contiguous range of ranks; the default fills
# each host in rank order.
mh_map=${ACCRETE_MH_MAP:-block}
case "$mh_map" in block|cyclic) ;; *) echo "hosts.sh: ACCRETE_MH_MAP must be block or cyclic, not '$mh_map'" >&2; exit 2;; esac
# The programs see the layout (tests/multihost/multihost_test.cpp checks it).
export ACCRETE_MH_MAP=$mh_map ACCRETE_MH_HOSTS=$hosts
if [ "$flavor" = openmpi ]; then
  map=(--map-by "ppr:$ppn:node")
  [ "$mh_map" = block ] || map=(--map-by node)
  hostfile=$(mktemp)
  for ((h = 0; h < hosts; ++h)); do echo "$subnet.$((h + 1)) slots=$ppn" >>"$hostfile"; done
  # The one-sided component as the environment chooses (the atomics tests
  # exclude osc/rdma, README "Known limitations"), never UCX's.
  osc=${OMPI_MCA_osc:-^ucx}
  case "$osc" in ^*ucx*) ;; ^*) osc="$osc,ucx";; esac
  # Open MPI's own TCP path between hosts (ob1 + btl/tcp; vader inside one),
  # not UCX, whose TCP transport can hang in MPI_Finalize (multihost.cmake).
  # Each pretend host's daemon believes it owns every core of the machine,
  # which the hosts share. So no binding (at 2 x 1 both daemons bound their
  # rank to core 0, and the other core idled), and waiting ranks yield (at
  # 2 x 2 each daemon saw 2 ranks on 2 cores and let them spin, 4 spinners
  # on 2 cores): otherwise every message waits for a time slice, and a
  # 64-byte ping-pong took 10 ms instead of 0.02 ms, a barrier 9 ms
  # instead of 0.04 ms.
  launch=(/usr/bin/mpiexec.openmpi --allow-run-as-root --oversubscribe --bind-to none --mca mpi_yield_when_idle 1
          -n "$np" --hostfile "$hostfile" "${map[@]}" --mca plm_rsh_agent "$here/nsrsh" --mca plm_rsh_no_tree_spawn 1
          --mca pml ob1 --mca btl tcp,self,vader --mca btl_tcp_if_include "$subnet.0/24"
          --mca oob_tcp_if_include "$subnet.0/24" --mca osc "$osc"
          -x ACCRETE_MH_PREFIX -x ACCRETE_MH_SUBNET -x ACCRETE_MH_MAP -x ACCRETE_MH_HOSTS)
else
  # Hydra: every proxy, the local one too, starts through the agent. UCX
  # may use only the test interface between hosts (its shared-memory
  # transports cannot reach across: each host has its own IPC namespace).
  export UCX_NET_DEVICES=${UCX_NET_DEVICES:-acc0}
  # Hydra fills a host's slots before the next; with one slot per host it
  # deals the ranks in turn, wrapping around until np are placed.
  slots=$(echo "$hostlist" | sed "s/\([0-9.]*\)/\1:$ppn/g")
  [ "$mh_map" = block ] || slots=$hostlist
  launch=(/usr/bin/mpiexec.mpich -launcher ssh -launcher-exec "$here/nsrsh" -iface acc0
          -hosts "$slots" -n "$np")
fi

before=$(rx_bytes)
echo "hosts.sh: $hosts hosts x $ppn processes ($flavor), subnet $subnet.0/24: $*"
# mpiexec runs on host 0, entered the way its other processes are, in the
# background with its output in a file that is shown as it grows: the
# loop below reads it, and a time-out's signal reaches the trap within a
# fraction of a second (bash runs traps only between commands).
out=$(mktemp)
"$here/nsrsh" "$subnet.1" "$(printf '%q ' "${launch[@]}" "$@")" >"$out" 2>&1 &
lpid=$!
tail -n +1 -f --pid="$lpid" "$out" &
tpid=$!
# MPICH over UCX's TCP transport can hang in MPI_Finalize (openucx/ucx#8738,
# multihost.cmake): at 2 x 1 rarely (once in CI, after every test had
# passed; 240 runs here did not hang). The test programs' main (tests/test_main.cpp) prints
# `accrete tests: every rank finished accrete::finalize; result: R` once
# all ranks have agreed on the result, after the runtime's finalize and
# before MPI_Finalize. If MPI_Finalize then does not return within a
# minute, the program is stopped and its exit code is that agreed result,
# with the reason printed. A hang anywhere before that line is still a
# time-out.
finalize_grace=${ACCRETE_MH_FINALIZE_GRACE:-60}
agreed="" since="" stopped=0
while kill -0 "$lpid" 2>/dev/null; do
  if [ -z "$agreed" ]; then
    agreed=$(sed -n 's/^accrete tests: every rank finished accrete::finalize; result: \([a-z]*\)$/\1/p' "$out" | head -n 1)
    [ -n "$agreed" ] && since=$SECONDS
  fi
  if [ "$flavor" = mpich ] && [ -n "$agreed" ] && ((SECONDS - since > finalize_grace)); then
    stopped=1
    kill "$lpid" 2>/dev/null
    break
  fi
  sleep 0.2
done
wait "$lpid"
rc=$?
wait "$tpid" 2>/dev/null
if [ "$stopped" = 1 ]; then
  echo "hosts.sh: every rank had passed accrete::finalize with result '$agreed', then MPI_Finalize did not" \
       "return in $finalize_grace s (MPICH over UCX's TCP transport, openucx/ucx#8738); the program was stopped"
  rc=1
  [ "$agreed" = pass ] && rc=0
fi
rm -f "$out"
after=$(rx_bytes)
echo "hosts.sh: program exit $rc; $((after - before)) bytes crossed the hosts' links"
[ "$rc" = 0 ] || exit "$rc"
min=${ACCRETE_MH_MIN_BYTES:-1024}
if [ "$hosts" -gt 1 ] && [ $((after - before)) -lt "$min" ]; then
  echo "hosts.sh: FAILED: fewer than $min bytes crossed the links; the hosts did not talk over TCP" >&2
  exit 1
fi
exit 0
