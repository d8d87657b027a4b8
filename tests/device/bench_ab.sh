# Sourced by the device call scripts (bench/results/*/callN.sh) after device_env.sh: bm, one
# bench-model run of an A/B series. `bm LABEL [VAR=VALUE ...] -- ARGS...` runs
# `qlinear bench-model --device cuda ARGS --json` with those variables set, appends its JSON line
# to $OUT/ab.jsonl with "label" first, and prints the label, decode and prefill tokens/s and where
# sampled tokens were picked. A run that fails leaves its stderr in $OUT/bench.err.
bm() {
  local label=$1
  shift
  local envs=()
  while [[ $# -gt 0 && $1 != -- ]]; do
    envs+=("$1")
    shift
  done
  shift
  env "${envs[@]}" timeout "${BM_TIMEOUT:-90}" "$QL" bench-model --device cuda "$@" --json \
    2>> "$OUT/bench.err" | sed "s|^{|{\"label\":\"$label\",|" >> "$OUT/ab.jsonl"
  tail -1 "$OUT/ab.jsonl" | python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
print(d["label"], "decode", round(d["decode_tokens_per_s"], 1), "prefill",
      round(d["prefill_tokens_per_s"]), d.get("sampled_where", ""))' 2>&1
}
