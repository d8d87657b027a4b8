#!/usr/bin/env bash
# Stages what call1.sh needs into .carry/amx (the device tool's `carry`): a Release build of
# qlinear, kernels_tests and model_tests without CUDA (BUILD, default build-amx:
#   cmake -B build-amx -G Ninja -DCMAKE_BUILD_TYPE=Release -DQLINEAR_BUILD_TESTS=ON \
#     -DQLINEAR_WITH_CUDA=OFF -DQLINEAR_WITH_OPENCL=OFF
#   cmake --build build-amx --target qlinear kernels_tests model_tests),
# the shared libraries they link beyond the base system, and llama.cpp's llama-bench and
# llama-quantize built with AMX (LLAMA, default ~/.cache/qlinear-peers/llama.cpp/build-amx: the
# flags of ../shared/tools/llamacpp_peer.sh plus -DGGML_AMX_TILE=ON -DGGML_AMX_INT8=ON
# -DGGML_AMX_BF16=ON), its gguf-py and the synthetic-GGUF writer.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
BUILD="${BUILD:-$ROOT/build-amx}"
LL="${LL:-$HOME/.cache/qlinear-peers/llama.cpp}"
DEST="$ROOT/.carry/amx"
rm -rf "$DEST"
mkdir -p "$DEST/bin" "$DEST/lib" "$DEST/peer"
cp "$BUILD/qlinear" "$BUILD/tests/unit/kernels/kernels_tests" "$BUILD/tests/unit/model/model_tests" \
  "$DEST/bin/"
cp "$LL/build-amx/bin/llama-bench" "$LL/build-amx/bin/llama-quantize" "$DEST/bin/"
strip "$DEST"/bin/*
for lib in $(ldd "$DEST"/bin/* | awk '/=> \//{print $3}' | sort -u); do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libstdc++*|libgcc_s*|libdl.so*|libpthread*|librt.so*|ld-linux*) ;;
    *) cp -L "$lib" "$DEST/lib/" ;;
  esac
done
cp -r "$LL/gguf-py" "$DEST/peer/"
cp /work/shared/tools/llamacpp_synth_gguf.py "$DEST/peer/"
tar cJf "$DEST/payload.tar.xz" -C "$DEST" bin lib peer
rm -rf "$DEST/bin" "$DEST/lib" "$DEST/peer"
du -sh "$DEST"
