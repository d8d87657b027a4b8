#!/usr/bin/env bash
# Session 2026-12-07 (fifth), call 1: the tensor-core prefill attention's tests and sanitizers
# after ec48d4a (previous session's call 2, not run), prefill A/B at 64-256 rows, and where an
# 8B W4A16 decode step's time goes now (QLINEAR_STEP_SKIP, docs/runner.md).
set -u
source "$(dirname "$0")/cuda/device_env.sh"
cd "$HERE"
source "$HERE/bench_ab.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,memory.total --format=csv,noheader
echo "== tests $(date +%T)"
timeout 90 bin/model_tests --gtest_color=no \
  --gtest_filter="CudaOpsTest.*Attention*:DecoderOnCuda.*:*DecodeGraph*:*OnCuda*:HfGolden*cuda*" > "$OUT/tests.log" 2>&1
echo "model_tests attention, decode graphs, runner on cuda: exit $?"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|Failure|Expected|Which is|element|tensor-core" "$OUT/tests.log" | head -30
timeout 60 bin/cuda_device_tests --gtest_color=no --gtest_filter='CudaUpload.*' > "$OUT/upload_tests.log" 2>&1
echo "cuda_device_tests CudaUpload: exit $?"; grep -E "^\[  (PASSED|FAILED) |Failure|Expected|Which is" "$OUT/upload_tests.log" | head
echo "== sanitizers $(date +%T)"
SAN="$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null | head -1)"
for tool in memcheck racecheck; do
  timeout 60 "$SAN" --tool $tool --error-exitcode 3 bin/model_tests \
    --gtest_color=no --gtest_filter='CudaOpsTest.TensorCore*' > "$OUT/san_${tool}.log" 2>&1
  echo "tensor-core attention test under $tool: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san_${tool}.log" | head -2 | tr '\n' ' ')"
done
M8="--synthetic llama3-8b --format w4a16g128"
BM_TIMEOUT=45
echo "== decode step breakdown $(date +%T)"
bm 8b_dec X=0 -- $M8 --prompt-len 128 --gen-len 128
for s in attention o lm_head gate_up down qkv; do
  bm 8b_skip_$s QLINEAR_STEP_SKIP=$s -- $M8 --prompt-len 128 --gen-len 128
done
bm 8b_dec2 X=0 -- $M8 --prompt-len 128 --gen-len 128
echo "== done $(date +%T)"
