"""One line per `qlinear bench --json` record on stdin (tests/device/run.sh's progress view)."""
import json
import sys

for line in sys.stdin:
    try:
        r = json.loads(line)
    except ValueError:
        print(line.rstrip(), flush=True)
        continue
    peer = ""
    if r.get("peer_bf16_s"):
        peer = f"bf16 {r['peer_bf16_s'] * 1e6:8.1f} us x{r['speedup_bf16']:5.2f}"
    print(f"{r['scheme']:16} {r['K']:>6}x{r['N']:<6} M={r['M']:<5} {r['kernel']:26} "
          f"{r['median_s'] * 1e6:9.1f} us {r['ratio_floor']:6.2f} x floor  {peer}", flush=True)
