#!/usr/bin/env python3
"""Paired A/B of two `qlinear bench` binaries on the same layers (docs/design.md, "A/B").

The development VM's read bandwidth swings between ~30 and ~60 GB/s within seconds, so two runs
minutes apart cannot tell 5% apart. This runs the binaries alternately, in ABBA order, one short
`bench --json --quick` per (binary, shape, M) and round, and reports per shape and M the median
of the per-round time ratios B/A (below 1: B is faster) with its spread, next to each binary's
median fraction of the bandwidth its own process probed.

  python3 bench/ab_pair.py OLD/qlinear NEW/qlinear --shape 4096x4096 --shape 4096x14336 \
      --batch 1 --batch 128 --scheme w4a16g128 --rounds 6 --out bench/results/.../ab.jsonl
"""
import argparse
import json
import statistics
import subprocess
import sys


def bench_once(binary, scheme, shape, m, threads):
    cmd = [binary, "bench", "--scheme", scheme, "--shape", shape, "--batch", str(m), "--json",
           "--quick", "--no-blas"]
    if threads:
        cmd += ["--threads", str(threads)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    records = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    if len(records) != 1:
        sys.exit(f"{' '.join(cmd)}: expected one JSON record, got {len(records)}")
    return records[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a", help="binary A (the baseline)")
    ap.add_argument("b", help="binary B (the change)")
    ap.add_argument("--shape", action="append", required=True, help="KxN, repeatable")
    ap.add_argument("--batch", action="append", type=int, required=True, help="M, repeatable")
    ap.add_argument("--scheme", default="w4a16g128")
    ap.add_argument("--rounds", type=int, default=6, help="ABBA rounds (each gives 2 pairs)")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--out", help="append every record here (JSON lines)")
    args = ap.parse_args()

    sink = open(args.out, "a") if args.out else None
    rows = []
    for shape in args.shape:
        for m in args.batch:
            ratios, frac = [], {"A": [], "B": []}
            kernels = {}
            for r in range(args.rounds):
                order = ["A", "B", "B", "A"]
                got = {"A": [], "B": []}
                for side in order:
                    rec = bench_once(args.a if side == "A" else args.b, args.scheme, shape, m,
                                     args.threads)
                    rec.update(side=side, round=r, binary=args.a if side == "A" else args.b)
                    if sink:
                        sink.write(json.dumps(rec) + "\n")
                    got[side].append(rec["median_s"])
                    frac[side].append(rec["ratio_membw"])
                    kernels[side] = rec.get("kernel", "?")
                # ABBA: pair the first A with the first B and the second B with the second A.
                ratios += [got["B"][0] / got["A"][0], got["B"][1] / got["A"][1]]
                print(f"{shape} M={m} round {r + 1}/{args.rounds}: B/A "
                      f"{ratios[-2]:.3f} {ratios[-1]:.3f}", file=sys.stderr)
            q = statistics.quantiles(ratios, n=4) if len(ratios) >= 4 else [min(ratios), 0, max(ratios)]
            rows.append((shape, m, kernels["A"], kernels["B"], statistics.median(ratios), q[0], q[2],
                         statistics.median(frac["A"]), statistics.median(frac["B"]), len(ratios)))
    print("| K x N | M | kernel A | kernel B | time B/A (median) | quartiles | A x membw | B x membw | pairs |")
    print("|---|---:|---|---|---:|---|---:|---:|---:|")
    for s, m, ka, kb, med, lo, hi, fa, fb, n in rows:
        print(f"| {s} | {m} | `{ka}` | `{kb}` | {med:.3f} | {lo:.3f}-{hi:.3f} | {fa:.2f} | {fb:.2f} | {n} |")


if __name__ == "__main__":
    main()
