#!/usr/bin/env bash
# The conformance suite fails, never skips, when a backend that can run here
# cannot connect: tcp told to listen on an address this host does not have
# (documentation range; bind fails, no packet is sent) must fail the case,
# naming the cause.
# The address is one of the documentation ranges that this host does not
# hold (hosts on those ranges exist: a fixed one could bind here).
set -u
BIN=$1
out=""
fail() { echo "$out"; echo "FAIL: $*"; exit 1; }
addr=""
for a in 192.0.2.1 192.0.2.254 198.51.100.254 198.51.100.1; do
  if ! /usr/bin/python3 -c "import socket,sys; socket.socket().bind((sys.argv[1], 0))" "$a" \
    2> /dev/null; then
    addr=$a
    break
  fi
done
[ -n "$addr" ] || fail "this host holds every candidate address; none is foreign to it"
out=$(TIDE_CONFORMANCE_LISTEN=$addr "$BIN" --gtest_filter='*CapabilitiesNameTheBackend/tcp' 2>&1)
rc=$?
[ $rc -ne 0 ] || fail "a world that could not connect passed (or was skipped)"
grep -q "bind to $addr" <<<"$out" || fail "the cause is not named"
grep -q "1 FAILED TEST" <<<"$out" || fail "not reported as a failed test"
echo "PASS"
