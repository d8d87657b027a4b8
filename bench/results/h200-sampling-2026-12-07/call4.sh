#!/usr/bin/env bash
# Session 2026-12-07 (third), call 4: why one pass of the sample kernel over 151936 values costs
# ~90 us (the greedy-with-penalty launch, and the top-k 40 one): Nsight Compute's sections.
set -u
source "$(dirname "$0")/cuda/device_env.sh"
cd "$HERE"
nvidia-smi --query-gpu=name --format=csv,noheader
for skip in 111 96; do
  timeout 150 "$NCU" --kernel-name regex:sample_kernel --launch-skip $skip --launch-count 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section InstructionStats \
    --section WarpStateStats --section MemoryWorkloadAnalysis bin/model_tests --gtest_color=no \
    --gtest_filter='CudaOpsTest.SampleIsSampleToken' > "$OUT/ncu_sections_$skip.txt" 2>&1
  echo "launch $skip: exit $?"
  grep -E "Duration|SM Frequency|Compute \(SM\) Throughput|Memory Throughput|Executed Ipc A|Issue Slots Busy|Executed Instructions  |Stall|Warp Cycles Per Issued|L1/TEX Hit|L2 Hit" "$OUT/ncu_sections_$skip.txt" | head -30
done
