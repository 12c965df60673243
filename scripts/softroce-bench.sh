#!/usr/bin/env bash
# tide's RDMA transport vs perftest's ib_write_bw on the same device, in the
# same run: at each message size, the median of R repetitions of each, side
# by side with the ratio, also written as JSON. Runs directly where an RDMA
# device exists, otherwise in one SoftRoCE guest (scripts/softroce.sh run).
# Bandwidth is GB/s = 1e9 B/s. Compare only within one run: SoftRoCE under
# emulation is slow and noisy.
#
#   softroce-bench.sh [--sizes 65536,1048576] [--reps 5] [--bytes N]
#                     [--tx-depth 16] [--mtu 9000] [--device rxe0] [--streams 1]
#                     [--build build] [--json FILE]
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SIZES=65536,1048576 REPS=5 BYTES=33554432 TXDEPTH=16 MTU=9000 DEVICE=rxe0 STREAMS=1
BUILD=$ROOT/build JSON=$ROOT/results/local/softroce-bench.json INNER=0 TIMEOUT=900

usage() { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case $1 in
    --sizes) SIZES=${2:?}; shift 2 ;;
    --reps) REPS=${2:?}; shift 2 ;;
    --bytes) BYTES=${2:?}; shift 2 ;;
    --tx-depth) TXDEPTH=${2:?}; shift 2 ;;
    --mtu) MTU=${2:?}; shift 2 ;;
    --device) DEVICE=${2:?}; shift 2 ;;
    --streams) STREAMS=${2:?}; shift 2 ;;
    --build) BUILD=${2:?}; shift 2 ;;
    --json) JSON=${2:?}; shift 2 ;;
    --timeout) TIMEOUT=${2:?}; shift 2 ;;
    --inner) INNER=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "softroce-bench: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
