#!/usr/bin/env bash
# Device call 6 (2026-12-04 evening): the kept build (call 5's binaries): what attention and
# o_proj cost inside the step now (QLINEAR_STEP_SKIP), and the PyTorch decode peer.
set -u
R=$PWD
source $R/.carry/cuda/device_env.sh
H=$R/.carry/cuda
cd $H
bm() {  # label env... -- args
  local label=$1; shift
  local envs=(); while [[ $1 != -- ]]; do envs+=("$1"); shift; done; shift
  env "${envs[@]}" timeout 90 bin/qlinear bench-model --device cuda "$@" --gen-len 128 --json 2>>$OUT/bench.err | sed "s|^{|{\"label\":\"$label\",|" >> $OUT/skip.jsonl
  echo "$label: $(tail -1 $OUT/skip.jsonl | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print({k:round(v,1) for k,v in d.items() if "tok" in k})' 2>&1 | cut -c1-200)"
}
M8="--synthetic llama3-8b --format w4a16g128 --prompt-len 128"
bm full X=1 -- $M8
bm skip_attention QLINEAR_STEP_SKIP=attention -- $M8
bm skip_o QLINEAR_STEP_SKIP=o -- $M8
bm skip_norm QLINEAR_STEP_SKIP=norm -- $M8
bm full_again X=1 -- $M8
echo "== peer $(date +%T)"
MODEL=llama3-8b QUANT=int4 COMPILE=0 timeout 200 python3 $R/.carry/gpu_decode_peer.py 2>&1 | tail -5
echo "== done $(date +%T)"
rm -f $OUT/bench.err
