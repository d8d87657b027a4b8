#!/usr/bin/env python3
"""Loads a folder `qlinear quantize --format fp8-block` wrote with transformers (FineGrainedFP8Config,
dequantize=True, float64) and compares its logits and greedy ids with qlinear's own for the default
model's golden prompt. Run on the GPU machine:

    qlinear quantize --model models/default --out q --format fp8-block
    qlinear generate --model q --prompt-ids 296,387,388,321,690,12 --max-tokens 8 --json --logits-out l.safetensors
    python3 tools/check_fp8_block_in_transformers.py q l.safetensors
"""
import json
import sys

import torch
import transformers
from safetensors.torch import load_file

d = sys.argv[1]
ids = [296, 387, 388, 321, 690, 12]
q = load_file(sys.argv[2])["logits"].double()[:len(ids)]
def rel(a, b): return float(((a - b).norm() / b.norm()))
out = {}
deq = transformers.AutoModelForCausalLM.from_pretrained(
    d, dtype=torch.float64, quantization_config=transformers.FineGrainedFP8Config(dequantize=True))
print("loaded as", type(deq).__name__, flush=True)
with torch.no_grad():
    x = torch.tensor([ids])
    ld = deq(x).logits[0].double()
    out["transformers_greedy_dequantized"] = deq.generate(x, max_new_tokens=8, do_sample=False)[0, len(ids):].tolist()
out["dequantized_f64_vs_qlinear"] = rel(q, ld)
print(json.dumps(out))
