#!/usr/bin/env bash
# Session 2026-12-06 (second) call 5: the L2 prefetch carried by the attention launch
# (QLINEAR_L2_PREFETCH_MB) against none; the gemv with its weights in L2 (--rotate-mb 0) against
# rotated past it, the upper bound of what a prefetch can give a layer; the GPU tests.
set -u
source "$(dirname "$0")/cuda/device_env.sh"
cd "$HERE"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
timeout 60 bin/cuda_device_tests --gtest_color=no --gtest_filter='*CudaWeightStreams.*' > "$OUT/tests_kernels.log" 2>&1
echo "cuda_device_tests: exit $?"
grep -E "^\[  (PASSED|FAILED) |Failure" "$OUT/tests_kernels.log" | head -10
timeout 150 bin/model_tests --gtest_color=no --gtest_filter='DecoderOnCuda.*:Folders/DecodeGraph.*' > "$OUT/tests_model.log" 2>&1
echo "model_tests: exit $?"
grep -E "^\[  (PASSED|FAILED) |prefetches|Failure" "$OUT/tests_model.log" | head -20
bm() {  # label env... -- bench-model args
  local label=$1; shift
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" timeout 60 bin/qlinear bench-model --device cuda "$@" --gen-len 128 \
    --json 2>> "$OUT/bench.err" | sed "s|^{|{\"label\":\"$label\",|" >> "$OUT/ab.jsonl"
  tail -1 "$OUT/ab.jsonl" | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(d["label"], round(d["decode_tokens_per_s"], 1), round(d.get("total_tokens_per_s", 0), 1))' 2>&1
}
M8="--synthetic llama3-8b --format w4a16g128 --prompt-len 128"
for round in 1 2; do
  for mb in 0 8 16 32 48; do bm 8b_pf$mb QLINEAR_L2_PREFETCH_MB=$mb -- $M8; done
done
bm 8b_b16_pf0 QLINEAR_L2_PREFETCH_MB=0 -- $M8 --batch 16
bm 8b_b16_pf16 QLINEAR_L2_PREFETCH_MB=16 -- $M8 --batch 16
echo "== gemv in L2 vs rotated $(date +%T)"
S="--shape 4096x4096 --shape 4096x28672 --shape 4096x6144 --shape 14336x4096"
timeout 90 bin/qlinear bench --device cuda --scheme w4a16g128 $S --batch 1 --rotate-mb 0 --json > "$OUT/gemv_l2.jsonl" 2>> "$OUT/bench.err"
timeout 90 bin/qlinear bench --device cuda --scheme w4a16g128 $S --batch 1 --quick --json > "$OUT/gemv_rotated.jsonl" 2>> "$OUT/bench.err"
python3 - "$OUT/gemv_l2.jsonl" "$OUT/gemv_rotated.jsonl" <<'PY'
import json, sys
def load(p):
    out = {}
    for line in open(p):
        try: d = json.loads(line)
        except Exception: continue
        out[(d.get("K"), d.get("N"))] = d
    return out
a, b = load(sys.argv[1]), load(sys.argv[2])
for k in a:
    if k in b:
        ta = a[k].get("time_us", a[k].get("us")); tb = b[k].get("time_us", b[k].get("us"))
        print(k, "in L2", ta, "rotated", tb)
PY
head -c 600 "$OUT/gemv_l2.jsonl"; echo
echo "== done $(date +%T)"
