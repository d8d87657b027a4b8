#!/usr/bin/env bash
# Device call 1 (2026-12-03): GPU tests, sanitizer on the FP8 KV kernels, FP8 KV speed and accuracy.
set -u
R=$PWD
H=$R/.carry/cuda
cd "$H" && tar xJf payload.tar.xz
export LD_LIBRARY_PATH=$H/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export QLINEAR_SOURCE_DIR=$R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== model_tests GPU filter"
timeout 240 bin/model_tests --gtest_color=no --gtest_filter='CudaOpsTest.*:Folders/HfGolden.*cuda*:Folders/DecodeGraph.*:Fixtures/EveryFormatOnCuda.*' > $OUT/model_tests.log 2>&1
echo "exit $?"; grep -E "^\[  (PASSED|FAILED) |Failure|fp8 KV cache|kv f8" $OUT/model_tests.log | head -40
echo "== compute-sanitizer memcheck on the KV ops"
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 3 bin/model_tests --gtest_color=no --gtest_filter='CudaOpsTest.RopeStoreKv*:CudaOpsTest.CacheSequences*' > $OUT/sanitizer.log 2>&1
echo "exit $?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $OUT/sanitizer.log | head
echo "== generate on a HF folder, FP8 KV"
timeout 60 bin/qlinear generate --model $R/tests/data/hf/llama3 --prompt-ids 1,2,3,4 --max-tokens 8 --device cuda --kv-dtype fp8 --json 2>&1 | tail -2
echo "== perplexity, models/default, cuda"
for kv in f32 bf16 fp8; do timeout 60 bin/qlinear perplexity --model $R/models/default --text $R/models/default/heldout.txt --ctx 256 --max-tokens 8192 --device cuda --kv-dtype $kv --json 2>/dev/null | tail -1 | tee -a $OUT/perplexity.jsonl; done
echo "== bench-model 8B w4a16g128, bf16 vs fp8 KV"
for p in 128 2048 3968; do for kv in bf16 fp8; do
  timeout 120 bin/qlinear bench-model --device cuda --synthetic llama3-8b --format w4a16g128 --prompt-len $p --gen-len 128 --kv-dtype $kv --json 2>>$OUT/bench.err | sed "s|^{|{\"kv\":\"$kv\",|" | tee -a $OUT/bench_model.jsonl
done; done
echo "== bench-model 1B w4a16g128 at 3968"
for kv in bf16 fp8; do timeout 90 bin/qlinear bench-model --device cuda --synthetic llama3.2-1b --format w4a16g128 --prompt-len 3968 --gen-len 128 --kv-dtype $kv --json 2>>$OUT/bench.err | sed "s|^{|{\"kv\":\"$kv\",|" | tee -a $OUT/bench_model.jsonl; done
tail -3 $OUT/bench.err
cd $OUT && tar czf call1.tgz model_tests.log sanitizer.log bench.err && rm -f model_tests.log sanitizer.log bench.err
