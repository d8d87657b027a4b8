#!/usr/bin/env bash
# The main job: build the release CLI at build/qlinear, write the embedded default example model
# (a tiny AWQ Llama the project generates itself) and run `inspect` and `explain` on it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)"
model=build/example-model
./build/qlinear example --format "${QLINEAR_EXAMPLE_FORMAT:-awq}" --out "$model"
./build/qlinear inspect --model "$model"
if ./build/qlinear explain --help >/dev/null 2>&1; then
  ./build/qlinear explain --model "$model"
fi
