#!/usr/bin/env bash
# Device call 3 (2026-12-03): the attention kernel back in its morning form plus the direct
# one-part store and the part floor as a parameter: GPU tests, decode at 128 and 3968 positions.
set -u
R=$PWD
H=$R/.carry/cuda
cd "$H" && tar xJf payload.tar.xz
export LD_LIBRARY_PATH=$H/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export QLINEAR_SOURCE_DIR=$R
echo "== model_tests GPU filter"
timeout 200 bin/model_tests --gtest_color=no --gtest_filter='CudaOpsTest.*:Folders/HfGolden.*cuda*:Folders/DecodeGraph.*:Fixtures/EveryFormatOnCuda.*' > $OUT/model_tests.log 2>&1
echo "exit $?"; grep -E "^\[  (PASSED|FAILED) |Failure" $OUT/model_tests.log | head -20
for p in 128 3968; do
  timeout 60 bin/qlinear bench-model --device cuda --synthetic llama3-8b --format w4a16g128 --prompt-len $p --gen-len 128 --json 2>>$OUT/bench.err | sed "s|^{|{\"prompt\":$p,|" >> $OUT/final.jsonl
  tail -1 $OUT/final.jsonl | cut -c1-200
done
cd $OUT && tar czf call3.tgz model_tests.log bench.err && rm -f model_tests.log bench.err
