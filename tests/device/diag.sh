#!/usr/bin/env bash
# Diagnostics of the weight-only mma kernel on the device (tuning runs, not part of the grid):
# the K split swept with QLINEAR_CUDA_WO_SPLIT (SPLITS, default 1 2 4 8; 0 = the heuristic) over
# SHAPES x BATCH, and Nsight Compute on single launches (NCU: "shape M split" triples, ';'-separated).
set -u
# shellcheck source=device_env.sh
source "$(dirname "$0")/device_env.sh"
SHAPES="${SHAPES:-8192x57344,4096x28672,14336x4096,4096x4096}"
BATCH="${BATCH:-1,16}"
SCHEMES="${SCHEMES:-w4a16g128,w8a16}"
for s in ${SPLITS:-0 1 2 4 8}; do
  echo "=== split $s"
  QLINEAR_CUDA_WO_SPLIT=$s timeout 90 "$QL" bench --device cuda --shape "$SHAPES" \
    --batch "$BATCH" --scheme "$SCHEMES" --out-dtype bf16 --quick --json |
    tee -a "$OUT/splits.jsonl" | python3 "$HERE/tools/print_bench.py"
done
SECTIONS=(--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats
          --section Occupancy --section LaunchStats --section SchedulerStats)
IFS=";" read -r -a CFGS <<<"${NCU_CFGS-14336x4096 1 0}"
for cfg in "${CFGS[@]}"; do
  read -r shape m split <<<"$cfg"
  echo "=== ncu $shape M=$m split=$split"
  QLINEAR_CUDA_WO_SPLIT=$split timeout 120 "$NCU" --clock-control none -k regex:wo_mma \
    --launch-skip 6 --launch-count 1 "${SECTIONS[@]}" --metrics \
    smsp__average_warp_latency_issue_stalled_long_scoreboard,smsp__average_warp_latency_issue_stalled_barrier,smsp__average_warp_latency_issue_stalled_wait,smsp__average_warp_latency_issue_stalled_short_scoreboard,smsp__average_warp_latency_issue_stalled_math_pipe_throttle \
    "$QL" bench --device cuda --shape "$shape" --batch "$m" --scheme w4a16g128 --out-dtype bf16 \
    --quick --json 2>&1 | grep -vE '^\{|^==PROF==|^ *-+ *$' | sed 's/  */ /g' \
    > "$OUT/ncu_${shape}_${m}_${split}.txt"
  grep -iE "Duration|DRAM Through|Compute \(SM\)|Achieved Occ|Theoretical Occ|Registers Per|Block Limit|Warp Cycles Per Issued|Eligible Warps|Active Warps|No Eligible|Cluster Size|Grid Size|stalled|Dynamic Shared" \
    "$OUT/ncu_${shape}_${m}_${split}.txt" | head -40
done
