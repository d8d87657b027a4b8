#!/usr/bin/env python3
"""Writes tiny Hugging Face checkpoints with Hugging Face's own libraries, and their goldens.

Run once on a machine with torch, transformers and tokenizers (the project's GPU machine has
them; nothing is downloaded): every model is built from a config with random weights and saved
with save_pretrained, so the folders are exactly what transformers writes (its config.json
layout, tensor names, sharding, FP8 quantization). Next to each model the script stores what
transformers computes for it in float64 -- the logits of a fixed prompt and its greedy
continuation -- which the C++ tests compare qlinear's runner against.

    python3 tools/make_hf_fixtures.py OUT_DIR      # e.g. tests/data/hf

Each OUT_DIR/<name>/ holds the model folder plus golden.safetensors (F64 "logits" [T, vocab] of
the prompt) and golden.json ({"prompt_ids", "greedy_ids", "transformers", "torch"}).
"""
import json
import os
import shutil
import sys

import torch
import transformers
from safetensors.torch import save_file
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

CORPUS = (
    "The quick brown fox jumps over the lazy dog. qlinear runs quantized checkpoints on CPUs "
    "and GPUs through one path. Every format is parsed once and converted into one canonical "
    "weight form; an ordered registry picks each layer's kernel. "
) * 40
VOCAB = 384
PROMPT = [1, 17, 240, 9, 9, 131, 64, 300, 222, 33, 5, 77, 101, 8]


def tokenizer_files(out):
    """A byte-level BPE tokenizer trained here with Hugging Face tokenizers (no download)."""
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB - 2, special_tokens=["<s>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([CORPUS], trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 0)])
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>",
                                                eos_token="</s>")
    fast.chat_template = ("{% for m in messages %}<s>{{ m['role'] }}: {{ m['content'] }}\n"
                          "{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}")
    fast.save_pretrained(out)


def common(**extra):
    base = dict(vocab_size=VOCAB, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                rms_norm_eps=1e-5, bos_token_id=0, eos_token_id=1)
    base.update(extra)
    return base


def models_to_make():
    yield "llama3", transformers.LlamaConfig(**common(
        rope_theta=500000.0,
        rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                      "high_freq_factor": 4.0, "original_max_position_embeddings": 64})), {}
    yield "mistral", transformers.MistralConfig(**common(head_dim=48, sliding_window=8)), {}
    yield "qwen2", transformers.Qwen2Config(**common(tie_word_embeddings=True)), {}
    yield "qwen3", transformers.Qwen3Config(**common(head_dim=64)), {}
    yield "llama_sharded", transformers.LlamaConfig(**common()), {"max_shard_size": "100KB"}
    # Multi-head attention, k/v as wide as q: the FP8 source (transformers leaves the scales of
    # layers narrower than a 128-row block uninitialised when it quantizes on load).
    yield "llama_mha", transformers.LlamaConfig(**common(num_key_value_heads=4)), {}


def goldens(model, out):
    model = model.to(torch.float64).eval()
    ids = torch.tensor([PROMPT])
    with torch.no_grad():
        logits = model(ids).logits[0].contiguous()
        greedy = model.generate(ids, max_new_tokens=10, do_sample=False,
                                pad_token_id=1)[0, len(PROMPT):].tolist()
    save_file({"logits": logits}, os.path.join(out, "golden.safetensors"))
    with open(os.path.join(out, "golden.json"), "w") as f:
        json.dump({"prompt_ids": PROMPT, "greedy_ids": greedy,
                   "transformers": transformers.__version__, "torch": torch.__version__}, f)


def main(root):
    torch.manual_seed(20261201)
    os.makedirs(root, exist_ok=True)
    for name, config, save_args in models_to_make():
        out = os.path.join(root, name)
        shutil.rmtree(out, ignore_errors=True)
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        with torch.no_grad():  # a less degenerate model than the init's tiny weights
            for p in model.parameters():
                if p.dim() == 2:
                    p.normal_(0.0, 0.08)
        model.to(torch.bfloat16).save_pretrained(out, **save_args)
        tokenizer_files(out)
        # The goldens come from the bf16 weights as saved, computed in float64.
        saved = transformers.AutoModelForCausalLM.from_pretrained(out, dtype=torch.float64)
        goldens(saved, out)
        print(name, "written", flush=True)
    if torch.cuda.is_available():
        # FP8 block checkpoints as transformers writes them (FineGrainedFP8Config, 128x128).
        name = "llama_fp8_block"
        out = os.path.join(root, name)
        shutil.rmtree(out, ignore_errors=True)
        src = os.path.join(root, "llama_mha")
        q = transformers.AutoModelForCausalLM.from_pretrained(
            src, dtype=torch.bfloat16, device_map="cuda",
            quantization_config=transformers.FineGrainedFP8Config())
        q.save_pretrained(out)
        tokenizer_files(out)
        # Golden: the FP8 weights dequantized exactly, the forward in float64 on the CPU.
        deq = transformers.AutoModelForCausalLM.from_pretrained(src, dtype=torch.float64)
        state = {}
        from safetensors.torch import load_file
        for f in os.listdir(out):
            if f.endswith(".safetensors"):
                state.update(load_file(os.path.join(out, f)))
        with torch.no_grad():
            for pname, p in deq.named_parameters():
                key = pname
                scale_key = key.replace(".weight", ".weight_scale_inv")
                if key in state and scale_key in state:
                    w = state[key].to(torch.float64)
                    s = state[scale_key].to(torch.float64)
                    s = s.repeat_interleave(128, 0)[: w.shape[0]].repeat_interleave(128, 1)[:, : w.shape[1]]
                    p.copy_(w * s)
        goldens(deq, out)
        print(name, "written", flush=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/data/hf")
