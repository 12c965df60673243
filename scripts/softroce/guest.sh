# shellcheck shell=bash disable=SC2034  # SR_* results are read by softroce.sh
# Sourced by scripts/softroce.sh: boots the SoftRoCE guest under QEMU and runs
# one command in it (see scripts/softroce/guest-init.sh, guest-job.sh).

# Caller environment passed into the guest, besides --env names.
SR_ENV_PREFIXES='^(TIDE_|GTEST_|CTEST_)'
SR_ENV_NAMES=(PATH HOME USER LOGNAME LANG LC_ALL TZ)

# Single-quotes $1 for a POSIX shell.
srShQuote() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

# Sets SR_ACCEL to the accelerator to use: kvm only when /dev/kvm is usable AND a probe
# boot of this kernel under KVM works (nested KVM often is not); else tcg.
# SR_ACCEL_WHY says why. The probe result is cached per host kernel, QEMU and
# guest kernel.
srChooseAccel() {
  local want=${1:-auto} probe key rc
  case $want in
    tcg) SR_ACCEL=tcg SR_ACCEL_WHY="forced"; return ;;
    kvm) SR_ACCEL=kvm SR_ACCEL_WHY="forced"; return ;;
  esac
  if [ ! -e /dev/kvm ]; then
    SR_ACCEL=tcg SR_ACCEL_WHY="no /dev/kvm"; return
  fi
  if [ ! -r /dev/kvm ] || [ ! -w /dev/kvm ]; then
    SR_ACCEL=tcg SR_ACCEL_WHY="/dev/kvm not accessible to $(id -un)"; return
  fi
  key=$( (uname -r; qemu-system-x86_64 --version | head -n1; cat "$SR_KDIR/package") | sha256sum | cut -c1-16)
  probe=$SR_CACHE/kvm-probe-$key
  if [ ! -f "$probe" ]; then
    echo "softroce: probing KVM with one boot (result cached)" >&2
    srRunGuest kvm 90 true >/dev/null 2>&1
    rc=$?
    if [ "$rc" -eq 0 ]; then echo ok >"$probe"; else echo "failed rc=$rc" >"$probe"; fi
  fi
  if [ "$(cat "$probe")" = ok ]; then
    SR_ACCEL=kvm SR_ACCEL_WHY="/dev/kvm works (probe boot succeeded)"
  else
    SR_ACCEL=tcg SR_ACCEL_WHY="/dev/kvm present but a probe boot failed ($(cat "$probe"))"
  fi
}

