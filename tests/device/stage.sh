#!/usr/bin/env bash
# Copies what tests/device/run.sh needs on the device machine into DEST (default: the lead's
# checkout's .carry/cuda, which the device tool sends when `carry` names it): the CLI, the device
# test binary and model_tests (the runner's GPU tests) of BUILD (default build-cuda-tests), the
# shared libraries they link that a CUDA image may lack, run.sh, gpu_peers.py and the report
# script.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${BUILD:-$ROOT/build-cuda-tests}"
DEST="${DEST:-/work/main/.carry/cuda}"
rm -rf "$DEST"
mkdir -p "$DEST/bin" "$DEST/lib" "$DEST/tools"
cp "$BUILD/qlinear" "$DEST/bin/"
cp "$BUILD/tests/device/cuda_device_tests" "$DEST/bin/"
# The runner's GPU tests (cuda ops, goldens, fixture formats) live in model_tests.
# (A build of only qlinear and cuda_device_tests ships without them: tests/device/gemv.sh.)
[[ -f "$BUILD/tests/unit/model/model_tests" ]] && cp "$BUILD/tests/unit/model/model_tests" "$DEST/bin/"
strip "$DEST"/bin/*
# Libraries outside the base system and CUDA (those the device image has: libc, libstdc++,
# libgomp, libcuda, libcublasLt).
for lib in $(ldd "$DEST"/bin/* | awk '/=> \//{print $3}' | sort -u); do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libstdc++*|libgcc_s*|libgomp*|libcuda.so*|libcublas*|libdl.so*|libpthread*|librt.so*|ld-linux*) ;;
    *) cp -L "$lib" "$DEST/lib/" ;;
  esac
done
# bin/ and lib/ travel as one xz archive (openblas alone is 36 MB); run.sh unpacks it.
tar cJf "$DEST/payload.tar.xz" -C "$DEST" bin lib
rm -rf "$DEST/bin" "$DEST/lib"
cp "$ROOT/tests/device/run.sh" "$ROOT/tests/device/gemv.sh" "$ROOT/tests/device/step_profile.sh" \
  "$ROOT/tests/device/norm_fusion.sh" "$ROOT/tests/device/bench_ab.sh" \
  "$ROOT/tests/device/diag.sh" "$ROOT/tests/device/device_env.sh" "$DEST/"
cp /work/shared/tools/gpu_peers.py /work/shared/tools/gpu_decode_peer.py "$DEST/tools/"
cp "$ROOT/bench/h200_report.py" "$ROOT/tests/device/print_bench.py" "$DEST/tools/"
du -sh "$DEST"; ls -la "$DEST"
