"""Per round of peer_rounds.sh output: qlinear's decode and prefill over llama.cpp's of the same
round. Usage: python3 summarize_peers.py peer_rounds.jsonl"""
import json
import sys

rows = [json.loads(line) for line in open(sys.argv[1])]
for rnd in sorted({r["round"] for r in rows}):
    here = [r for r in rows if r["round"] == rnd]
    km = next(r for r in here if r.get("type") == "Q4_K_M")
    q0 = next(r for r in here if r.get("type") == "Q4_0")
    for r in here:
        if not r["peer"].startswith("qlinear"):
            continue
        dec, pre = r["decode_tokens_per_s"], r["prefill_tokens_per_s"]
        print(f"round {rnd} {r['peer']:12s} decode {dec:5.1f} = {dec / km['decode_tok_s']:.2f}x "
              f"Q4_K_M ({km['decode_tok_s']:.1f}), {dec / q0['decode_tok_s']:.2f}x Q4_0 "
              f"({q0['decode_tok_s']:.1f}), {r['ratio_membw']:.2f} of {r['membw_gbps']:.1f} GB/s"
              f" | prefill {pre:5.1f} = {pre / km['prefill_tok_s']:.2f}x Q4_K_M "
              f"({km['prefill_tok_s']:.1f}), {pre / q0['prefill_tok_s']:.2f}x Q4_0 "
              f"({q0['prefill_tok_s']:.1f})")
