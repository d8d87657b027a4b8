#!/usr/bin/env bash
# Builds everything with warnings as errors under ASan + UBSan and runs every test with ctest,
# and with --tsan also the threaded kernel tests under ThreadSanitizer (the tsan preset builds
# only them).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
cmake --preset ci >/dev/null
cmake --build --preset ci -j "$(nproc)"
# tests/lsan.supp: a third-party OpenCL driver's allocation that lives until exit.
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
# scripts/ctest_lsan_retry.sh: a test that failed only by LSan's tracer crashing runs once more.
bash scripts/ctest_lsan_retry.sh build-ci --preset ci -j "$(nproc)"

# --tsan: the threaded kernel tests under ThreadSanitizer as well (a second, smaller build).
[ "${1:-}" = "--tsan" ] || exit 0
echo "== threaded kernel tests under ThreadSanitizer (tsan preset, tests/tsan.supp)"
cmake --preset tsan >/dev/null
cmake --build --preset tsan -j "$(nproc)"
# history_size=7 (the most): with the default, TSan sometimes cannot restore the stack of an
# OpenMP worker's old access, and then the libgomp suppression cannot match it (a report with
# "[failed to restore the stack]" on one side; seen once in four runs here).
TSAN_OPTIONS="halt_on_error=1 history_size=7 suppressions=$PWD/tests/tsan.supp" \
  build-tsan/tests/unit/kernels/kernels_tsan_tests
