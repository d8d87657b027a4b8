#!/usr/bin/env bash
# Device call 8 (2026-12-04 evening): gemv blocks of fewer warps (QLINEAR_CUDA_GEMV_BLOCK_WARPS),
# which spread a grid of less than one wave more evenly over the SMs: grid test, layer and decode.
set -u
R=$PWD
export QLINEAR_SOURCE_DIR=$R
source $R/.carry/cuda/device_env.sh
H=$R/.carry/cuda
cd $H
for bw in 2 1; do
  QLINEAR_CUDA_GEMV_BLOCK_WARPS=$bw timeout 60 bin/cuda_device_tests --gtest_color=no --gtest_filter='*cuda_int_gemv_sm80' > $OUT/grid_bw$bw.log 2>&1
  echo "grid bw $bw: exit $?"; grep -E "^\[  (PASSED|FAILED) |cuda grid \] cuda.int.gemv" $OUT/grid_bw$bw.log | head -3
done
SH=4096x6144,4096x4096,4096x28672,14336x4096,8192x57344,8192x10240,28672x8192
for bw in 8 4 2 1 8 2; do
  QLINEAR_CUDA_GEMV_BLOCK_WARPS=$bw timeout 60 bin/qlinear bench --device cuda --shape $SH --batch 1 \
    --scheme w4a16g128 --act-dtype bf16 --out-dtype bf16 --json --quick 2>>$OUT/bench.err \
    | sed "s|^{|{\"block_warps\":$bw,|" >> $OUT/layer_bw.jsonl
done
python3 - $OUT/layer_bw.jsonl <<'PY'
import json,sys,collections
t=collections.defaultdict(list)
for l in open(sys.argv[1]):
    if l.startswith('{'):
        r=json.loads(l); t[(f"{r['K']}x{r['N']}",r['block_warps'])].append(r['median_s']*1e6)
for sh in sorted(set(k[0] for k in t)):
    print(sh, {bw: ["%.1f"%v for v in t[(sh,bw)]] for bw in (8,4,2,1)})
PY
bm() {  # label env... -- args
  local label=$1; shift
  local envs=(); while [[ $1 != -- ]]; do envs+=("$1"); shift; done; shift
  env "${envs[@]}" timeout 60 bin/qlinear bench-model --device cuda "$@" --gen-len 128 --json 2>>$OUT/bench.err | sed "s|^{|{\"label\":\"$label\",|" >> $OUT/ab.jsonl
  echo "$label: $(tail -1 $OUT/ab.jsonl | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print({k:round(v,1) for k,v in d.items() if "tok" in k})' 2>&1 | cut -c1-200)"
}
M8="--synthetic llama3-8b --format w4a16g128 --prompt-len 128"
bm bw8 X=1 -- $M8
bm bw2 QLINEAR_CUDA_GEMV_BLOCK_WARPS=2 -- $M8
bm bw1 QLINEAR_CUDA_GEMV_BLOCK_WARPS=1 -- $M8
bm bw8_again X=1 -- $M8
bm bw2_again QLINEAR_CUDA_GEMV_BLOCK_WARPS=2 -- $M8
echo "== done $(date +%T)"
cd $OUT && tar czf logs.tgz *.log bench.err && rm -f *.log bench.err
