#!/usr/bin/env bash
# Device call 3 (2026-12-04): the kept form (grouped where rows * heads >= 8 per SM): GPU tests,
# batched decode at 16 / 32 / 64 and prefill of 3968, auto against QLINEAR_CUDA_ATTENTION_GROUPED=0.
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
for b in 16 32 64; do
  bm auto_8b_b$b X=1 -- --synthetic llama3-8b --format w4a16g128 --prompt-len 128 --batch $b
  bm old_8b_b$b QLINEAR_CUDA_ATTENTION_GROUPED=0 -- --synthetic llama3-8b --format w4a16g128 --prompt-len 128 --batch $b
done
bm auto_8b_p3968 X=1 -- --synthetic llama3-8b --format w4a16g128 --prompt-len 3968
bm auto_8b_p128 X=1 -- --synthetic llama3-8b --format w4a16g128 --prompt-len 128
cd $OUT && tar czf logs.tgz model_tests.log bench.err && rm -f model_tests.log bench.err