done
[[ $SIZES =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "softroce-bench: --sizes must be a comma list of bytes" >&2; exit 2; }
[[ $REPS =~ ^[1-9][0-9]*$ && $BYTES =~ ^[1-9][0-9]*$ && $TXDEPTH =~ ^[1-9][0-9]*$ && $STREAMS =~ ^[1-9][0-9]*$ ]] ||
  { echo "softroce-bench: --reps, --bytes, --tx-depth, --streams must be positive integers" >&2; exit 2; }

if [ $INNER -eq 0 ]; then
  mkdir -p "$(dirname "$JSON")" || exit 1
  JSON=$(cd "$(dirname "$JSON")" && pwd -P)/$(basename "$JSON")
  BUILD=$(cd "$BUILD" 2>/dev/null && pwd -P || echo "$BUILD")
  args=(--inner --sizes "$SIZES" --reps "$REPS" --bytes "$BYTES" --tx-depth "$TXDEPTH"
    --mtu "$MTU" --device "$DEVICE" --streams "$STREAMS" --build "$BUILD" --json "$JSON")
  if ls /sys/class/infiniband/* >/dev/null 2>&1; then
    exec bash "$0" "${args[@]}"
  fi
  share=()
  for d in "$BUILD" "$(dirname "$JSON")"; do
    [ -d "$d" ] && [[ $d/ != "$ROOT"/* ]] && share+=(--share "$d")
  done
  exec bash "$ROOT/scripts/softroce.sh" run --devices 1 --mtu "$MTU" --timeout "$TIMEOUT" \
    --workdir "$ROOT" "${share[@]}" -v -- bash "$0" "${args[@]}"
fi

# ---- inside the guest (or on a host with a device) ----
[ -e "/sys/class/infiniband/$DEVICE" ] || { echo "softroce-bench: no RDMA device $DEVICE" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The RoCEv2 IPv4 GID index and address of $DEVICE (server and client both
# use it: a same-device pair, as tide's bench does).
gidIdx="" addr=""
for g in /sys/class/infiniband/"$DEVICE"/ports/1/gids/*; do
  i=$(basename "$g")
  gid=$(cat "$g" 2>/dev/null) || continue
  [ "$(cat "/sys/class/infiniband/$DEVICE/ports/1/gid_attrs/types/$i" 2>/dev/null)" = "RoCE v2" ] || continue
  if [[ $gid == 0000:0000:0000:0000:0000:ffff:* ]]; then
    h=${gid:30:4}${gid:35:4}
    gidIdx=$i addr=$((16#${h:0:2})).$((16#${h:2:2})).$((16#${h:4:2})).$((16#${h:6:2}))
    break
  fi
done
[ -n "$gidIdx" ] || { echo "softroce-bench: $DEVICE has no RoCEv2 IPv4 GID" >&2; exit 1; }
pmtu=$(ibv_devinfo -d "$DEVICE" | awk '/active_mtu/ {print $2; exit}')

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR] = $1} END {if (NR == 0) print "null"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

# One ib_write_bw pair; echoes GB/s. perftest's MB/sec is 2^20 B/s, printed
# with two decimals (its Gb/sec has too few digits at SoftRoCE rates).
perftestOnce() {
  local size=$1 iters=$2 port=$3 srv ok=0
  local -a a=(-d "$DEVICE" -x "$gidIdx" -s "$size" -n "$iters" -t "$TXDEPTH" -F -p "$port")
  timeout 300 ib_write_bw "${a[@]}" >"$work/srv.log" 2>&1 &
  srv=$!
  for _ in $(seq 20); do
    sleep 0.3
    if timeout 300 ib_write_bw "${a[@]}" "$addr" >"$work/cli.log" 2>&1; then ok=1; break; fi
    grep -q "Couldn't connect" "$work/cli.log" || break
  done
  wait "$srv" || ok=0
  if [ $ok -ne 1 ]; then
    echo "softroce-bench: ib_write_bw failed at $size B:" >&2
    tail -n 5 "$work/cli.log" "$work/srv.log" >&2
    return 1
  fi
  grep -A1 '#bytes' "$work/cli.log" | tail -n1 | awk '{printf "%.6f\n", $4 * 1048576 / 1e9}'
}

# tide's side, if its rdma backend and `tide bench transport` exist.
tideBin=""
for b in "$BUILD/tide" "$BUILD/harness/tide"; do [ -x "$b" ] && tideBin=$b && break; done
tideSkip=""
if [ -z "$tideBin" ]; then
  tideSkip="no tide binary in $BUILD"
elif ! "$tideBin" bench transport --help >"$work/help" 2>&1; then
  tideSkip="\`tide bench transport\` not available: $(head -n1 "$work/help")"
elif ! "$tideBin" backends 2>/dev/null | grep -qw rdma; then
  tideSkip="tide was built without the rdma backend"
fi
tideDepthFlag=()
for f in --queue-depth --tx-depth --outstanding; do
  grep -q -- "$f" "$work/help" 2>/dev/null && tideDepthFlag=("$f" "$TXDEPTH") && break
done

# Median GB/s of a `tide bench transport` JSON (its "gbps": {"median": ...}).
tideGbps() {
  /usr/bin/python3 - "$1" <<'PY'
import json, sys
g = json.load(open(sys.argv[1])).get("gbps")
print(g["median"] if isinstance(g, dict) and isinstance(g.get("median"), (int, float)) else "null")
PY
}

port=18700
# ib_write_bw now and then reports 0.00 MB/sec for a pair that completed
# (seen under emulation); such a repetition is run again, up to twice.
perftestRep() {
  local v try
  for try in 1 2 3; do
    port=$((port + 1))
    v=$(perftestOnce "$1" "$2" "$port") || return 1
    awk -v x="$v" 'BEGIN { exit !(x > 0) }' && break
    echo "softroce-bench: ib_write_bw reported 0 GB/s at $1 B (try $try)" >&2
  done
  awk -v x="$v" 'BEGIN { exit !(x > 0) }' || return 1
  pv+=("$v")
}
tideRep() {
  [ -z "$tideSkip" ] || return 0
  if "$tideBin" bench transport --backend rdma --device "$DEVICE" --size "$(($1 * $2))" --block "$1" \
    --streams "$STREAMS" --repetitions 1 "${tideDepthFlag[@]}" --json "$work/tide.json" >"$work/tide.log" 2>&1; then
    tv+=("$(tideGbps "$work/tide.json")")
  else
    echo "tide: failed at $1 B: $(tail -n1 "$work/tide.log")" >&2
    tv+=(null)
    tideSkip="failed: $(tail -n1 "$work/tide.log")"
  fi
}

echo "softroce-bench: $DEVICE (path MTU $pmtu, netdev MTU $MTU), ib_write_bw -t $TXDEPTH (1 QP), tide --streams $STREAMS${TIDE_RDMA_OPTIONS:+ ($TIDE_RDMA_OPTIONS)}, $BYTES B per repetition, median of $REPS"
[ -n "$tideSkip" ] && echo "tide: skipped: $tideSkip"
rows=()
for size in ${SIZES//,/ }; do
  iters=$((BYTES / size))
  [ "$iters" -ge 5 ] || iters=5
  pv=() tv=()
  for ((r = 1; r <= REPS; r++)); do
    # Alternating which side goes first, so that a drifting host load
    # does not always favour the same one.
    if [ $((r % 2)) -eq 1 ]; then
      perftestRep "$size" "$iters" || exit 1
      tideRep "$size" "$iters"
    else
      tideRep "$size" "$iters"
      perftestRep "$size" "$iters" || exit 1
    fi
  done
  pm=$(echo "${pv[*]}" | median)
  tm=null pr=null
  if [ ${#tv[@]} -gt 0 ] && [[ " ${tv[*]} " != *" null "* ]]; then
    tm=$(echo "${tv[*]}" | median)
    # Median of the ratios of the two runs of each repetition (adjacent in time).
    pr=$(for ((i = 0; i < ${#tv[@]}; i++)); do awk -v t="${tv[$i]}" -v p="${pv[$i]}" 'BEGIN { printf "%.4f ", t / p }'; done | median)
  fi
  rows+=("$size $iters $pm $tm $(IFS=,; echo "${pv[*]}") $(IFS=,; echo "${tv[*]:--}") $pr")
done

printf '\n%-12s %-22s %-22s %-18s %s\n' "size (B)" "ib_write_bw (GB/s)" "tide (GB/s)" "tide/ib_write_bw" "paired ratio"
for row in "${rows[@]}"; do
  read -r size _ pm tm _ _ pr <<<"$row"
  ratio=-
  [ "$tm" != null ] && ratio=$(awk -v t="$tm" -v p="$pm" 'BEGIN { printf "%.3f", t / p }')
  tshow=$tm
  [ "$tm" = null ] && tshow="skipped"
  printf '%-12s %-22s %-22s %-18s %s\n' "$size" "$pm" "$tshow" "$ratio" "$pr"
done

{
  printf '{\n  "device": "%s", "path_mtu": %s, "netdev_mtu": %s, "tx_depth": %s, "tide_streams": %s,\n' "$DEVICE" "${pmtu:-null}" "$MTU" "$TXDEPTH" "$STREAMS"
  printf '  "bytes_per_repetition": %s, "repetitions": %s, "kernel": "%s",\n' "$BYTES" "$REPS" "$(uname -r)"
  printf '  "tide_rdma_options": "%s",\n' "${TIDE_RDMA_OPTIONS:-}"
  tideState="measured"
  [ -n "$tideSkip" ] && tideState="skipped: ${tideSkip//\"/\'}"
  printf '  "tide": "%s",\n  "rows": [\n' "$tideState"
  n=0
  for row in "${rows[@]}"; do
    read -r size iters pm tm pl tl pr <<<"$row"
    [ "$tl" = - ] && tl=""
    ratio=null
    [ "$tm" != null ] && ratio=$(awk -v t="$tm" -v p="$pm" 'BEGIN { printf "%.4f", t / p }')
    n=$((n + 1))
    printf '    {"size_bytes": %s, "iterations": %s, "ib_write_bw_gbps_median": %s, "ib_write_bw_gbps": [%s], "tide_gbps_median": %s, "tide_gbps": [%s], "ratio": %s, "paired_ratio_median": %s}%s\n' \
      "$size" "$iters" "$pm" "$pl" "$tm" "${tl:-}" "$ratio" "${pr:-null}" "$([ $n -lt ${#rows[@]} ] && echo ,)"
  done
  printf '  ]\n}\n'
} >"$JSON"
/usr/bin/python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$JSON" || { echo "softroce-bench: wrote invalid JSON $JSON" >&2; exit 1; }
echo "softroce-bench: wrote $JSON"
