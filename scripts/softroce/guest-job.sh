#!/usr/bin/env bash
# Runs inside the SoftRoCE guest, chrooted into the host's root filesystem:
# sets up the rxe device(s), then runs the caller's command with the caller's
# environment and working directory. Reports through /run/tide-job/status:
# "step NAME" lines, then "exit RC" or "setup-failed STEP: WHY".
set -u
JOB=/run/tide-job
# Each step carries the guest's uptime, for the boot timings in -v.
step() {
  local up
  read -r up _ </proc/uptime
  echo "step $1 $up" >>"$JOB/status"
}
fail() {
  # The host prints this as its one-line error.
  echo "setup-failed $1: $2" >>"$JOB/status"
  exit 125
}

# shellcheck disable=SC1091  # written by softroce.sh for this run
. "$JOB/env.sh" || fail env "cannot read $JOB/env.sh"

export PATH=${PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}

# Runs a setup command; on failure its own message becomes the reason.
try() {
  local name=$1 out
  shift
  out=$("$@" 2>&1) || fail "$name" "$* : ${out//$'\n'/ }"
}

# Waits until an rxe device's port is ACTIVE and has a RoCEv2 GID for its
# IPv4 address (both appear asynchronously after `rdma link add`).
waitActive() {
  local dev=$1 i nap state g gid
  # A FIFO nobody writes: `read -t` on it sleeps without starting a process
  # (each exec from the 9p root costs tens of ms under emulation).
  mkfifo /tmp/.softroce-nap 2>/dev/null
  exec {nap}<>/tmp/.softroce-nap
  for ((i = 0; i < 200; i++)); do
    state=""
    read -r state </sys/class/infiniband/"$dev"/ports/1/state 2>/dev/null
    if [[ $state == *ACTIVE* ]]; then
      for g in /sys/class/infiniband/"$dev"/ports/1/gids/*; do
        gid=""
        read -r gid <"$g" 2>/dev/null
        [[ $gid == 0000:0000:0000:0000:0000:ffff:* ]] && return 0
      done
    fi
    read -r -t 0.05 -u "$nap" _ || true
  done
  fail "wait-$dev" "port of $dev not ACTIVE with an IPv4 GID after 10 s"
}

# Writes a sysctl through /proc without starting a process.
setSysctl() {
  echo "$2" >"/proc/sys/${1//.//}" || fail sysctl "cannot set $1=$2"
}

# Netdevs are set up by one `ip -batch` (one exec instead of one per step).
step network
case "$SOFTROCE_DEVICES" in
  1)
    try ip ip -batch - <<NET
link set lo up
link add $SOFTROCE_NETDEV type dummy
link set $SOFTROCE_NETDEV mtu $SOFTROCE_MTU
addr add $SOFTROCE_ADDR dev $SOFTROCE_NETDEV
link set $SOFTROCE_NETDEV up
NET
    step rxe
    try rxe0 rdma link add rxe0 type rxe netdev "$SOFTROCE_NETDEV"
    waitActive rxe0
    ;;
  2)
    try ip ip -batch - <<NET
link set lo up
link add veth0 type veth peer name veth1
link set veth0 mtu $SOFTROCE_MTU
link set veth1 mtu $SOFTROCE_MTU
addr add $SOFTROCE_ADDR dev veth0
addr add $SOFTROCE_ADDR2 dev veth1
NET
    # Both ends live in one namespace: without these the kernel drops
    # packets that arrive with a local source address.
    for c in all veth0 veth1; do
      setSysctl "net.ipv4.conf.$c.accept_local" 1
      setSysctl "net.ipv4.conf.$c.rp_filter" 0
    done
    # veth hands every packet to the per-CPU input backlog, which drops past
    # netdev_max_backlog (1000); rxe bursts a whole READ response (1024
    # packets per MiB at MTU 1500) at once. This kernel's rxe does not recover
    # from such drops: a READ can be reported complete without its data
    # (docs/softroce.md, "Two devices"). Packets in flight are bounded by the
    # QPs' queues, so a deep backlog means no drops at all.
    setSysctl net.core.netdev_max_backlog 262144
    try up ip -batch - <<NET
link set veth0 up
link set veth1 up
NET
    step rxe
    try rxe rdma -b - <<NET
link add rxe0 type rxe netdev veth0
link add rxe1 type rxe netdev veth1
NET
    waitActive rxe0
    waitActive rxe1
    ;;
  *) fail config "bad device count $SOFTROCE_DEVICES" ;;
esac

ulimit -l unlimited || fail ulimit "cannot lift the locked-memory limit"
cd "$SOFTROCE_CWD" || fail cwd "no directory $SOFTROCE_CWD in the guest (is it under a share?)"
# Guest uptime at this point = boot + setup time (the host prints it with -v).
step run
"${SOFTROCE_CMD[@]}"
rc=$?
echo "exit $rc" >>"$JOB/status"
exit "$rc"
