#!/usr/bin/env bash
# Device call 7 (2026-12-04 evening): per-kernel times of one 8B decode step (Nsight Compute,
# eager run, tests/device/step_profile.sh) with the kept attention, and with the form before.
set -u
R=$PWD
H=$R/.carry/cuda
cd $H
MODELS="llama3-8b:w4a16g128" PROMPT=128 timeout 250 bash step_profile.sh 2>&1 | tail -28
QLINEAR_CUDA_ATTENTION_SHORT_PART=0 QLINEAR_CUDA_ATTENTION_PREFETCH=0 TAG=_before MODELS="llama3-8b:w4a16g128" PROMPT=128 timeout 250 bash step_profile.sh 2>&1 | grep -E "attention|kernels in|graph-replayed"
ls $OUT
