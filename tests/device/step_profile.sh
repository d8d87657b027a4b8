#!/usr/bin/env bash
# Where one decode step's time goes on the GPU (issue 14): Nsight Compute times every kernel of an
# eager (`--eager`) bench-model run, and the kernels of the last decode step (from the last
# embedding lookup to the end) are summed by name. The same model's graph-replayed decode is timed
# next to it, so step time minus the kernels' sum is what launches and the gaps between kernels
# cost. Binaries and tools as tests/device/stage.sh ships them.
#
#   MODELS="llama3-8b:w4a16g128 llama3.2-1b:w4a16g128" PROMPT=128 bash step_profile.sh
#
# ncu runs each kernel alone (serialised, caches not flushed; clocks left free unless
# NCU_CLOCK=base locks them), so a kernel's time here is its own, without its neighbours' overlap.
# Left free, the clocks fall between the serialised launches, which inflates short kernels.
set -u
# shellcheck source=device_env.sh
source "$(dirname "$0")/device_env.sh"
PROMPT="${PROMPT:-128}"
for entry in ${MODELS:-llama3-8b:w4a16g128}; do
  model="${entry%%:*}"
  format="${entry#*:}"
  tag="${model}_${format}_p${PROMPT}${TAG:-}"
  echo "=== $(date +%T) $model $format prompt $PROMPT: graph-replayed decode"
  timeout 120 "$QL" bench-model --device cuda --synthetic "$model" --format "$format" \
    --prompt-len "$PROMPT" --gen-len 64 --json ${EXTRA:-} 2>/dev/null | tee "$OUT/step_${tag}_graph.json"
  echo "=== $(date +%T) $model $format: ncu of an eager run"
  timeout 300 "$NCU" --clock-control "${NCU_CLOCK:-none}" --cache-control none --metrics gpu__time_duration.sum \
    --csv "$QL" bench-model --device cuda --synthetic "$model" --format "$format" \
    --prompt-len "$PROMPT" --gen-len 3 --eager ${EXTRA:-} > "$OUT/step_${tag}_ncu.csv" 2>"$OUT/step_${tag}_ncu.err"
  python3 - "$OUT/step_${tag}_ncu.csv" "$OUT/step_${tag}_graph.json" <<'EOF' | tee "$OUT/step_${tag}.txt"
import csv, json, sys, collections
rows = []
with open(sys.argv[1]) as f:
    lines = [l for l in f if l.startswith('"')]
for r in csv.DictReader(lines):
    if r.get("Metric Name") != "gpu__time_duration.sum":
        continue
    v = float(r["Metric Value"].replace(",", ""))
    unit = r["Metric Unit"]
    us = v / 1000 if unit in ("ns", "nsecond") else v * 1000 if unit in ("ms", "msecond") else v
    rows.append((r["Kernel Name"], r["Grid Size"], r["Block Size"], us))
starts = [i for i, r in enumerate(rows) if r[0].startswith("embed_kernel") or "embed_kernel" in r[0]]
if not starts:
    sys.exit("no embed_kernel in the ncu output")
step = rows[starts[-1]:]
total = sum(r[3] for r in step)
by = collections.OrderedDict()
for name, grid, block, us in step:
    key = (name.split("(")[0][:60], grid, block)
    n, t = by.get(key, (0, 0.0))
    by[key] = (n + 1, t + us)
print(f"kernels in the last decode step: {len(step)}, their sum {total:.1f} us")
try:
    g = json.load(open(sys.argv[2]))
    tps = g["decode_tokens_per_s"]
    print(f"graph-replayed step: {1e6 / tps:.1f} us ({tps:.1f} tok/s); "
          f"gaps and launches: {1e6 / tps - total:.1f} us ({(1e6 / tps - total) / len(step):.2f} us per kernel)")
except Exception as e:
    print("no graph timing:", e)
print(f"{'kernel':60} {'grid':>14} {'block':>10} {'calls':>5} {'us':>9} {'us/call':>8} {'share':>6}")
for (name, grid, block), (n, t) in sorted(by.items(), key=lambda kv: -kv[1][1]):
    print(f"{name:60} {grid:>14} {block:>10} {n:5d} {t:9.1f} {t / n:8.2f} {t / total:6.1%}")
EOF
done
