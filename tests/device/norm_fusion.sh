#!/usr/bin/env bash
# One device call that checks and measures the norm fusion (docs/runner.md "The norm inside the
# linear layers"; written 2026-12-04 without a GPU, off by default until this has run): its tests,
# the GPU test filter that guards the plain path, then bench-model with QLINEAR_NORM_FUSION=1
# against =0, alternating, on 8B (batch 1, 4, 8, 16: BATCHES) and 1B. Binaries as tests/device/stage.sh ships
# them; from the repository root on the device machine:
#
#   QLINEAR_SOURCE_DIR=$PWD OUT=$OUT bash .carry/cuda/norm_fusion.sh
#
# Results: tests.log, ab.jsonl (one bench-model record per line with "label"), a summary on stdout.
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
OUT="${OUT:-$HERE/out}"
mkdir -p "$OUT"
source "$HERE/device_env.sh"
cd "$HERE"
timeout 150 bin/cuda_device_tests --gtest_color=no \
  --gtest_filter='*CudaNormFusion*:*cuda_int_gemv_sm80' > "$OUT/tests.log" 2>&1
echo "cuda_device_tests (fusion + gemv grid): exit $?"
timeout 240 bin/model_tests --gtest_color=no --gtest_filter='DecoderOnCuda.*:CudaOpsTest.*:Folders/HfGolden.*cuda*:Folders/DecodeGraph.*:Fixtures/EveryFormatOnCuda.*' \
  >> "$OUT/tests.log" 2>&1
echo "model_tests (GPU filter + DecoderOnCuda): exit $?"
# The same filter with the fusion forced on everywhere (goldens and every format through it).
QLINEAR_NORM_FUSION=1 timeout 200 bin/model_tests --gtest_color=no --gtest_filter='DecoderOnCuda.*:Folders/HfGolden.*cuda*:Folders/DecodeGraph.*:Fixtures/EveryFormatOnCuda.*' \
  > "$OUT/tests_fused.log" 2>&1
echo "model_tests (GPU filter, QLINEAR_NORM_FUSION=1): exit $?"
grep -E "^\[  (PASSED|FAILED) |fused norms" "$OUT/tests.log" "$OUT/tests_fused.log" | head -40
bm() {  # label fusion -- bench-model args
  local label=$1 fusion=$2; shift 3
  QLINEAR_NORM_FUSION=$fusion timeout 90 bin/qlinear bench-model --device cuda "$@" --gen-len 128 \
    --json 2>> "$OUT/bench.err" | sed "s|^{|{\"label\":\"$label\",\"fusion\":$fusion,|" >> "$OUT/ab.jsonl"
  tail -1 "$OUT/ab.jsonl" | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(d["label"], d["fusion"], round(d["decode_tokens_per_s"], 1), round(d.get("total_tokens_per_s", 0), 1))' 2>&1
}
M8="--synthetic llama3-8b --format w4a16g128 --prompt-len 128"
M1="--synthetic llama3.2-1b --format w4a16g128 --prompt-len 128"
for round in 1 2; do
  bm 8b 1 -- $M8
  bm 8b 0 -- $M8
  for b in ${BATCHES:-4 8 16}; do
    bm 8b_b$b 1 -- $M8 --batch $b
    bm 8b_b$b 0 -- $M8 --batch $b
  done
  bm 1b 1 -- $M1
  bm 1b 0 -- $M1
done
echo "== done $(date +%T)"
