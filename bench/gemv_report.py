"""The decode table of bench/results/h200.md's gemv section: `qlinear bench --json` records of the
registry's choice (FIRST: the gemv kernel up to M = 8) and of the mma kernel (SECOND, with
QLINEAR_DISABLED_KERNELS=cuda.int.gemv.sm80) next to gpu_peers.py's bf16 cuBLAS and tinygemm
times (tests/device/gemv.sh writes all three).

    python3 bench/gemv_report.py bench_gemv.jsonl bench_mma.jsonl gpu_peers.json
"""
import json
import sys


def load(path):
    rows = {}
    with open(path) as f:
        for line in f:
            if line.startswith("{"):
                r = json.loads(line)
                rows[(r["scheme"], r["K"], r["N"], r["M"])] = r
    return rows


def main():
    gemv, mma = load(sys.argv[1]), load(sys.argv[2])
    peers = {}
    if len(sys.argv) > 3:
        for r in json.load(open(sys.argv[3]))["rows"]:
            peers[(r["K"], r["N"], r["M"])] = r
    for scheme in ("w4a16g128", "w8a16"):
        keys = [k for k in gemv if k[0] == scheme]
        if not keys:
            continue
        print(f"\n### {scheme}\n")
        tiny = scheme == "w4a16g128"
        print("| K x N | M | kernel | floor us | qlinear us | x floor | mma us | x floor | / mma"
              " | bf16 cuBLAS us | x bf16 |" + (" tinygemm us | x tinygemm |" if tiny else ""))
        print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if tiny else ""))
        order = []
        for k in keys:
            if (k[1], k[2]) not in order:
                order.append((k[1], k[2]))
        for K, N in order:
            for M in sorted(m for (s, k, n, m) in keys if (k, n) == (K, N)):
                g = gemv[(scheme, K, N, M)]
                m = mma.get((scheme, K, N, M))
                p = peers.get((K, N, M), {})
                us = g["median_s"] * 1e6
                kern = g["kernel"].replace("cuda.int.", "").replace(".sm80", "")
                line = (f"| {K}x{N} | {M} | {kern} | {g['floor_s'] * 1e6:.1f} | {us:.1f} |"
                        f" {g['ratio_floor']:.2f} |")
                if m:
                    line += f" {m['median_s'] * 1e6:.1f} | {m['ratio_floor']:.2f} | {g['median_s'] / m['median_s']:.2f} |"
                else:
                    line += " | | |"
                bf = p.get("bf16_s")
                line += f" {bf * 1e6:.1f} | {bf / g['median_s']:.2f} |" if bf else " | |"
                if tiny:
                    tg = p.get("w4a16_tinygemm_s")
                    line += f" {tg * 1e6:.1f} | {tg / g['median_s']:.2f} |" if tg else " | |"
                print(line)


if __name__ == "__main__":
    main()
