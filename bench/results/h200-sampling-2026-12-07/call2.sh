#!/usr/bin/env bash
# Session 2026-12-07 (third), call 2: sampling on the device (decoder_sample.cu,
# the gathered prefix in front of the radix selects, after call 1 measured the radix selects alone;
# Decoder::forward_sampled). Tests against sample_token and the host-sampling decoder, the
# sanitizers on the sample kernel, then bench-model A/B: greedy, device sampling and host sampling
# (QLINEAR_HOST_SAMPLE=1) in the same call. Run as: bash .carry/call2.sh (carry: .carry).
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
for tool in memcheck racecheck synccheck; do
  timeout 90 "$SAN" --tool $tool --error-exitcode 3 bin/model_tests --gtest_color=no \
    --gtest_filter='CudaOpsTest.SampleLeaves*' > "$OUT/sanitizer_$tool.log" 2>&1
  echo "compute-sanitizer $tool: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer_$tool.log" | head -2 | tr '\n' ' ')"
done
QLINEAR_SAMPLE_SELECT=radix timeout 90 "$SAN" --tool racecheck --error-exitcode 3 bin/model_tests \
  --gtest_color=no --gtest_filter='CudaOpsTest.SampleLeaves*' > "$OUT/sanitizer_racecheck_radix.log" 2>&1
echo "compute-sanitizer racecheck (radix selects): exit $? $(grep -E 'RACECHECK SUMMARY' "$OUT/sanitizer_racecheck_radix.log" | tr '\n' ' ')"
echo "== kernel times (ncu) $(date +%T)"
for mode in auto radix; do
  skip=$([[ $mode == auto ]] && echo 90 || echo 210)
  timeout 120 "$NCU" --kernel-name regex:sample_kernel --launch-skip $skip --launch-count 30 \
    --metrics gpu__time_duration.sum --print-units base --csv bin/model_tests --gtest_color=no \
    --gtest_filter='CudaOpsTest.SampleIsSampleToken' > "$OUT/ncu_$mode.csv" 2>&1
  python3 - "$OUT/ncu_$mode.csv" "$mode" <<'PY'
import csv, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
head, body = rows[0], rows[1:]
i = head.index("Metric Value")
us = [float(r[i].replace(",", "")) / 1e3 for r in body if r[head.index("Metric Name")] == "gpu__time_duration.sum"]
print(sys.argv[2], "vocabulary 151936, 10 option sets x 3 draws, us per launch:", [round(u) for u in us])
PY
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
bm 8b_all_device X=0 -- $M8 $ALL
bm 8b_all_host QLINEAR_HOST_SAMPLE=1 -- $M8 $ALL
bm 8b_all_radix QLINEAR_SAMPLE_SELECT=radix -- $M8 $ALL
bm 8b_t1_device X=0 -- $M8 --temperature 1
bm 8b_topp_device X=0 -- $M8 $TP
bm 8b_greedy_again X=0 -- $M8
bm 8b_all_device_again X=0 -- $M8 $ALL
echo "== done $(date +%T)"
