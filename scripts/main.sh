#!/usr/bin/env bash
# The main job: build the release CLI at build/qlinear, generate text with the embedded default
# model (models/default: a small Llama trained on the King James Bible, tools/train_default_model.py),
# then quantize it to AWQ 4-bit and generate with that, and show which kernel each of its layers
# runs and why (inspect + explain).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)"
prompt="And God said unto Moses,"
echo "== generate (models/default, bf16, greedy)"
./build/qlinear generate --model models/default --prompt "$prompt" --max-tokens 48
if ./build/qlinear quantize --help >/dev/null 2>&1; then
  quantized=build/default-awq
  echo "== quantize to AWQ 4-bit, group 128 (calibrated on models/default/calib.txt)"
  ./build/qlinear quantize --model models/default --out "$quantized" --format awq --force \
    --calib models/default/calib.txt
  echo "== generate (AWQ 4-bit)"
  ./build/qlinear generate --model "$quantized" --prompt "$prompt" --max-tokens 48
else
  quantized=build/example-model
  ./build/qlinear example --format "${QLINEAR_EXAMPLE_FORMAT:-awq}" --out "$quantized"
fi
echo "== inspect + explain ($quantized)"
./build/qlinear inspect --model "$quantized"
./build/qlinear explain --model "$quantized"
