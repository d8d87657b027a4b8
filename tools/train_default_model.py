#!/usr/bin/env python3
"""Trains qlinear's default model: a small Llama on the King James Bible, with its own tokenizer.

The corpus is the text of Debian's bible-kjv-text package (the 1611 translation, public domain;
the package's copyright file says so), dumped by its `bible` program:

    apt-get install bible-kjv
    bible -f "Gen1:1-Rev22:21" > kjv.txt

Run on a machine with a GPU, PyTorch, transformers and tokenizers (the project's GPU machine):

    python3 tools/train_default_model.py --corpus kjv.txt --out models/default

It writes a Hugging Face folder (config.json, generation_config.json, model.safetensors in bf16,
tokenizer.json, tokenizer_config.json), heldout.txt (every 20th chapter, never trained on),
calib.txt (64 KiB of training chapters for quantizer calibration), and
golden.json / golden.safetensors: transformers' own greedy continuation and float64 logits of a
fixed prompt, which tests/e2e compares qlinear against. Every random choice is seeded.
"""
import argparse
import json
import math
import os
import re
import time

import torch
from safetensors.torch import save_file
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM

EOS = "<|endoftext|>"
PROMPT = "And God said unto Moses,"


def chapters(path):
    """[(book+chapter, text)] in order; each verse a line, the reference stripped."""
    out = []
    key = None
    lines = []
    ref = re.compile(r"^(\d?[A-Za-z]+)(\d+):(\d+) (.*)$")
    with open(path, encoding="utf-8") as f:
        for raw in f:
            m = ref.match(raw.rstrip("\n"))
            if not m:
                continue
            k = m.group(1) + m.group(2)
            if k != key and lines:
                out.append((key, "\n".join(lines)))
                lines = []
            key = k
            lines.append(m.group(4))
    if lines:
        out.append((key, "\n".join(lines)))
    return out


def train_tokenizer(texts, vocab):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=[EOS],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    return tok


def heldout_perplexity(ref, ids, dev, ctx=256, stride=128):
    """Hugging Face's sliding-window recipe ("Perplexity of fixed-length models")."""
    nll, count, prev = 0.0, 0, 0
    for begin in range(0, len(ids), stride):
        end = min(begin + ctx, len(ids))
        target = end - prev
        window = torch.tensor([ids[begin:end]], device=dev)
        labels = window.clone()
        labels[:, :-target] = -100
        out = ref(window, labels=labels)
        n = int((labels[:, 1:] != -100).sum())
        nll += out.loss.item() * n
        count += n
        prev = end
        if end == len(ids):
            break
    return math.exp(nll / count)


