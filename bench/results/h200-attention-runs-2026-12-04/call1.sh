#!/usr/bin/env bash
# Device call 1 (2026-12-04 evening): decode attention requesting its settled keys before the
# wait (grouped kernel at batch 1); GPU tests; A/B; ncu of the gemv on the 8B MLP shapes.
set -u
R=$PWD
export QLINEAR_SOURCE_DIR=$R
source $R/.carry/cuda/device_env.sh
H=$R/.carry/cuda
cd $H
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
echo "== model_tests GPU filter $(date +%T)"
timeout 240 bin/model_tests --gtest_color=no --gtest_filter='CudaOpsTest.*:Folders/HfGolden.*cuda*:Folders/DecodeGraph.*:Fixtures/EveryFormatOnCuda.*' > $OUT/model_tests.log 2>&1
echo "exit $?"; grep -E "^\[  (PASSED|FAILED) |Failure|FAILED" $OUT/model_tests.log | head -20
bm() {  # label env... -- args
  local label=$1; shift
  local envs=(); while [[ $1 != -- ]]; do envs+=("$1"); shift; done; shift
  env "${envs[@]}" timeout 90 bin/qlinear bench-model --device cuda "$@" --gen-len 128 --json 2>>$OUT/bench.err | sed "s|^{|{\"label\":\"$label\",|" >> $OUT/ab.jsonl
  echo "$label: $(tail -1 $OUT/ab.jsonl | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print({k:v for k,v in d.items() if "tok" in k})' 2>&1 | cut -c1-200)"
}
M8="--synthetic llama3-8b --format w4a16g128"
echo "== A/B $(date +%T)"
for P in 128 3968; do
  bm new_p$P X=1 -- $M8 --prompt-len $P
  bm perhead_p$P QLINEAR_CUDA_ATTENTION_GROUPED=0 -- $M8 --prompt-len $P
  bm grouped_noprefetch_p$P QLINEAR_CUDA_ATTENTION_GROUPED=1 QLINEAR_CUDA_ATTENTION_PREFETCH=0 -- $M8 --prompt-len $P
done
bm new_p2048 X=1 -- $M8 --prompt-len 2048
bm perhead_p2048 QLINEAR_CUDA_ATTENTION_GROUPED=0 -- $M8 --prompt-len 2048
bm new_p128_again X=1 -- $M8 --prompt-len 128
bm new_p3968_fp8kv X=1 -- $M8 --prompt-len 3968 --kv-dtype fp8
bm perhead_p3968_fp8kv QLINEAR_CUDA_ATTENTION_GROUPED=0 -- $M8 --prompt-len 3968 --kv-dtype fp8
bm new_b16 X=1 -- $M8 --prompt-len 128 --batch 16
bm perhead_b16 QLINEAR_CUDA_ATTENTION_GROUPED=0 -- $M8 --prompt-len 128 --batch 16
bm new_1b_p128 X=1 -- --synthetic llama3.2-1b --format w4a16g128 --prompt-len 128
bm perhead_1b_p128 QLINEAR_CUDA_ATTENTION_GROUPED=0 -- --synthetic llama3.2-1b --format w4a16g128 --prompt-len 128
echo "== ncu gemv $(date +%T)"
for shape in 4096x28672 14336x4096; do
  timeout 90 "$NCU" --clock-control none -k regex:int_gemv --launch-skip 6 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
    --section Occupancy --section LaunchStats --section SourceCounters --section InstructionStats \
    -o $OUT/ncu_$shape bin/qlinear bench --device cuda --shape $shape --batch 1 --scheme w4a16g128 \
    --out-dtype bf16 --quick --json > $OUT/ncu_$shape.log 2>&1
  "$NCU" -i $OUT/ncu_$shape.ncu-rep --print-summary none 2>&1 | grep -vE '^ *-+ *$' | sed 's/  */ /g' > $OUT/ncu_$shape.txt
  "$NCU" -i $OUT/ncu_$shape.ncu-rep --page source --csv --print-source sass > $OUT/ncu_${shape}_sass.csv 2>&1
  grep -iE "Duration|DRAM Through|Achieved Occ|Registers Per|Grid Size|Warp Cycles Per Issued|Issued Warp" $OUT/ncu_$shape.txt | head -10
  ls -la $OUT/ncu_${shape}_sass.csv
done
echo "== done $(date +%T)"
cd $OUT && tar czf logs.tgz model_tests.log bench.err *.log && rm -f model_tests.log bench.err *.log
