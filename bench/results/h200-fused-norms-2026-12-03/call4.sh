#!/usr/bin/env bash
# Device call 4 (2026-12-03 evening): fused norms / residual adds in the gemv. Tests, then
# bench-model fused vs QLINEAR_UNFUSED_NORMS=1 (8B and 1B, prompt 128).
set -u
R=$PWD
H=$R/.carry/cuda
cd "$H" && tar xJf payload.tar.xz
export LD_LIBRARY_PATH=$H/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export QLINEAR_SOURCE_DIR=$R
echo "== fused linear"
timeout 120 bin/cuda_device_tests --gtest_color=no --gtest_filter='FusedLinear*' > $OUT/fused.log 2>&1
echo "exit $?"; grep -E "^\[  (PASSED|FAILED) |Failure|differs|Expected|Which is|bucket|int4|int8" $OUT/fused.log | head -30
echo "== model_tests GPU filter"
timeout 200 bin/model_tests --gtest_color=no --gtest_filter='CudaOpsTest.*:Folders/HfGolden.*cuda*:Folders/DecodeGraph.*:Fixtures/EveryFormatOnCuda.*:Fixtures/FusedNormsOnCuda.*' > $OUT/model_tests.log 2>&1
echo "exit $?"; grep -E "^\[  (PASSED|FAILED) |Failure|differ" $OUT/model_tests.log | head -20
for m in llama3-8b llama3.2-1b; do
  for u in 0 1 0 1; do
    QLINEAR_UNFUSED_NORMS=$u timeout 60 bin/qlinear bench-model --device cuda --synthetic $m --format w4a16g128 --prompt-len 128 --gen-len 128 --json 2>>$OUT/bench.err | sed "s|^{|{\"unfused\":$u,|" >> $OUT/fused_ab.jsonl
    tail -1 $OUT/fused_ab.jsonl | python3 -c "import json,sys; d=json.loads(sys.stdin.read()); print('$m unfused=$u', {k:v for k,v in d.items() if 'tok' in k or 'decode' in k})" 2>&1 | cut -c1-300
  done
done
cd $OUT && tar czf call4.tgz fused.log model_tests.log bench.err && rm -f fused.log model_tests.log bench.err
