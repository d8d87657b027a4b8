#!/usr/bin/env bash
# Device call 2 (2026-12-03 afternoon): decode attention with the values loaded beside the keys,
# the next run prefetched, vector loads for every dtype, one part written directly; the fewest
# keys of a part swept.
set -u
R=$PWD
H=$R/.carry/cuda
cd "$H" && tar xJf payload.tar.xz
export LD_LIBRARY_PATH=$H/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export QLINEAR_SOURCE_DIR=$R
echo "== model_tests GPU filter"
timeout 200 bin/model_tests --gtest_color=no --gtest_filter='CudaOpsTest.*:Folders/HfGolden.*cuda*:Folders/DecodeGraph.*:Fixtures/EveryFormatOnCuda.*' > $OUT/model_tests.log 2>&1
echo "exit $?"; grep -E "^\[  (PASSED|FAILED) |Failure" $OUT/model_tests.log | head -30
echo "== compute-sanitizer memcheck on the attention ops"
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 3 bin/model_tests --gtest_color=no --gtest_filter='CudaOpsTest.RopeStoreKv*:CudaOpsTest.CacheSequences*' > $OUT/sanitizer.log 2>&1
echo "exit $?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $OUT/sanitizer.log | head -4
run() { # model prompt min_part skip [kv]
  QLINEAR_CUDA_ATTENTION_MIN_PART=$3 QLINEAR_STEP_SKIP="$4" timeout 60 bin/qlinear bench-model --device cuda --synthetic $1 --format w4a16g128 \
    --prompt-len $2 --gen-len 128 --kv-dtype ${5:-bf16} --json 2>>$OUT/bench.err | sed "s|^{|{\"min_part\":$3,\"skip\":\"$4\",\"kv\":\"${5:-bf16}\",\"prompt\":$2,|" >> $OUT/attention.jsonl
  tail -1 $OUT/attention.jsonl | python3 -c "import json,sys; r=json.loads(sys.stdin.read()); print(r['model'], r['prompt'], r['kv'], 'min_part', r['min_part'], '[%s]'%r['skip'], '%.1f tok/s  %.1f us/step' % (r['decode_tokens_per_s'], 1e6/r['decode_tokens_per_s']))"
}
for m in 16 32 64 128 256; do run llama3-8b 128 $m ""; done
run llama3-8b 128 64 attention
for m in 16 64 128; do run llama3-8b 2048 $m ""; done
run llama3-8b 3968 64 "" bf16
run llama3-8b 3968 64 "" fp8
run llama3.2-1b 128 64 ""
run llama3.2-1b 128 16 ""
cd $OUT && tar czf call2.tgz model_tests.log sanitizer.log bench.err && rm -f model_tests.log sanitizer.log bench.err
