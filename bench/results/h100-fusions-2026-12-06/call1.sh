#!/usr/bin/env bash
# Session 2026-12-06, the one device call: the stop-31 norm fusion (eb8c209) and this session's
# SwiGLU-in-gate_up on the GPU (tests, then bench-model A/B), the attention part floor at 128
# positions, and the PyTorch decode peer in the same call.
set -u
source "$(dirname "$0")/cuda/device_env.sh"
cd "$HERE"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,memory.total --format=csv
timeout 120 bin/cuda_device_tests --gtest_color=no \
  --gtest_filter='*CudaNormFusion*:*CudaSwiGlu*:*cuda_int_gemv_sm80' > "$OUT/tests.log" 2>&1
echo "cuda_device_tests (fusions + gemv grid): exit $?"
QLINEAR_NORM_FUSION=1 QLINEAR_SWIGLU_FUSION=1 timeout 180 bin/model_tests --gtest_color=no \
  --gtest_filter='DecoderOnCuda.*:Folders/HfGolden.*cuda*:Folders/DecodeGraph.*:Fixtures/EveryFormatOnCuda.*:CudaOpsTest.*' \
  > "$OUT/tests_fused.log" 2>&1
echo "model_tests (GPU filter, both fusions forced on): exit $?"
grep -E "^\[  (PASSED|FAILED) |fused norms|SwiGLU in|swiglu   \] M 16|Failure" "$OUT/tests.log" "$OUT/tests_fused.log" | head -40
bm() {  # label env... -- bench-model args
  local label=$1; shift
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" timeout 60 bin/qlinear bench-model --device cuda "$@" --gen-len 128 \
    --json 2>> "$OUT/bench.err" | sed "s|^{|{\"label\":\"$label\",|" >> "$OUT/ab.jsonl"
  tail -1 "$OUT/ab.jsonl" | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(d["label"], round(d["decode_tokens_per_s"], 1), round(d.get("total_tokens_per_s", 0), 1), round(d["prefill_tokens_per_s"]))' 2>&1
}
M8="--synthetic llama3-8b --format w4a16g128 --prompt-len 128"
M1="--synthetic llama3.2-1b --format w4a16g128 --prompt-len 128"
N0="QLINEAR_NORM_FUSION=0 QLINEAR_SWIGLU_FUSION=0"
N1="QLINEAR_NORM_FUSION=1 QLINEAR_SWIGLU_FUSION=0"
B1="QLINEAR_NORM_FUSION=1 QLINEAR_SWIGLU_FUSION=1"
bm 8b_none $N0 -- $M8
bm 8b_norm $N1 -- $M8
bm 8b_both $B1 -- $M8
bm 8b_b16_none $N0 -- $M8 --batch 16
bm 8b_b16_both $B1 -- $M8 --batch 16
bm 1b_none $N0 -- $M1
bm 1b_both $B1 -- $M1
echo "== peer $(date +%T)"
MODEL=llama3-8b QUANT=int4 COMPILE=0 timeout 150 python3 tools/gpu_decode_peer.py 2>&1 | tail -4
bm 8b_none_again $N0 -- $M8
bm 8b_both_again $B1 -- $M8
echo "== done $(date +%T)"
