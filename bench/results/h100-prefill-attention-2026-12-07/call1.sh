#!/usr/bin/env bash
# Session 2026-12-07 (fourth), call 1: (a) the tensor-core prefill attention
# (decoder_attention_mma.cu, 3d0141a): its tests against the CPU ops and the f32 kernels, the
# runner's GPU tests, bench-model prefill A/B against QLINEAR_CUDA_ATTENTION_MMA=0; (b) decode
# steps per context bucket (11f40bf): DecodeGraph tests, decode A/B against QLINEAR_CONTEXT_BUCKETS=0;
# (c) 37b8156's sample kernel on a GPU for the first time: its tests and racecheck on both
# selection paths. Run as: bash .carry/call1.sh (carry: .carry).
set -u
source "$(dirname "$0")/cuda/device_env.sh"
cd "$HERE"
source "$HERE/bench_ab.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,memory.total --format=csv,noheader
echo "== tests $(date +%T)"
timeout 150 bin/model_tests --gtest_color=no \
  --gtest_filter="CudaOpsTest.*:Decoder.Sampled*:DecoderOnCuda.TensorCore*:*DecodeGraph*" > "$OUT/tests_ops.log" 2>&1
echo "model_tests ops, sampling, tensor-core attention, decode graphs: exit $?"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|Failure|Expected|Which is|element|: cuda|tensor-core" "$OUT/tests_ops.log" | head -30
echo "== bench $(date +%T)"
M8="--synthetic llama3-8b --format w4a16g128"
M1="--synthetic llama3.2-1b --format w4a16g128"
BM_TIMEOUT=60
bm 8b_p3968_mma X=0 -- $M8 --prompt-len 3968 --gen-len 4
bm 8b_p3968_old QLINEAR_CUDA_ATTENTION_MMA=0 -- $M8 --prompt-len 3968 --gen-len 4
bm 8b_p1024_mma X=0 -- $M8 --prompt-len 1024 --gen-len 4
bm 8b_p1024_old QLINEAR_CUDA_ATTENTION_MMA=0 -- $M8 --prompt-len 1024 --gen-len 4
bm 8b_greedy_buckets X=0 -- $M8 --prompt-len 128 --gen-len 128
bm 8b_greedy_nobuckets QLINEAR_CONTEXT_BUCKETS=0 -- $M8 --prompt-len 128 --gen-len 128
bm 8b_greedy_buckets2 X=0 -- $M8 --prompt-len 128 --gen-len 128
bm 8b_greedy_nobuckets2 QLINEAR_CONTEXT_BUCKETS=0 -- $M8 --prompt-len 128 --gen-len 128
echo "== runner tests $(date +%T)"
timeout 120 bin/model_tests --gtest_color=no \
  --gtest_filter='*OnCuda*:HfGolden*cuda*:-DecoderOnCuda.TensorCore*' > "$OUT/tests_runner.log" 2>&1
echo "model_tests runner on cuda: exit $?"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" "$OUT/tests_runner.log" | head -20
echo "== sanitizers $(date +%T)"
SAN="$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null | head -1)"
for tool in memcheck racecheck; do
  timeout 60 "$SAN" --tool $tool --error-exitcode 3 --kernel-name regex:attention_mma bin/model_tests \
    --gtest_color=no --gtest_filter='CudaOpsTest.TensorCore*' > "$OUT/san_${tool}_attention.log" 2>&1
  echo "attention_mma $tool: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san_${tool}_attention.log" | head -2 | tr '\n' ' ')"
done
for sel in auto radix; do
  QLINEAR_SAMPLE_SELECT=$sel timeout 60 "$SAN" --tool racecheck --error-exitcode 3 bin/model_tests \
    --gtest_color=no --gtest_filter='CudaOpsTest.SampleLeaves*' > "$OUT/san_racecheck_$sel.log" 2>&1
  echo "sample kernel racecheck ($sel): exit $? $(grep -E 'RACECHECK SUMMARY' "$OUT/san_racecheck_$sel.log" | tr '\n' ' ')"
done
timeout 60 "$SAN" --tool memcheck --error-exitcode 3 bin/model_tests --gtest_color=no \
  --gtest_filter='CudaOpsTest.SampleLeaves*' > "$OUT/san_memcheck_sample.log" 2>&1
echo "sample kernel memcheck: exit $? $(grep -E 'ERROR SUMMARY' "$OUT/san_memcheck_sample.log" | tr '\n' ' ')"
echo "== more bench $(date +%T)"
bm 1b_p3968_mma X=0 -- $M1 --prompt-len 3968 --gen-len 4
bm 1b_p3968_old QLINEAR_CUDA_ATTENTION_MMA=0 -- $M1 --prompt-len 3968 --gen-len 4
bm 1b_greedy_buckets X=0 -- $M1 --prompt-len 128 --gen-len 128
bm 1b_greedy_nobuckets QLINEAR_CONTEXT_BUCKETS=0 -- $M1 --prompt-len 128 --gen-len 128
echo "== done $(date +%T)"
