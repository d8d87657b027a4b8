#!/usr/bin/env bash
# The one device call of 2026-12-06 for the AMX int kernels, on the GPU machine's host CPU (the
# team's only reachable CPU with AMX this session; the dev VM is an AMD EPYC without it):
# the kernel and runner tests with AMX live, then the same-run A/B of the AMX engine against the
# avx512 one (QLINEAR_DISABLED_KERNELS), OpenBLAS sgemm per layer, and llama.cpp built with AMX.
# Run from the repo root with .carry/amx carried (stage.sh).
set -u
C=.carry/amx
mkdir -p /tmp/amx && tar xJf $C/payload.tar.xz -C /tmp/amx
B=/tmp/amx/bin
export LD_LIBRARY_PATH=/tmp/amx/lib:${LD_LIBRARY_PATH:-}
export QLINEAR_SOURCE_DIR=$PWD QLINEAR_TEST_TMPDIR_BASE=/tmp/qt
mkdir -p /tmp/qt
lscpu | grep -E '^Model name|^CPU\(s\)|^Thread|^L3' | tee $OUT/machine.txt
grep -o 'amx[a-z_0-9]*' /proc/cpuinfo | sort -u | tr '\n' ' ' | tee -a $OUT/machine.txt; echo
$B/qlinear example --format gptq_v1_sym4 --out /tmp/ex > /dev/null 2>&1
$B/qlinear explain --model /tmp/ex --max-rows 64 2>&1 | grep -m 3 -E 'amx|avx512' | tee -a $OUT/machine.txt
NO_AMX="QLINEAR_DISABLED_KERNELS=cpu.w4a16.amx,cpu.w8a16.amx"
echo "== kernels_tests $(date +%T)"
timeout 240 $B/kernels_tests --gtest_color=no > $OUT/kernels_tests.log 2>&1; echo "exit $?"
grep -E '^\[  (PASSED|FAILED|SKIPPED) |Amx|amx' $OUT/kernels_tests.log | grep -v '^\[       OK' | head -20
echo "== model_tests $(date +%T)"
timeout 200 $B/model_tests --gtest_color=no > $OUT/model_tests.log 2>&1; echo "exit $?"
grep -E '^\[  (PASSED|FAILED) ' $OUT/model_tests.log
echo "== bench $(date +%T)"
S=--shape=2048x16384,8192x2048,4096x14336,14336x4096
for t in 16 2; do
  timeout 150 $B/qlinear bench --device cpu --scheme w4a16g128,w8a16g128 $S --batch 16,128,256 \
    --threads $t --quick --json 2>/dev/null | sed "s|^{|{\"label\":\"amx_t$t\",|" >> $OUT/bench.jsonl
  env $NO_AMX timeout 150 $B/qlinear bench --device cpu --scheme w4a16g128,w8a16g128 $S \
    --batch 16,128,256 --threads $t --quick --no-blas --json 2>/dev/null |
    sed "s|^{|{\"label\":\"avx512_t$t\",|" >> $OUT/bench.jsonl
  echo "bench threads $t done $(date +%T)"
done
echo "== bench-model $(date +%T)"
for t in 16 2; do
  for f in w4a16g128 w8a16; do
    timeout 120 $B/qlinear bench-model --synthetic synth-1b --format $f --prompt-len 128 --gen-len 32 \
      --threads $t --json 2>/dev/null | sed "s|^{|{\"label\":\"amx_t${t}_$f\",|" >> $OUT/bench_model.jsonl
    env $NO_AMX timeout 120 $B/qlinear bench-model --synthetic synth-1b --format $f --prompt-len 128 \
      --gen-len 32 --threads $t --json 2>/dev/null |
      sed "s|^{|{\"label\":\"avx512_t${t}_$f\",|" >> $OUT/bench_model.jsonl
  done
done
python3 - $OUT/bench_model.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    d = json.loads(l)
    print(d["label"], "prefill", round(d["prefill_tokens_per_s"], 1), "decode", round(d["decode_tokens_per_s"], 1))
PY
echo "== llama.cpp $(date +%T)"
P=/tmp/amx/peer; M=/tmp/amx/models; mkdir -p $M
PYTHONPATH=$P/gguf-py timeout 200 python3 $P/llamacpp_synth_gguf.py $M/F16.gguf --seed 0 > $OUT/gguf.log 2>&1
for ty in Q4_K_M Q8_0; do
  timeout 100 $B/llama-quantize $M/F16.gguf $M/$ty.gguf $ty 16 > /dev/null 2>&1
  for t in 16 2; do
    timeout 60 $B/llama-bench -m $M/$ty.gguf -t $t -p 128 -n 0 -r 3 -o jsonl 2>> $OUT/llama_bench.err |
      sed "s|^{|{\"label\":\"llamacpp_${ty}_t${t}_prefill\",|" >> $OUT/llamacpp.jsonl
    timeout 60 $B/llama-bench -m $M/$ty.gguf -t $t -p 0 -n 32 -r 3 -o jsonl 2>> $OUT/llama_bench.err |
      sed "s|^{|{\"label\":\"llamacpp_${ty}_t${t}_decode\",|" >> $OUT/llamacpp.jsonl
  done
done
python3 - $OUT/llamacpp.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    d = json.loads(l)
    print(d["label"], round(d["avg_ts"], 1))
PY
grep -i amx $OUT/llama_bench.err | sort | uniq -c | head -5
echo "== done $(date +%T)"
