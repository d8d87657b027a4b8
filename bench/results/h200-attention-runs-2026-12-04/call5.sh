#!/usr/bin/env bash
# Device call 5 (2026-12-04 evening): the per-head decode attention, kept form: parts of <= 16 keys
# take runs of 2 keys whose values load with them, longer parts runs of 4; the first run requested
# before the wait (settled history). GPU tests; A/B: PREFETCH=0, and SHORT_PART=0 PREFETCH=0 (the form before).
set -u
R=$PWD
export QLINEAR_SOURCE_DIR=$R
source $R/.carry/cuda/device_env.sh
H=$R/.carry/cuda
cd $H
echo "== model_tests GPU filter $(date +%T)"
timeout 200 bin/model_tests --gtest_color=no --gtest_filter='CudaOpsTest.*:Folders/HfGolden.*cuda*:Folders/DecodeGraph.*:Fixtures/EveryFormatOnCuda.*' > $OUT/model_tests.log 2>&1
echo "exit $?"; grep -E "^\[  (PASSED|FAILED) |Failure|FAILED" $OUT/model_tests.log | head -20
QLINEAR_CUDA_ATTENTION_SHORT_PART=0 QLINEAR_CUDA_ATTENTION_PREFETCH=0 timeout 100 bin/model_tests --gtest_color=no --gtest_filter='CudaOpsTest.*' > $OUT/model_tests_before.log 2>&1
echo "form before: exit $?"; grep -E "^\[  (PASSED|FAILED) " $OUT/model_tests_before.log
bm() {  # label env... -- args
  local label=$1; shift
  local envs=(); while [[ $1 != -- ]]; do envs+=("$1"); shift; done; shift
  env "${envs[@]}" timeout 90 bin/qlinear bench-model --device cuda "$@" --gen-len 128 --json 2>>$OUT/bench.err | sed "s|^{|{\"label\":\"$label\",|" >> $OUT/ab.jsonl
  echo "$label: $(tail -1 $OUT/ab.jsonl | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print({k:round(v,1) for k,v in d.items() if "tok" in k})' 2>&1 | cut -c1-200)"
}
M8="--synthetic llama3-8b --format w4a16g128"
echo "== A/B $(date +%T)"
for args in "p128|--prompt-len 128" "p2048|--prompt-len 2048" "p3968|--prompt-len 3968" "p3968fp8|--prompt-len 3968 --kv-dtype fp8" "b16|--prompt-len 128 --batch 16"; do
  tag=${args%%|*}; a=${args#*|}
  bm new_$tag X=1 -- $M8 $a
  bm nopf_$tag QLINEAR_CUDA_ATTENTION_PREFETCH=0 -- $M8 $a
  bm before_$tag QLINEAR_CUDA_ATTENTION_SHORT_PART=0 QLINEAR_CUDA_ATTENTION_PREFETCH=0 -- $M8 $a
done
bm new_p128_again X=1 -- $M8 --prompt-len 128
bm before_p128_again QLINEAR_CUDA_ATTENTION_SHORT_PART=0 QLINEAR_CUDA_ATTENTION_PREFETCH=0 -- $M8 --prompt-len 128
bm new_1b X=1 -- --synthetic llama3.2-1b --format w4a16g128 --prompt-len 128
bm before_1b QLINEAR_CUDA_ATTENTION_SHORT_PART=0 QLINEAR_CUDA_ATTENTION_PREFETCH=0 -- --synthetic llama3.2-1b --format w4a16g128 --prompt-len 128
echo "== done $(date +%T)"
cd $OUT && tar czf logs.tgz *.log bench.err && rm -f *.log bench.err
