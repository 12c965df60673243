#!/usr/bin/env bash
# `tide sync` on an emulated cluster (one network namespace per node, shaped
# links): verifies bit-exact, leaves no namespace behind on success or on
# Ctrl-C, works from a host whose own network uses the cluster's subnet, and
# `tide cluster cleanup` works. Needs root: skipped (77) otherwise.
set -u
TIDE=$1
PY=/usr/bin/python3
if [ "$(id -u)" != 0 ] || ! command -v ip > /dev/null || ! command -v tc > /dev/null; then
  echo "skipped: needs root and iproute2 (ip, tc) to create network namespaces"
  exit 77
fi
if ! ip netns add tdskip-probe 2> /dev/null; then
  echo "skipped: cannot create network namespaces here"
  exit 77
fi
ip netns del tdskip-probe
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# What a run left of its own cluster (its prefix is on its first line).
left_by() {  # output-file
  local prefix
  prefix=$(sed -n 's/^cluster .* namespaces \(td[0-9a-f]\{4\}\)-n0.*/\1/p' "$1" | head -1)
  [ -n "$prefix" ] || { echo "no cluster line in $1"; return; }
  ip netns list | grep -E "^$prefix-" || true
}
small=(--model tiny-moe --train tp=2,pp=2,ep=2 --infer engines=2,tp=2,ep=2
       --cluster emulated:nodes=4,gpus=2,nic=400Mbps,nics=1 --bucket 64KiB --chunk 16KiB
       --streams 1 --timeout 60)
for s in p2p broadcast; do
  "$TIDE" sync "${small[@]}" --strategy $s --steps 1 --json "$dir/$s.json" > "$dir/out" 2>&1 \
    || { cat "$dir/out"; fail "emulated $s"; }
  "$PY" -c "import json,sys; j=json.load(open('$dir/$s.json')); assert j['verified'] and j['steps'][0]['seconds']>0 and 'namespaces' in j['ranks_as']" \
    || fail "json $s"
  grep -q "^cluster .* namespaces td" "$dir/out" || { cat "$dir/out"; fail "no cluster line"; }
  [ -z "$(left_by "$dir/out")" ] || fail "namespaces left after $s: $(left_by "$dir/out")"
done
# A host whose own network already holds 198.51.100.0/24 (a namespace of the
# test's with that subnet on a veth of its own, the launcher started in it): the
# cluster keeps nothing in the launcher's namespace, so the host's routes do
# not take its traffic (when the store was on a veth there, the ranks' SYNs
# were answered through that veth and every connect timed out).
host=tdtest-host-$$
ip netns add "$host" || fail "cannot create $host"
trap 'ip netns del "$host" 2> /dev/null; rm -rf "$dir"' EXIT
ip -n "$host" link set lo up && ip -n "$host" link add v0 type veth peer name v1 \
  && ip -n "$host" addr add 198.51.100.2/24 dev v0 && ip -n "$host" link set v1 up \
  && ip -n "$host" link set v0 up || fail "cannot set up $host"
nsenter --net=/run/netns/"$host" "$TIDE" sync "${small[@]}" --strategy p2p --steps 1 \
  > "$dir/host" 2>&1 || { cat "$dir/host"; fail "emulated p2p from a host on 198.51.100.0/24"; }
[ -z "$(left_by "$dir/host")" ] || fail "namespaces left: $(left_by "$dir/host")"
ip netns del "$host"
# Ctrl-C in the middle of a longer run: everything is torn down.
"$TIDE" sync "${small[@]}" --strategy p2p --steps 50 > "$dir/int" 2>&1 &
pid=$!
# Interrupted once its cluster is up (bounded wait: a busy host is slow).
for _ in $(seq 1 600); do
  grep -q "^cluster " "$dir/int" && break
  sleep 0.1
done
sleep 1
kill -INT $pid
wait $pid && fail "interrupted run exited 0"
[ -z "$(left_by "$dir/int")" ] || fail "namespaces left after Ctrl-C: $(left_by "$dir/int")"
"$TIDE" cluster cleanup > /dev/null || fail "cluster cleanup"
echo "PASS"
