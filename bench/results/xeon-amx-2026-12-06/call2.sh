#!/usr/bin/env bash
# Call 2: call 1's kernel bench again with the right scheme names (call 1 asked for
# "w8a16g128", which bench refuses), llama.cpp's prefill with its stderr kept (call 1's AMX
# build printed no prefill record), and llama.cpp built on this host without AMX as well
# (source: the same v0.5.0 tree without docs, models, tests, examples and GPU backends, carried as llsrc.tar.xz), built first so nothing else runs beside it.
set -u
C=.carry/amx
mkdir -p /tmp/amx && tar xJf $C/payload.tar.xz -C /tmp/amx
B=/tmp/amx/bin
export LD_LIBRARY_PATH=/tmp/amx/lib:${LD_LIBRARY_PATH:-}
NO_AMX="QLINEAR_DISABLED_KERNELS=cpu.w4a16.amx,cpu.w8a16.amx"
( mkdir -p /tmp/ll && tar xJf $C/llsrc.tar.xz -C /tmp/ll && cd /tmp/ll &&
  cmake -B build -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON \
    -DGGML_BMI2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON \
    -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON -DLLAMA_OPENSSL=OFF -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF > /tmp/ll_cfg.log 2>&1 &&
  cmake --build build -j16 --target llama-bench > /tmp/ll_build.log 2>&1; echo "llama.cpp no-AMX build: exit $? $(date +%T)" )
echo "== bench $(date +%T)"
S=--shape=2048x16384,8192x2048,4096x14336,14336x4096
for t in 16 2; do
  timeout 200 $B/qlinear bench --device cpu --scheme w4a16g128,w8a16 $S --batch 16,128,256 \
    --threads $t --quick --json 2>> $OUT/bench.err | sed "s|^{|{\"label\":\"amx_t$t\",|" >> $OUT/bench.jsonl
  env $NO_AMX timeout 200 $B/qlinear bench --device cpu --scheme w4a16g128,w8a16 $S \
    --batch 16,128,256 --threads $t --quick --no-blas --json 2>> $OUT/bench.err |
    sed "s|^{|{\"label\":\"avx512_t$t\",|" >> $OUT/bench.jsonl
  echo "bench threads $t done $(date +%T), $(wc -l < $OUT/bench.jsonl) records"
done
tail -c 400 $OUT/bench.err
echo "== llama.cpp $(date +%T)"
P=/tmp/amx/peer; M=/tmp/amx/models; mkdir -p $M
PYTHONPATH=$P/gguf-py timeout 200 python3 $P/llamacpp_synth_gguf.py $M/F16.gguf --seed 0 > /dev/null 2>&1
lb() {  # label binary args
  local label=$1 bin=$2; shift 2
  timeout 120 $bin "$@" -o jsonl 2> $OUT/lb_$label.err > /tmp/lb.out; local rc=$?
  sed "s|^{|{\"label\":\"$label\",|" /tmp/lb.out >> $OUT/llamacpp.jsonl
  echo "$label exit $rc $(python3 -c 'import json,sys; print([round(json.loads(l)["avg_ts"],1) for l in open("/tmp/lb.out")])' 2>&1)"
  [[ $rc == 0 ]] || tail -n 5 $OUT/lb_$label.err
}
for ty in Q4_K_M Q8_0; do
  timeout 100 $B/llama-quantize $M/F16.gguf $M/$ty.gguf $ty 16 > /dev/null 2>&1
  for t in 16 2; do
    lb amx_${ty}_t${t}_prefill $B/llama-bench -m $M/$ty.gguf -t $t -p 128 -n 0 -r 3
    lb noamx_${ty}_t${t}_prefill /tmp/ll/build/bin/llama-bench -m $M/$ty.gguf -t $t -p 128 -n 0 -r 3
    lb noamx_${ty}_t${t}_decode /tmp/ll/build/bin/llama-bench -m $M/$ty.gguf -t $t -p 0 -n 32 -r 3
  done
done
echo "== bench-model at 8 threads (call 1 had 16 and 2) $(date +%T)"
for f in w4a16g128 w8a16; do
  timeout 120 $B/qlinear bench-model --synthetic synth-1b --format $f --prompt-len 128 --gen-len 32 \
    --threads 8 --json 2>/dev/null | sed "s|^{|{\"label\":\"amx_t8_$f\",|" >> $OUT/bench_model.jsonl
  env $NO_AMX timeout 120 $B/qlinear bench-model --synthetic synth-1b --format $f --prompt-len 128 \
    --gen-len 32 --threads 8 --json 2>/dev/null | sed "s|^{|{\"label\":\"avx512_t8_$f\",|" >> $OUT/bench_model.jsonl
done
python3 -c '
import json, sys
for l in open(sys.argv[1]):
    d = json.loads(l); print(d["label"], "prefill", round(d["prefill_tokens_per_s"], 1), "decode", round(d["decode_tokens_per_s"], 1))' $OUT/bench_model.jsonl
echo "== done $(date +%T)"
