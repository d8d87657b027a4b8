#!/usr/bin/env bash
# Builds everything with warnings as errors under ASan + UBSan and runs every test with ctest,
# and with --tsan also the threaded kernel tests under ThreadSanitizer (the tsan preset builds
# only them).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
cmake --preset ci >/dev/null
cmake --build --preset ci -j "$(nproc)"
# LeakSanitizer scans each thread's dynamic TLS blocks, which it learns through a __tls_get_addr
# hook; with Debian 12's glibc and GCC 12's libasan, once PoCL is loaded, the main thread of one
# OpenCL test got a bogus block ("DTLS 12 at 0x...f91e-0x000800010a20" with verbosity=1) and the
# tracer segfaulted on it at exit, every run (docs/ci.md). Without the hook LSan still scans every
# stack and the static TLS; a pointer held only in dynamic TLS would show as a leak, never hide one.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}intercept_tls_get_addr=0"
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