def write_goldens(out_dir, dev, kept_step):
    """Goldens from the saved bf16 weights, computed in float64 (as tests/data/hf) on the GPU."""
    tok = Tokenizer.from_file(os.path.join(out_dir, "tokenizer.json"))
    eos_id = tok.token_to_id(EOS)
    ref = LlamaForCausalLM.from_pretrained(out_dir, dtype=torch.float64).to(dev).eval()
    prompt = tok.encode(PROMPT).ids
    with open(os.path.join(out_dir, "heldout.txt"), encoding="utf-8") as f:
        held_text = f.read()[:-1]  # the chapters joined by blank lines, without the final newline
    with torch.no_grad():
        inp = torch.tensor([prompt], device=dev)
        logits = ref(inp).logits[0].contiguous().cpu()
        greedy = ref.generate(inp, max_new_tokens=48, do_sample=False,
                              pad_token_id=eos_id)[0, len(prompt):].tolist()
        # Held-out perplexity of the float model: the first 64 KiB (and 8 KiB, for quick tests)
        # of heldout.txt in windows of 256 tokens, stride 128.
        ppl = {kib: heldout_perplexity(ref, tok.encode(held_text[:kib * 1024]).ids, dev)
               for kib in (64, 8)}
    save_file({"logits": logits}, os.path.join(out_dir, "golden.safetensors"))
    with open(os.path.join(out_dir, "golden.json"), "w") as f:
        json.dump({"prompt": PROMPT, "prompt_ids": prompt, "greedy_ids": greedy,
                   "greedy_text": tok.decode(greedy), "kept_step": kept_step,
                   "heldout_ppl_64k": ppl[64], "heldout_ppl_8k": ppl[8],
                   "transformers": __import__("transformers").__version__,
                   "torch": torch.__version__}, f, indent=1)
    print("greedy:", PROMPT + tok.decode(greedy))
    print(f"held-out perplexity (ctx 256 stride 128): 64 KiB {ppl[64]:.2f}, 8 KiB {ppl[8]:.2f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus")
    ap.add_argument("--out", required=True)
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=96)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--goldens-only", action="store_true",
                    help="recompute the goldens of the model already in --out (no training)")
    args = ap.parse_args()
    if args.goldens_only:
        with open(os.path.join(args.out, "golden.json")) as f:
            kept = json.load(f).get("kept_step")
        write_goldens(args.out, torch.device("cuda"), kept)
        return
    torch.manual_seed(0)
    os.makedirs(args.out, exist_ok=True)

    chs = chapters(args.corpus)
    train = [t for i, (_, t) in enumerate(chs) if i % 20 != 19]
    held = [t for i, (_, t) in enumerate(chs) if i % 20 == 19]
    with open(os.path.join(args.out, "heldout.txt"), "w", encoding="utf-8") as f:
        f.write("\n\n".join(held) + "\n")
    # Calibration text for `qlinear quantize --calib`: every 16th training chapter (from all over
    # the book) up to 64 KiB; training text, so the held-out text stays unseen by quantizers too.
    calib, size = [], 0
    for i, t in enumerate(train):
        if i % 16 != 3:
            continue
        calib.append(t)
        size += len(t) + 2
        if size > 65536:
            break
    with open(os.path.join(args.out, "calib.txt"), "w", encoding="utf-8") as f:
        f.write("\n\n".join(calib) + "\n")

    tok = train_tokenizer(train, args.vocab)
    eos_id = tok.token_to_id(EOS)
    tok.save(os.path.join(args.out, "tokenizer.json"))
    with open(os.path.join(args.out, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": EOS,
                   "bos_token": None, "model_max_length": 512, "clean_up_tokenization_spaces": False},
                  f, indent=2)

    ids = []
    for t in train:
        ids.extend(tok.encode(t + "\n\n").ids)
        ids.append(eos_id)
    data = torch.tensor(ids, dtype=torch.long)
    # Held-out windows for early stopping: a model this size memorises a 1M-token corpus within
    # a few epochs, so the weights kept are those of the step with the lowest held-out loss.
    held_ids = []
    for t in held:
        held_ids.extend(tok.encode(t + "\n\n").ids)
        held_ids.append(eos_id)
    held_data = torch.tensor(held_ids, dtype=torch.long)
    starts = torch.arange(0, len(held_data) - args.seq - 1, args.seq)[:64]
    print(f"{len(train)} chapters for training, {len(held)} held out; {len(ids)} training tokens",
          flush=True)

    config = LlamaConfig(vocab_size=args.vocab, hidden_size=args.hidden,
                         intermediate_size=3 * args.hidden, num_hidden_layers=args.layers,
                         num_attention_heads=args.hidden // 32, num_key_value_heads=args.hidden // 64,
                         head_dim=32, max_position_embeddings=512, rope_theta=10000.0,
                         rms_norm_eps=1e-5, tie_word_embeddings=True, bos_token_id=eos_id,
                         eos_token_id=eos_id, pad_token_id=eos_id, hidden_act="silu")
    dev = torch.device("cuda")
    model = LlamaForCausalLM(config).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1)
    gen = torch.Generator().manual_seed(1)
    start = time.time()
    best_loss, best_step, best_state = float("inf"), -1, None

    def held_loss():
        model.eval()
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            x = torch.stack([held_data[i:i + args.seq] for i in starts]).to(dev)
            value = model(input_ids=x, labels=x).loss.item()
        model.train()
        return value

    model.train()
    for step in range(args.steps):
        lr = args.lr * min(1.0, (step + 1) / 100) * 0.5 * (1 + math.cos(math.pi * step / args.steps))
        for g in opt.param_groups:
            g["lr"] = lr
        at = torch.randint(0, len(data) - args.seq - 1, (args.batch,), generator=gen)
        x = torch.stack([data[i:i + args.seq] for i in at]).to(dev)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=x, labels=x).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 50 == 0 or step == args.steps - 1:
            h = held_loss()
            if h < best_loss:
                best_loss, best_step = h, step
                best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            print(f"step {step} loss {loss.item():.3f} held-out {h:.3f} lr {lr:.2e} "
                  f"{time.time() - start:.0f} s", flush=True)
    print(f"kept step {best_step} (held-out loss {best_loss:.3f})", flush=True)
    model.load_state_dict(best_state)

    model = model.to(torch.bfloat16).eval()
    model.generation_config.do_sample = False
    model.generation_config.eos_token_id = eos_id
    model.generation_config.pad_token_id = eos_id
    model.save_pretrained(args.out, safe_serialization=True)

    write_goldens(args.out, dev, best_step)

if __name__ == "__main__":
    main()
