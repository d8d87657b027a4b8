#!/usr/bin/env bash
# Device call 1 (2026-12-03 afternoon): where the 8B W4A16 decode step's time goes inside the
# recorded graph (QLINEAR_STEP_SKIP variants), and Nsight Compute details of the small kernels.
set -u
R=$PWD
H=$R/.carry/cuda
cd "$H" && tar xJf payload.tar.xz
export LD_LIBRARY_PATH=$H/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export QLINEAR_SOURCE_DIR=$R
NCU="$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
run() { # model skip
  QLINEAR_STEP_SKIP="$2" timeout 60 bin/qlinear bench-model --device cuda --synthetic $1 --format w4a16g128 \
    --prompt-len 128 --gen-len 128 --json 2>>$OUT/bench.err | sed "s|^{|{\"skip\":\"$2\",|" >> $OUT/skip.jsonl
  tail -1 $OUT/skip.jsonl | python3 -c "import json,sys; r=json.loads(sys.stdin.read()); print(r['model'], '[%s]'%r['skip'], '%.1f tok/s  %.1f us/step' % (r['decode_tokens_per_s'], 1e6/r['decode_tokens_per_s']))"
}
for s in "" "norm" "attention" "rope_kv,silu" "o" "qkv" "norm,attention,rope_kv,silu" "" ; do run llama3-8b "$s"; done
for s in "" "norm" "norm,attention,rope_kv,silu"; do run llama3.2-1b "$s"; done
echo "== ncu details (eager run, the second layer's kernels of the last step)"
timeout 200 "$NCU" --clock-control none --set full --kernel-name regex:"int_gemv_ring|rms_norm_kernel|attention_kernel|rope_store|silu_mul" \
  --launch-skip 1200 --launch-count 8 --print-details all \
  bin/qlinear bench-model --device cuda --synthetic llama3-8b --format w4a16g128 --prompt-len 128 --gen-len 8 --eager > $OUT/ncu_details.txt 2>$OUT/ncu.err
echo "ncu exit $?"; grep -E "^  [a-z_:<>, 0-9A-Za-z]+\(|Duration|Memory Throughput|DRAM Throughput|Achieved Occupancy|Registers Per|Waves Per SM" $OUT/ncu_details.txt | head -80
tail -3 $OUT/ncu.err
cd $OUT && tar czf call1.tgz ncu_details.txt bench.err ncu.err && rm -f ncu_details.txt bench.err ncu.err
