#!/usr/bin/env bash
# Diagnostics of the weight-only mma kernel on the device (tuning runs, not part of the grid):
# the K split swept with QLINEAR_CUDA_WO_SPLIT, and Nsight Compute on single launches.
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
OUT="${OUT:-$HERE/out}"
mkdir -p "$OUT"
[[ -f "$HERE/payload.tar.xz" && ! -d "$HERE/bin" ]] && tar xJf "$HERE/payload.tar.xz" -C "$HERE"
export LD_LIBRARY_PATH="$HERE/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
QL="$HERE/bin/qlinear"
NCU="$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)"
for s in 1 2 4 8; do
  echo "=== split $s"
  QLINEAR_CUDA_WO_SPLIT=$s timeout 60 "$QL" bench --device cuda --shape 8192x57344,14336x4096 \
    --batch 1,16 --scheme w4a16g128,w8a16 --out-dtype bf16 --quick --json |
    python3 "$HERE/tools/print_bench.py"
done
SECTIONS=(--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats
          --section Occupancy --section LaunchStats --section SchedulerStats)
for cfg in "8192x57344 1 4" "8192x57344 1 1" "14336x4096 16 8"; do
  read -r shape m split <<<"$cfg"
  echo "=== ncu $shape M=$m split=$split"
  QLINEAR_CUDA_WO_SPLIT=$split timeout 120 "$NCU" --clock-control none -k regex:wo_mma \
    --launch-skip 6 --launch-count 1 "${SECTIONS[@]}" "$QL" bench --device cuda --shape "$shape" \
    --batch "$m" --scheme w4a16g128 --out-dtype bf16 --quick --json 2>&1 |
    grep -vE '^\{|^==PROF==|^ *-+ *$' | sed 's/  */ /g' > "$OUT/ncu_${shape}_${m}_${split}.txt"
  grep -iE "Duration|DRAM Through|Memory Through|Compute \(SM\)|Achieved Occ|Theoretical Occ|Registers|Shared Memory Config|Block Limit|Stall|Warp Cycles Per Issued|Issued Warp|No Eligible|L2 Hit|Cluster" \
    "$OUT/ncu_${shape}_${m}_${split}.txt" | head -40
done
