#!/usr/bin/env bash
# Device call 2 (2026-12-04 evening): the gemv x ring (x rows through shared memory with the
# codes, M <= 4): kernel grid with and without it, GPU runner tests, layer and decode A/B.
set -u
R=$PWD
export QLINEAR_SOURCE_DIR=$R
source $R/.carry/cuda/device_env.sh
H=$R/.carry/cuda
cd $H
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
echo "== cuda_device_tests $(date +%T)"
timeout 200 bin/cuda_device_tests --gtest_color=no > $OUT/device_tests.log 2>&1
echo "exit $?"; grep -E "^\[  (PASSED|FAILED) |Failure|FAILED|cuda grid \] cuda.int.gemv" $OUT/device_tests.log | head -20
QLINEAR_CUDA_GEMV_XRING=0 timeout 100 bin/cuda_device_tests --gtest_color=no --gtest_filter='*cuda_int_gemv_sm80' > $OUT/device_tests_noxring.log 2>&1
echo "no x ring: exit $?"; grep -E "^\[  (PASSED|FAILED) |Failure|cuda grid \] cuda.int.gemv" $OUT/device_tests_noxring.log | head -8
echo "== model_tests GPU filter $(date +%T)"
timeout 200 bin/model_tests --gtest_color=no --gtest_filter='CudaOpsTest.*:Folders/HfGolden.*cuda*:Folders/DecodeGraph.*:Fixtures/EveryFormatOnCuda.*' > $OUT/model_tests.log 2>&1
echo "exit $?"; grep -E "^\[  (PASSED|FAILED) |Failure|FAILED" $OUT/model_tests.log | head -20
echo "== layer bench $(date +%T)"
SH=4096x6144,4096x4096,4096x28672,14336x4096,8192x57344,8192x10240,28672x8192
for xr in 1 0 1; do
  QLINEAR_CUDA_GEMV_XRING=$xr timeout 120 bin/qlinear bench --device cuda --shape $SH --batch 1,2,4 \
    --scheme w4a16g128 --scheme w4a16g128-zp --act-dtype bf16 --out-dtype bf16 --json --quick 2>>$OUT/bench.err \
    | sed "s|^{|{\"xring\":$xr,|" >> $OUT/layer_ab.jsonl
done
python3 - $OUT/layer_ab.jsonl <<'PY'
import json,sys,collections
rows=[json.loads(l) for l in open(sys.argv[1]) if l.startswith('{')]
t=collections.defaultdict(list)
keys=None
for r in rows:
    us=r.get('us') or r.get('time_us') or r.get('kernel_us')
    if keys is None: print(sorted(r.keys())); keys=1
    t[(r.get('scheme'),r.get('shape') or f"{r.get('K')}x{r.get('N')}",r.get('M') or r.get('batch'),r['xring'])].append(us)
for k in sorted(set(k[:3] for k in t)):
    on=t.get(k+(1,)); off=t.get(k+(0,))
    print(k, "xring", on, "ldg", off)
PY
bm() {  # label env... -- args
  local label=$1; shift
  local envs=(); while [[ $1 != -- ]]; do envs+=("$1"); shift; done; shift
  env "${envs[@]}" timeout 90 bin/qlinear bench-model --device cuda "$@" --gen-len 128 --json 2>>$OUT/bench.err | sed "s|^{|{\"label\":\"$label\",|" >> $OUT/ab.jsonl
  echo "$label: $(tail -1 $OUT/ab.jsonl | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print({k:round(v,1) for k,v in d.items() if "tok" in k})' 2>&1 | cut -c1-200)"
}
M8="--synthetic llama3-8b --format w4a16g128"
echo "== decode A/B $(date +%T)"
bm xring_p128 X=1 -- $M8 --prompt-len 128
bm ldg_p128 QLINEAR_CUDA_GEMV_XRING=0 -- $M8 --prompt-len 128
bm xring_p128_again X=1 -- $M8 --prompt-len 128
bm ldg_p128_again QLINEAR_CUDA_GEMV_XRING=0 -- $M8 --prompt-len 128
bm xring_p3968 X=1 -- $M8 --prompt-len 3968
bm ldg_p3968 QLINEAR_CUDA_GEMV_XRING=0 -- $M8 --prompt-len 3968
bm xring_b4 X=1 -- $M8 --prompt-len 128 --batch 4
bm ldg_b4 QLINEAR_CUDA_GEMV_XRING=0 -- $M8 --prompt-len 128 --batch 4
bm xring_1b X=1 -- --synthetic llama3.2-1b --format w4a16g128 --prompt-len 128
bm ldg_1b QLINEAR_CUDA_GEMV_XRING=0 -- --synthetic llama3.2-1b --format w4a16g128 --prompt-len 128
bm prefetch_b64 X=1 -- $M8 --prompt-len 128 --batch 64
bm noprefetch_b64 QLINEAR_CUDA_ATTENTION_PREFETCH=0 -- $M8 --prompt-len 128 --batch 64
echo "== done $(date +%T)"
cd $OUT && tar czf logs.tgz *.log bench.err && rm -f *.log bench.err
