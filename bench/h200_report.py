"""Tables and plots of `qlinear bench --device cuda --json` records next to gpu_peers.py's times.

    python3 bench/h200_report.py bench.jsonl gpu_peers.json OUTDIR

Writes OUTDIR/tables.md (one table per scheme: qlinear's time, kernel, time over the bandwidth
floor, bf16 cuBLAS, the scheme's PyTorch peers; then the forced-kernel runs side by side) and
OUTDIR/<scheme>.png: speed-up over bf16 cuBLAS and time / floor against M, qlinear and peers, one
line per layer shape (as Marlin's README plots it). Records of runs with --kernel carry
"requested_kernel" and appear only in the comparison table.
"""
import collections
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PEERS = {  # scheme -> [(peer key, label)]
    "w4a16g128": [("w4a16_tinygemm_s", "PyTorch int4 tinygemm")],
    "w8a16": [],
    "fp8-w8a8-token": [("fp8_row_s", "_scaled_mm row-wise")],
    "fp8-w8a8-tensor": [("fp8_tensor_s", "_scaled_mm per-tensor")],
    "fp8-w8a8-static": [("fp8_tensor_s", "_scaled_mm per-tensor")],
    "fp8-block-w8a8": [],
    "dense-bf16": [],
}


def main():
    records = []
    with open(sys.argv[1]) as f:
        for line in f:
            if line.startswith("{"):
                records.append(json.loads(line))
    peers = {}
    if len(sys.argv) > 2 and os.path.exists(sys.argv[2]):
        with open(sys.argv[2]) as f:
            pj = json.load(f)
        for r in pj.get("rows", []):
            peers[(r["K"], r["N"], r["M"])] = r
    out = sys.argv[3] if len(sys.argv) > 3 else "."
    os.makedirs(out, exist_ok=True)

    auto = [r for r in records if not r.get("requested_kernel")]
    forced = [r for r in records if r.get("requested_kernel")]
    lines = []
    by_scheme = collections.OrderedDict()
    for r in auto:
        by_scheme.setdefault(r["scheme"], []).append(r)
    for scheme, rs in by_scheme.items():
        peer_cols = PEERS.get(scheme, [])
        lines.append(f"\n### {scheme}\n")
        head = "| K x N | M | kernel | qlinear us | x floor | bf16 cuBLAS us | x bf16 |"
        sep = "|---|---:|---|---:|---:|---:|---:|"
        for _, label in peer_cols:
            head += f" {label} us | x peer |"
            sep += "---:|---:|"
        lines += [head, sep]
        for r in sorted(rs, key=lambda r: (-r["K"] * r["N"], r["M"])):
            p = peers.get((r["K"], r["N"], r["M"]), {})
            us = r["median_s"] * 1e6
            bf = p.get("bf16_s", 0) * 1e6
            row = (f"| {r['K']}x{r['N']} | {r['M']} | {r['kernel']} | {us:.1f} | "
                   f"{r['ratio_floor']:.2f} | {bf:.1f} | {bf / us:.2f} |" if bf else
                   f"| {r['K']}x{r['N']} | {r['M']} | {r['kernel']} | {us:.1f} | "
                   f"{r['ratio_floor']:.2f} | - | - |")
            for key, _ in peer_cols:
                v = p.get(key, 0) * 1e6
                row += f" {v:.1f} | {v / us:.2f} |" if v else " - | - |"
            lines.append(row)
        plot(scheme, rs, peers, peer_cols, out)
    if forced:
        lines.append("\n### forced kernels (--kernel), same shapes and batches\n")
        lines.append("| scheme | K x N | M | kernel | us | x floor |")
        lines.append("|---|---|---:|---|---:|---:|")
        for r in sorted(forced, key=lambda r: (r["scheme"], -r["K"] * r["N"], r["M"], r["kernel"])):
            lines.append(f"| {r['scheme']} | {r['K']}x{r['N']} | {r['M']} | {r['kernel']} | "
                         f"{r['median_s'] * 1e6:.1f} | {r['ratio_floor']:.2f} |")
    with open(os.path.join(out, "tables.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def plot(scheme, rs, peers, peer_cols, out):
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.5))
    shapes = sorted({(r["K"], r["N"]) for r in rs}, key=lambda s: -s[0] * s[1])
    for i, (K, N) in enumerate(shapes):
        pts = sorted((r for r in rs if (r["K"], r["N"]) == (K, N)), key=lambda r: r["M"])
        ms = [r["M"] for r in pts]
        color = f"C{i}"
        sp = [peers.get((K, N, r["M"]), {}).get("bf16_s", 0) / r["median_s"] for r in pts]
        a.plot(ms, sp, "o-", color=color, label=f"qlinear {K}x{N}")
        b.plot(ms, [r["ratio_floor"] for r in pts], "o-", color=color, label=f"qlinear {K}x{N}")
        for j, (key, label) in enumerate(peer_cols):
            pv = [(r["M"], peers.get((K, N, r["M"]), {})) for r in pts]
            xs = [m for m, p in pv if p.get(key) and p.get("bf16_s")]
            ys = [p["bf16_s"] / p[key] for m, p in pv if p.get(key) and p.get("bf16_s")]
            if xs:
                a.plot(xs, ys, "x--", color=color, alpha=0.6, label=f"{label} {K}x{N}")
    a.axhline(1.0, color="gray", lw=0.8)
    b.axhline(1.0, color="gray", lw=0.8)
    for ax in (a, b):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("M (rows of x)")
        ax.grid(alpha=0.3)
    a.set_ylabel("speed-up over bf16 cuBLAS")
    b.set_ylabel("time / bandwidth floor")
    b.set_yscale("log")
    a.set_title(f"{scheme}: speed-up over torch.matmul bf16")
    b.set_title(f"{scheme}: time over the weight+activation floor")
    a.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, f"{scheme}.png"), dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
