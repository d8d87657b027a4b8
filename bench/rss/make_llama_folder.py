#!/usr/bin/env python3
"""Writes a Llama-shaped Hugging Face checkpoint folder of random bf16 weights (config.json,
model.safetensors, no tokenizer), with the Python standard library only: the input of
bench/rss/load_rss.sh, which measures the peak resident memory of loading it.

Usage: make_llama_folder.py OUT_DIR [--hidden 2048] [--intermediate 8192] [--layers 16]
       [--heads 32] [--kv-heads 8] [--vocab 32000]

The values repeat a 1 MiB block of N(0, 0.02) bf16 numbers (what is measured is memory, not
arithmetic); the tensor names, shapes and file layout are those transformers writes.
"""
import argparse
import json
import math
import os
import random
import struct


def bf16_block(n_values, seed=7):
    rng = random.Random(seed)
    out = bytearray()
    for _ in range(n_values):
        bits = struct.unpack("<I", struct.pack("<f", rng.gauss(0.0, 0.02)))[0]
        out += struct.pack("<H", (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16)
    return bytes(out)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--hidden", type=int, default=2048)
    p.add_argument("--intermediate", type=int, default=8192)
    p.add_argument("--layers", type=int, default=16)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--vocab", type=int, default=32000)
    a = p.parse_args()
    d = a.hidden // a.heads
    tensors = [("model.embed_tokens.weight", [a.vocab, a.hidden])]
    for i in range(a.layers):
        pre = f"model.layers.{i}."
        tensors += [
            (pre + "input_layernorm.weight", [a.hidden]),
            (pre + "self_attn.q_proj.weight", [a.heads * d, a.hidden]),
            (pre + "self_attn.k_proj.weight", [a.kv_heads * d, a.hidden]),
            (pre + "self_attn.v_proj.weight", [a.kv_heads * d, a.hidden]),
            (pre + "self_attn.o_proj.weight", [a.hidden, a.heads * d]),
            (pre + "post_attention_layernorm.weight", [a.hidden]),
            (pre + "mlp.gate_proj.weight", [a.intermediate, a.hidden]),
            (pre + "mlp.up_proj.weight", [a.intermediate, a.hidden]),
            (pre + "mlp.down_proj.weight", [a.hidden, a.intermediate]),
        ]
    tensors += [("model.norm.weight", [a.hidden]), ("lm_head.weight", [a.vocab, a.hidden])]
    header = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, shape in tensors:
        size = 2 * math.prod(shape)
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    os.makedirs(a.out, exist_ok=True)
    block = bf16_block(1 << 19)
    one = struct.pack("<H", 0x3F80)  # 1.0: the norms' weights
    with open(os.path.join(a.out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for name, shape in tensors:
            size = 2 * math.prod(shape)
            if name.endswith("norm.weight"):
                f.write(one * (size // 2))
                continue
            while size > 0:
                chunk = block[: min(size, len(block))]
                f.write(chunk)
                size -= len(chunk)
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": a.hidden,
        "intermediate_size": a.intermediate,
        "num_hidden_layers": a.layers,
        "num_attention_heads": a.heads,
        "num_key_value_heads": a.kv_heads,
        "head_dim": d,
        "vocab_size": a.vocab,
        "max_position_embeddings": 4096,
        "rms_norm_eps": 1e-5,
        "rope_theta": 500000.0,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "bos_token_id": 1,
        "eos_token_id": 2,
    }
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    print(f"{a.out}: {offset / 2**20:.0f} MiB of bf16 weights in {len(tensors)} tensors")


if __name__ == "__main__":
    main()
