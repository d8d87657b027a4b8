#!/usr/bin/env bash
# A/B of the CPU decoder's AVX2 forms (attention tile steps, SiLU * mul, RMSNorm rows) against the
# portable loops they replace, interleaved old / new per round so the VM's drifting bandwidth hits
# both alike. OLD: a qlinear built from main before the change (441cde6), NEW: after it.
# Usage: OLD=/tmp/qlinear_old NEW=build-rel/qlinear bash ab_vector_ops.sh > ab_vector_ops.jsonl
set -euo pipefail
OLD=${OLD:?the qlinear binary before the change}
NEW=${NEW:?the qlinear binary after it}
ROUNDS=${ROUNDS:-3}
run() {  # label binary skip prompt gen
  local out
  out=$(QLINEAR_STEP_SKIP=$3 "$2" bench-model --synthetic synth-1b --format w4a16g128 --threads 2 \
    --prompt-len "$4" --gen-len "$5" --json 2>/dev/null)
  python3 -c 'import json,sys; d=json.loads(sys.argv[1]); d.update(binary=sys.argv[2], case=sys.argv[3], load=open("/proc/loadavg").read().split()[:3]); print(json.dumps(d))' "$out" "$1" "$6"
}
for r in $(seq "$ROUNDS"); do
  for b in old new; do
    bin=$OLD; [ "$b" = new ] && bin=$NEW
    run "$b" "$bin" qkv,o,gate_up,down,lm_head 2048 128 attention-only-2048
    run "$b" "$bin" "" 1024 64 whole-1024
    run "$b" "$bin" "" 128 64 whole-128
  done
done
