#!/usr/bin/env bash
# Session 2026-12-07 (fifth), call 3: where the 8B W4A16 decode step goes inside the graph
# (Nsight Systems with graph nodes traced, if the image has it) and the fixed cost of a step.
set -u
source "$(dirname "$0")/cuda/device_env.sh"
cd "$HERE"
source "$HERE/bench_ab.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,memory.total --format=csv,noheader
M8="--synthetic llama3-8b --format w4a16g128"
BM_TIMEOUT=45
NSYS="$(command -v nsys || ls /opt/nvidia/nsight-systems/*/bin/nsys /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems*/bin/nsys 2>/dev/null | head -1)"
echo "nsys: ${NSYS:-none}"
if [[ -n "$NSYS" ]]; then
  echo "== nsys $(date +%T)"
  timeout 150 "$NSYS" profile -o "$OUT/step" --force-overwrite true --cuda-graph-trace=node -t cuda \
    bin/qlinear bench-model --device cuda $M8 --prompt-len 128 --gen-len 24 --json > "$OUT/nsys_run.log" 2>&1
  echo "nsys profile: exit $?"; tail -2 "$OUT/nsys_run.log"
  timeout 90 "$NSYS" stats --report cuda_gpu_trace --format csv --output "$OUT/trace" "$OUT/step.nsys-rep" > /dev/null 2>&1
  echo "nsys stats: exit $?"; ls -la "$OUT" | head
  rm -f "$OUT/step.sqlite"
  xz -9 "$OUT"/trace*.csv 2>/dev/null
fi
echo "== one upload and one wait per token (new) against two uploads and a separate wait (old) $(date +%T)"
xz -dkf "$HERE/qlinear_old.xz"; chmod +x "$HERE/qlinear_old"
QNEW="$QL"
for r in 1 2; do
  QL="$HERE/qlinear_old"; bm 8b_old X=0 -- $M8 --prompt-len 128 --gen-len 128
  QL="$QNEW"; bm 8b_new X=0 -- $M8 --prompt-len 128 --gen-len 128
  QL="$HERE/qlinear_old"; bm 1b_old X=0 -- --synthetic llama3.2-1b --format w4a16g128 --prompt-len 128 --gen-len 256
  QL="$QNEW"; bm 1b_new X=0 -- --synthetic llama3.2-1b --format w4a16g128 --prompt-len 128 --gen-len 256
done
QL="$QNEW"
echo "== fixed costs $(date +%T)"
bm 8b_skip_all QLINEAR_STEP_SKIP=norm,qkv,rope_kv,attention,o,gate_up,silu,down,lm_head -- $M8 --prompt-len 128 --gen-len 128
bm 8b_skip_rope_kv QLINEAR_STEP_SKIP=rope_kv -- $M8 --prompt-len 128 --gen-len 128
bm 8b_skip_attention_rope_kv QLINEAR_STEP_SKIP=rope_kv,attention -- $M8 --prompt-len 128 --gen-len 128
echo "== attention split at 128-256 positions $(date +%T)"
for v in QLINEAR_CUDA_ATTENTION_SPLITS=1 QLINEAR_CUDA_ATTENTION_SPLITS=4 QLINEAR_CUDA_ATTENTION_MIN_PART=32 QLINEAR_CUDA_ATTENTION_MIN_PART=64; do
  bm "8b_$v" "$v" -- $M8 --prompt-len 128 --gen-len 128
done
echo "== copy bandwidth and the o_proj-shaped layer alone $(date +%T)"
timeout 60 bin/qlinear bench --device cuda --scheme w4a16g128 --shape 4096x4096 4096x6144 --batch 1 2>&1 | grep -E "bandwidth|w4a16" | head -6
echo "== done $(date +%T)"
