#!/usr/bin/env bash
# Device call 3 (2026-12-04 evening): the slimmed gemv x ring (M <= 2, addresses set once, the
# steady loop unguarded): kernel grid, layer and decode A/B, SASS and ncu of both forms.
set -u
R=$PWD
export QLINEAR_SOURCE_DIR=$R
source $R/.carry/cuda/device_env.sh
H=$R/.carry/cuda
cd $H
echo "== cuda_device_tests $(date +%T)"
timeout 100 bin/cuda_device_tests --gtest_color=no --gtest_filter='*cuda_int_gemv_sm80' > $OUT/device_tests.log 2>&1
echo "exit $?"; grep -E "^\[  (PASSED|FAILED) |Failure|cuda grid \] cuda.int.gemv" $OUT/device_tests.log | head -8
echo "== layer bench $(date +%T)"
SH=4096x6144,4096x4096,4096x28672,14336x4096,8192x57344,8192x10240,28672x8192
for xr in 1 0 1 0; do
  QLINEAR_CUDA_GEMV_XRING=$xr timeout 120 bin/qlinear bench --device cuda --shape $SH --batch 1,2 \
    --scheme w4a16g128 --act-dtype bf16 --out-dtype bf16 --json --quick 2>>$OUT/bench.err \
    | sed "s|^{|{\"xring\":$xr,|" >> $OUT/layer_ab.jsonl
done
python3 - $OUT/layer_ab.jsonl <<'PY'
import json,sys,collections
rows=[json.loads(l) for l in open(sys.argv[1]) if l.startswith('{')]
t=collections.defaultdict(list)
for r in rows: t[(f"{r['K']}x{r['N']}",r['M'],r['xring'])].append(r['median_s']*1e6)
for k in sorted(set(k[:2] for k in t)):
    print(k, "xring", ["%.1f"%v for v in t[k+(1,)]], "ldg", ["%.1f"%v for v in t[k+(0,)]])
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
echo "== sass $(date +%T)"
CUOBJDUMP="$(command -v cuobjdump || ls /usr/local/cuda/bin/cuobjdump 2>/dev/null | head -1)"
if [[ -n "$CUOBJDUMP" ]]; then
  "$CUOBJDUMP" -sass bin/qlinear 2>/dev/null | awk '/Function : .*int_gemv_ring_kernelILi4ELb1ELb1ELb0ELi2ELi1ELi1ELb[01]E/{p=1} p&&/Function : /&&!/int_gemv_ring_kernelILi4ELb1ELb1ELb0ELi2ELi1ELi1ELb[01]E/{p=0} p' > $OUT/sass_ring_bf16_f16s_sym.txt
  wc -l $OUT/sass_ring_bf16_f16s_sym.txt
fi
echo "== ncu $(date +%T)"
for xr in 1 0; do
  QLINEAR_CUDA_GEMV_XRING=$xr timeout 90 "$NCU" --clock-control none -k regex:int_gemv --launch-skip 6 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section SourceCounters --section InstructionStats \
    -o $OUT/ncu_x$xr bin/qlinear bench --device cuda --shape 4096x28672 --batch 1 --scheme w4a16g128 \
    --out-dtype bf16 --quick --json > $OUT/ncu_x$xr.log 2>&1
  "$NCU" -i $OUT/ncu_x$xr.ncu-rep --page source --csv --print-source sass > $OUT/ncu_x${xr}_sass.csv 2>&1
  "$NCU" -i $OUT/ncu_x$xr.ncu-rep 2>&1 | grep -iE "Duration|Executed Ipc|Issued Warp|Warp Cycles Per Issued|Instructions" | head -6
done
rm -f $OUT/*.ncu-rep
echo "== done $(date +%T)"
cd $OUT && tar czf logs.tgz *.log bench.err && rm -f *.log bench.err
