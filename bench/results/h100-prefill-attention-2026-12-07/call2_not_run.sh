#!/usr/bin/env bash
# Session 2026-12-07 (fourth), call 2: the tensor-core prefill attention after call 1 (the kernel
# taken before any split of the keys, so every prompt chunk of a small model takes it; the decoder
# test's bound): its tests, memcheck / racecheck / synccheck on it, the runner's GPU tests, and
# bench-model prefill A/B against QLINEAR_CUDA_ATTENTION_MMA=0 at more prompt lengths.
set -u
source "$(dirname "$0")/cuda/device_env.sh"
cd "$HERE"
source "$HERE/bench_ab.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,memory.total --format=csv,noheader
echo "== tests $(date +%T)"
timeout 70 bin/model_tests --gtest_color=no \
  --gtest_filter="CudaOpsTest.*Attention*:DecoderOnCuda.*:*DecodeGraph*:*OnCuda*:HfGolden*cuda*" > "$OUT/tests.log" 2>&1
echo "model_tests attention, decode graphs, runner on cuda: exit $?"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|Failure|Expected|Which is|element|tensor-core" "$OUT/tests.log" | head -30
echo "== sanitizers $(date +%T)"
SAN="$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null | head -1)"
for tool in memcheck racecheck; do
  QLINEAR_CUDA_ATTENTION_GROUPED=0 timeout 50 "$SAN" --tool $tool --error-exitcode 3 bin/model_tests \
    --gtest_color=no --gtest_filter='CudaOpsTest.TensorCore*' > "$OUT/san_${tool}.log" 2>&1
  echo "tensor-core attention test under $tool: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san_${tool}.log" | head -2 | tr '\n' ' ')"
done
echo "== bench $(date +%T)"
M8="--synthetic llama3-8b --format w4a16g128"
BM_TIMEOUT=45
for P in 128; do
  bm 8b_p${P}_mma X=0 -- $M8 --prompt-len $P --gen-len 4
  bm 8b_p${P}_old QLINEAR_CUDA_ATTENTION_MMA=0 -- $M8 --prompt-len $P --gen-len 4
done
echo "== done $(date +%T)"