# srRunGuest ACCEL TIMEOUT CMD... : boots the guest and runs CMD in it. Uses
# the SR_* settings of softroce.sh. Returns CMD's exit code, 124 on timeout,
# 125 when the VM or the guest setup failed (with one line saying which step).
srRunGuest() {
  local accel=$1 timeout=$2 run rc qpid qrc last i
  shift 2
  run=$(mktemp -d "${TMPDIR:-/tmp}/tide-softroce.XXXXXX") || { srSetupError rundir "mktemp failed"; return 125; }
  SR_RUN_DIRS+=("$run")
  cp "$SR_DIR/guest-job.sh" "$run/guest-job.sh"
  : >"$run/status"

  # Per-run settings for the guest's init (busybox sh) ...
  {
    echo "TIDE_NSHARES=${#SR_SHARES[@]}"
    for i in "${!SR_SHARES[@]}"; do echo "TIDE_SHARE_$i=$(srShQuote "${SR_SHARES[$i]}")"; done
  } >"$run/config"
  # ... and for guest-job.sh (bash), including the command itself.
  {
    printf 'SOFTROCE_DEVICES=%q\nSOFTROCE_NETDEV=%q\nSOFTROCE_MTU=%q\n' "$SR_DEVICES" "$SR_NETDEV" "$SR_MTU"
    printf 'SOFTROCE_ADDR=%q\nSOFTROCE_ADDR2=%q\nSOFTROCE_CWD=%q\n' "$SR_ADDR" "$SR_ADDR2" "$PWD"
    local name
    while read -r name; do
      [[ $name =~ $SR_ENV_PREFIXES ]] || continue
      printf 'export %s=%q\n' "$name" "${!name}"
    done < <(compgen -e)
    for name in "${SR_ENV_NAMES[@]}" "${SR_EXTRA_ENV[@]}"; do
      [ -n "${!name+x}" ] && printf 'export %s=%q\n' "$name" "${!name}"
    done
    printf 'SOFTROCE_CMD=('
    printf '%q ' "$@"
    printf ')\n'
  } >"$run/env.sh"

  # Besides the console: skip work that only costs time under emulation
  # (crypto self-tests, speculation mitigations, audit, LSM set-up).
  local append="console=ttyS0 panic=-1 rdinit=/init 8250.nr_uarts=1 cryptomgr.notests"
  append+=" mitigations=off audit=0 apparmor=0 tsc=reliable no_timer_check"
  # TIDE_SOFTROCE_DEBUG=1: full kernel log, shown on stderr after the run.
  if [ -n "${TIDE_SOFTROCE_DEBUG:-}" ]; then
    append+=" loglevel=7 tide.debug"
  else
    append+=" quiet loglevel=0"
  fi
  # shellcheck disable=SC2054  # commas belong to QEMU's option syntax
  local -a qemu=(qemu-system-x86_64 -nodefaults -no-user-config -display none -no-reboot
    -machine q35 -smp "$SR_CPUS" -m "$SR_MEM"
    -kernel "$SR_KDIR/boot" -initrd "$SR_INITRD" -append "$append"
    -serial "file:$run/console.log"
    -device virtio-serial-pci
    -chardev stdio,id=out,signal=off -device virtserialport,chardev=out,nr=1
    -fsdev "local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap"
    -device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot
    -fsdev "local,id=job,path=$run,security_model=none"
    -device virtio-9p-pci,fsdev=job,mount_tag=job)
  for i in "${!SR_SHARES[@]}"; do
    qemu+=(-fsdev "local,id=share$i,path=${SR_SHARES[$i]},security_model=none,multidevs=remap"
      -device "virtio-9p-pci,fsdev=share$i,mount_tag=share$i")
  done
  if [ "$accel" = kvm ]; then
    qemu+=(-accel kvm -cpu host)
  else
    # shellcheck disable=SC2054
    qemu+=(-accel tcg,thread=multi -cpu max)
  fi

  SR_T0=$(date +%s.%N)
  # In the background so that a signal to this script is handled at once.
  # QEMU's stdin is a FIFO it holds open for writing itself: never any data,
  # never EOF. On EOF (as from /dev/null) the stdio chardev reports the host
  # side closed and the guest's writes to the port block for good.
  mkfifo "$run/stdin" || { srSetupError rundir "mkfifo failed"; return 125; }
  timeout --kill-after=5 "$timeout" "${qemu[@]}" <>"$run/stdin" 2>"$run/qemu.err" &
  qpid=$!
  SR_QEMU_PIDS+=("$qpid")
  wait "$qpid"
  qrc=$?
  SR_QEMU_PIDS=()
  SR_WALL=$(awk -v a="$SR_T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')

  last=$(tail -n1 "$run/status")
  SR_GUEST_READY=$(awk '$1 == "step" && $2 == "run" {print $3}' "$run/status")
  SR_GUEST_STEPS=$(awk '$1 == "step" && NF == 3 {printf "%s%s@%ss", sep, $2, $3; sep = " "}' "$run/status")
  case $last in
    exit\ *)
      rc=${last#exit }
      ;;
    setup-failed\ *)
      srSetupError "guest step" "${last#setup-failed }"
      rc=125
      ;;
    *)
      if [ "$qrc" -eq 124 ] || [ "$qrc" -eq 137 ]; then
        echo "softroce: timed out after ${timeout} s (last step: $(srLastStep "$run"))" >&2
        rc=124
      else
        srSetupError "$(srLastStep "$run")" "the VM stopped without a result (qemu exit $qrc)"
        srShowLogs "$run"
        rc=125
      fi
      ;;
  esac
  if [ -n "${TIDE_SOFTROCE_DEBUG:-}" ]; then
    echo "softroce: guest console log:" >&2
    tr -d '\r' <"$run/console.log" >&2
  fi
  rm -rf "$run"
  return "$rc"
}

# The last step the guest reached, from the job status or the console log.
srLastStep() {
  local run=$1 s
  s=$(awk '$1 == "step" {print $2}' "$run/status" | tail -n1)
  if [ -z "$s" ]; then
    s=$(grep -a 'tide-init: ' "$run/console.log" 2>/dev/null | tail -n1 | sed 's/.*tide-init: //; s/^step //')
  fi
  echo "${s:-boot (before the initramfs ran)}"
}

srShowLogs() {
  local run=$1
  if [ -s "$run/qemu.err" ]; then
    echo "softroce: qemu said:" >&2
    tail -n 5 "$run/qemu.err" | sed 's/^/  /' >&2
  fi
  if [ -s "$run/console.log" ]; then
    echo "softroce: guest console (last lines):" >&2
    tail -n 10 "$run/console.log" | tr -d '\r' | sed 's/^/  /' >&2
  fi
}
