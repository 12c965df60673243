#!/usr/bin/env bash
# The conformance suite fails, never skips, when a backend that can run here
# cannot connect: tcp told to listen on an address this host does not have
# (documentation range; bind fails, no packet is sent) must fail the case,
# naming the cause.
set -u
BIN=$1
out=$(TIDE_CONFORMANCE_LISTEN=192.0.2.1 "$BIN" --gtest_filter='*CapabilitiesNameTheBackend/tcp' 2>&1)
rc=$?
fail() { echo "$out"; echo "FAIL: $*"; exit 1; }
[ $rc -ne 0 ] || fail "a world that could not connect passed (or was skipped)"
grep -q "bind to 192.0.2.1" <<<"$out" || fail "the cause is not named"
grep -q "1 FAILED TEST" <<<"$out" || fail "not reported as a failed test"
echo "PASS"
