#!/usr/bin/env bash
# Device call 2 (2026-12-03): the FP8 attention path with word loads, hardware e4m3x2 conversion
# and per-key scales; GPU tests, sanitizer, bf16 vs FP8 KV decode.
set -u
R=$PWD
H=$R/.carry/cuda
cd "$H" && tar xJf payload.tar.xz
export LD_LIBRARY_PATH=$H/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export QLINEAR_SOURCE_DIR=$R
echo "== model_tests GPU filter"
timeout 200 bin/model_tests --gtest_color=no --gtest_filter='CudaOpsTest.*:Folders/HfGolden.*cuda*:Folders/DecodeGraph.*:Fixtures/EveryFormatOnCuda.*' > $OUT/model_tests.log 2>&1
echo "exit $?"; grep -E "^\[  (PASSED|FAILED) |Failure|on cuda: rel|kv f8" $OUT/model_tests.log | head -30
echo "== compute-sanitizer memcheck on the KV ops"
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 3 bin/model_tests --gtest_color=no --gtest_filter='CudaOpsTest.RopeStoreKv*:CudaOpsTest.CacheSequences*' > $OUT/sanitizer.log 2>&1
echo "exit $?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $OUT/sanitizer.log | head -4
for m in "llama3-8b 128" "llama3-8b 3968" "llama3.2-1b 3968"; do set -- $m; for kv in bf16 fp8; do
  timeout 90 bin/qlinear bench-model --device cuda --synthetic $1 --format w4a16g128 --prompt-len $2 --gen-len 128 --kv-dtype $kv --json 2>>$OUT/bench.err | sed "s|^{|{\"kv\":\"$kv\",\"prompt\":$2,|" >> $OUT/bench_model.jsonl
  tail -1 $OUT/bench_model.jsonl | cut -c1-210
done; done
tail -2 $OUT/bench.err
cd $OUT && tar czf call2.tgz model_tests.log sanitizer.log bench.err && rm -f model_tests.log sanitizer.log bench.err
