#!/usr/bin/env bash
cd "$(dirname "$0")/../../.."  # the repository root
Q=./build-rel/qlinear
run_q() { # $1 label, rest flags
  local label=$1; shift
  local out; out=$($Q bench-model --synthetic synth-1b --format w4a16g128 --threads 2 --json "$@" 2>/dev/null | tail -1)
  echo "$label $(uptime | sed 's/.*load average: //') $(echo "$out" | python3 -c 'import json,sys; r=json.loads(sys.stdin.read()); print(round(r["decode_tokens_per_s"],2), round(r["prefill_tokens_per_s"],1), round(r["membw_gbps"],1), round(r["ratio_membw"],3))')"
}
run_l() {
  local out; out=$(TYPES=Q4_K_M bash /work/shared/tools/llamacpp_peer.sh 2>/dev/null | tail -1)
  echo "llama $(uptime | sed 's/.*load average: //') $(echo "$out" | python3 -c 'import json,sys; r=json.loads(sys.stdin.read()); print(round(r["decode_tok_s"],2), round(r["prefill_tok_s"],1))')"
}
for round in 1 2 3; do
  if [ $((round % 2)) = 1 ]; then run_q a16; run_q a8 --int8-activations; run_l; run_q a8 --int8-activations; run_q a16; run_l
  else run_l; run_q a8 --int8-activations; run_q a16; run_l; run_q a16; run_q a8 --int8-activations; fi
done
