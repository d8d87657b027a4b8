#!/usr/bin/env bash
# Device call 4 (2026-12-04): after the review refactor (one helper for the split merge's part
# weights, the grouped kernel's element loops through one lambda): GPU tests, decode / prefill.
set -u
R=$PWD
export QLINEAR_SOURCE_DIR=$R
H=$R/.carry/cuda
cd "$H" && tar xJf payload.tar.xz
export LD_LIBRARY_PATH=$H/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
echo "== model_tests GPU filter"
timeout 240 bin/model_tests --gtest_color=no --gtest_filter='CudaOpsTest.*:Folders/HfGolden.*cuda*:Folders/DecodeGraph.*:Fixtures/EveryFormatOnCuda.*' > $OUT/model_tests.log 2>&1
echo "exit $?"; grep -E "^\[  (PASSED|FAILED) |Failure|FAILED" $OUT/model_tests.log | head -20
bm() {  # label env... -- args
  local label=$1; shift
  local envs=(); while [[ $1 != -- ]]; do envs+=("$1"); shift; done; shift
  env "${envs[@]}" timeout 90 bin/qlinear bench-model --device cuda "$@" --gen-len 128 --json 2>>$OUT/bench.err | sed "s|^{|{\"label\":\"$label\",|" >> $OUT/ab.jsonl
  echo "$label: $(tail -1 $OUT/ab.jsonl | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print({k:v for k,v in d.items() if "tok" in k or k in ("prompt_len",)})' 2>&1 | cut -c1-240)"
}
bm auto_8b_p3968 X=1 -- --synthetic llama3-8b --format w4a16g128 --prompt-len 3968
bm auto_8b_p128 X=1 -- --synthetic llama3-8b --format w4a16g128 --prompt-len 128
bm auto_8b_b64 X=1 -- --synthetic llama3-8b --format w4a16g128 --prompt-len 128 --batch 64
cd $OUT && tar czf logs.tgz model_tests.log bench.err && rm -f model_tests.log bench.err
