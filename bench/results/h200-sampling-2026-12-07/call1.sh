#!/usr/bin/env bash
# Session 2026-12-07 (third), the one device call: sampling on the device (decoder_sample.cu,
# Decoder::forward_sampled). Tests against sample_token and the host-sampling decoder, the
# sanitizers on the sample kernel, then bench-model A/B: greedy, device sampling and host sampling
# (QLINEAR_HOST_SAMPLE=1) in the same call. Run as: bash .carry/call1.sh (carry: .carry).
set -u
source "$(dirname "$0")/cuda/device_env.sh"
cd "$HERE"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,memory.total --format=csv,noheader
echo "== tests $(date +%T)"
timeout 240 bin/model_tests --gtest_color=no \
  --gtest_filter='CudaOpsTest.*:Decoder.Sampled*:Folders/DecodeGraph.*:DecoderOnCuda.*:Fixtures/EveryFormatOnCuda.*' \
  > "$OUT/tests.log" 2>&1
echo "model_tests (GPU filter): exit $?"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|Failure|sample, vocabulary|Expected|Which is|option set" "$OUT/tests.log" | head -40
SAN="$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null | head -1)"
for tool in memcheck racecheck; do
  timeout 90 "$SAN" --tool $tool --error-exitcode 3 bin/model_tests --gtest_color=no \
    --gtest_filter='CudaOpsTest.SampleLeaves*' > "$OUT/sanitizer_$tool.log" 2>&1
  echo "compute-sanitizer $tool: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer_$tool.log" | head -2 | tr '\n' ' ')"
done
echo "== bench $(date +%T)"
bm() {  # label env... -- bench-model args
  local label=$1; shift
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" timeout 60 bin/qlinear bench-model --device cuda "$@" --gen-len 128 \
    --json 2>> "$OUT/bench.err" | sed "s|^{|{\"label\":\"$label\",|" >> "$OUT/ab.jsonl"
  tail -1 "$OUT/ab.jsonl" | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(d["label"], round(d["decode_tokens_per_s"], 1), round(d["prefill_tokens_per_s"]), d.get("sampled_where", ""))' 2>&1
}
M8="--synthetic llama3-8b --format w4a16g128 --prompt-len 128"
M1="--synthetic llama3.2-1b --format w4a16g128 --prompt-len 128"
TP="--temperature 0.8 --top-p 0.95"
ALL="--temperature 0.8 --top-k 40 --top-p 0.95 --min-p 0.02 --repetition-penalty 1.1"
bm 8b_greedy X=0 -- $M8
bm 8b_topp_device X=0 -- $M8 $TP
bm 8b_topp_host QLINEAR_HOST_SAMPLE=1 -- $M8 $TP
bm 8b_all_device X=0 -- $M8 $ALL
bm 8b_all_host QLINEAR_HOST_SAMPLE=1 -- $M8 $ALL
bm 8b_t1_device X=0 -- $M8 --temperature 1
bm 8b_t1_host QLINEAR_HOST_SAMPLE=1 -- $M8 --temperature 1
bm 1b_greedy X=0 -- $M1
bm 1b_topp_device X=0 -- $M1 $TP
bm 1b_topp_host QLINEAR_HOST_SAMPLE=1 -- $M1 $TP
bm 8b_greedy_again X=0 -- $M8
bm 8b_topp_device_again X=0 -- $M8 $TP
echo "== done $(date +%T)"
