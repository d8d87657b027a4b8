#!/usr/bin/env python3
"""Prints the layer A/B of call2/bench.jsonl: per (threads, scheme, shape, M) the AMX kernel's
median against the avx512 kernel's. The records carry two "label" keys: the first is the run
(amx_tN / avx512_tN, prepended by call2.sh), the bench's own empty one follows it."""
import json
import sys

path = sys.argv[1] if len(sys.argv) > 1 else "call2/bench.jsonl"
runs = {}
for line in open(path):
    record = {}
    for key, value in json.loads(line, object_pairs_hook=lambda pairs: pairs):
        record.setdefault(key, value)
    runs[(record["label"], record["scheme"], record["K"], record["N"], record["M"])] = record
print("T scheme KxN M amx_us gflops avx512_engine avx512_us speedup x_sgemm")
for (label, scheme, K, N, M), amx in runs.items():
    if not label.startswith("amx_t"):
        continue
    threads = label[len("amx_t"):]
    other = runs[(f"avx512_t{threads}", scheme, K, N, M)]
    print(threads, scheme, f"{K}x{N}", M, round(amx["median_s"] * 1e6), round(amx["gflops"]),
          other["engine"], round(other["median_s"] * 1e6),
          round(other["median_s"] / amx["median_s"], 2), round(amx.get("ratio_blas", 0), 1))
