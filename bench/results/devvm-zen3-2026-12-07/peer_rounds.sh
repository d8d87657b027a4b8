#!/usr/bin/env bash
# Alternates llama.cpp (Q4_K_M, Q4_0) and qlinear (synth-1b W4A16 g128: default int16 activations,
# then --int8-activations) for ROUNDS rounds at 2 threads, one JSON line each, so every qlinear
# number has a llama.cpp number measured right before it (this VM's bandwidth swings 2x).
# Usage (repository root): ROUNDS=4 QLINEAR=build-rel/qlinear bash bench/results/devvm-zen3-2026-12-07/peer_rounds.sh
set -euo pipefail
ROUNDS="${ROUNDS:-4}"
QLINEAR="${QLINEAR:-build-rel/qlinear}"
for round in $(seq "$ROUNDS"); do
  TYPES="Q4_K_M Q4_0" THREADS=2 bash /work/shared/tools/llamacpp_peer.sh 2>/dev/null | grep '^{' |
    sed "s/^{/{\"round\": $round, \"peer\": \"llama.cpp\", /"
  for acts in a16 a8; do
    flag=()
    [[ "$acts" == a8 ]] && flag=(--int8-activations)
    "$QLINEAR" bench-model --synthetic synth-1b --format w4a16g128 --threads 2 --prompt-len 128 \
      --gen-len 64 "${flag[@]}" --json 2>/dev/null |
      sed "s/^{/{\"round\": $round, \"peer\": \"qlinear-$acts\", /"
  done
done
