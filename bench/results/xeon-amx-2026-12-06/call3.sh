#!/usr/bin/env bash
# Call 3: the model-level comparison in one call on one host, so the ratios are fair: qlinear
# synth-1b prefill (128 tokens) and decode with the AMX kernels and without them
# (QLINEAR_DISABLED_KERNELS), and llama.cpp v0.5.0 built here without AMX (its AMX build died
# with SIGILL in prefill in call 2), at 16 and 2 threads, alternating.
set -u
C=.carry/amx
mkdir -p /tmp/amx && tar xJf $C/payload.tar.xz -C /tmp/amx
B=/tmp/amx/bin
export LD_LIBRARY_PATH=/tmp/amx/lib:${LD_LIBRARY_PATH:-}
NO_AMX="QLINEAR_DISABLED_KERNELS=cpu.w4a16.amx,cpu.w8a16.amx"
lscpu | grep -E '^Model name|^CPU\(s\)'
( mkdir -p /tmp/ll && tar xJf $C/llsrc.tar.xz -C /tmp/ll && cd /tmp/ll &&
  cmake -B build -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON \
    -DGGML_BMI2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON \
    -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON -DLLAMA_OPENSSL=OFF -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF > /tmp/ll_cfg.log 2>&1 &&
  cmake --build build -j16 --target llama-bench llama-quantize > /tmp/ll_build.log 2>&1; echo "llama.cpp build: exit $? $(date +%T)" )
L=/tmp/ll/build/bin
P=/tmp/amx/peer; M=/tmp/amx/models; mkdir -p $M
PYTHONPATH=$P/gguf-py timeout 200 python3 $P/llamacpp_synth_gguf.py $M/F16.gguf --seed 0 > /dev/null 2>&1
for ty in Q4_K_M Q8_0; do timeout 100 $L/llama-quantize $M/F16.gguf $M/$ty.gguf $ty 16 > /dev/null 2>&1; done
echo "== models ready $(date +%T)"
R=$OUT/results.jsonl
ql() {  # label env -- args
  local label=$1; shift
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" timeout 120 $B/qlinear bench-model --synthetic synth-1b --prompt-len 128 --gen-len 32 \
    "$@" --json 2>/dev/null | sed "s|^{|{\"label\":\"$label\",|" >> $R
  tail -n 1 $R | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(d["label"], "prefill", round(d["prefill_tokens_per_s"],1), "decode", round(d["decode_tokens_per_s"],1), "ratio_membw", round(d["ratio_membw"],3))'
}
lb() {  # label args
  local label=$1; shift
  timeout 120 $L/llama-bench "$@" -o jsonl 2>/dev/null | sed "s|^{|{\"label\":\"$label\",|" >> $R
  tail -n 1 $R | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(d["label"], round(d["avg_ts"],1))'
}
for t in 16 2; do
  for rep in 1 2; do
    ql amx_t${t}_w4a16g128 X=1 -- --format w4a16g128 --threads $t
    ql avx512_t${t}_w4a16g128 $NO_AMX -- --format w4a16g128 --threads $t
    lb llamacpp_Q4_K_M_t${t}_prefill -m $M/Q4_K_M.gguf -t $t -p 128 -n 0 -r 3
    lb llamacpp_Q4_K_M_t${t}_decode -m $M/Q4_K_M.gguf -t $t -p 0 -n 32 -r 3
  done
  ql amx_t${t}_w8a16 X=1 -- --format w8a16 --threads $t
  ql avx512_t${t}_w8a16 $NO_AMX -- --format w8a16 --threads $t
  lb llamacpp_Q8_0_t${t}_prefill -m $M/Q8_0.gguf -t $t -p 128 -n 0 -r 3
  lb llamacpp_Q8_0_t${t}_decode -m $M/Q8_0.gguf -t $t -p 0 -n 32 -r 3
done
echo "== done $(date +%T)"
