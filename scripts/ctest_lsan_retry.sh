#!/usr/bin/env bash
# ctest, once more for the tests that failed only because LeakSanitizer's own stop-the-world
# tracer crashed at exit: `ctest_lsan_retry.sh BUILD_DIR CTEST_ARGS...` (scripts/test.sh).
#
# The tracer sometimes segfaults after a test has passed ("Tracer caught signal 11 ...
# LeakSanitizer has encountered a fatal error", google/sanitizers#1353; seen once in CI, on a
# PoCL test). That is the sanitizer failing, neither the test nor a leak (a leak prints "detected
# memory leaks"), so when every failure of the run is that crash, the failed tests run once more
# (ctest --rerun-failed) and their second result stands. Any other failure, a leak, or the crash
# again fails the run.
set -euo pipefail
build=$1
shift
log="$build/ctest-output.log"
if ctest "$@" --output-on-failure --output-log "$log"; then exit 0; fi
failed=$(grep -c . "$build/Testing/Temporary/LastTestsFailed.log" || true)
crashed=$(grep -c 'LeakSanitizer has encountered a fatal error' "$log" || true)
if [ "$failed" -gt 0 ] && [ "$failed" = "$crashed" ] && ! grep -q 'detected memory leaks' "$log"; then
  echo "== $failed test(s) failed only by LeakSanitizer's tracer crashing at exit: once more"
  ctest "$@" --rerun-failed
else
  exit 1
fi
