#!/usr/bin/env bash
# One device call for the int decode kernel cuda.int.gemv.sm80 (issue 12): the registry grid (every
# CUDA kernel against the CPU reference, graph replay), the decode benchmark of the gemv kernel
# against the mma kernel (QLINEAR_DISABLED_KERNELS) on the same shapes, a sweep of its K split
# (QLINEAR_CUDA_GEMV_WK), Nsight Compute on single launches, compute-sanitizer on the reduced grid,
# PyTorch's peers, and bench-model. Binaries and tools as tests/device/stage.sh ships them.
#
#   STAGES=grid,peers,bench,pipe,mma,benchenv,sweep,ncu,sass,sanitizer,model TOTAL_S=300 bash gemv.sh
#
# QLINEAR_CUDA_GEMV_PIPE=0|1|2 forces the one-stage or the two-stage register pipeline or the
# cp.async ring (the "bench" stage runs the registry's own choice, "pipe" each of BENCH_PIPES; the
# grid and sanitizer stages run each of PIPES, the sweep each of SWEEP_PIPES; NCU_CFGS entries
# name one, -1 for the default). MODELS: the synthetic models of the "model" stage, MODEL_RUNS its
# FORMAT[@BATCH][:ENV=VALUE] runs of bench-model, PEER_RUNS its MODEL:QUANT runs of PyTorch's
# decode peer (results in bench_model.jsonl and gpu_decode_peer_MODEL_QUANT.json; COMPILE=1 for
# the torch.compile'd step, PEER_S its time limit).
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
OUT="${OUT:-$HERE/out}"
mkdir -p "$OUT/logs"
LOGS="$OUT/logs"
[[ -f "$HERE/payload.tar.xz" && ! -d "$HERE/bin" ]] && tar xJf "$HERE/payload.tar.xz" -C "$HERE"
export LD_LIBRARY_PATH="$HERE/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
if ! ls /usr/local/cuda/lib64/libcublasLt.so.13 >/dev/null 2>&1 &&
   ! ldconfig -p 2>/dev/null | grep -q libcublasLt.so.13; then
  LT="$(find /usr /opt -name 'libcublasLt.so.13*' 2>/dev/null | head -1)"
  [[ -n "$LT" ]] && export LD_LIBRARY_PATH="$(dirname "$LT"):$LD_LIBRARY_PATH"
fi
export PYTHONUNBUFFERED=1
QL="$HERE/bin/qlinear"
TESTS="$HERE/bin/cuda_device_tests"
STAGES="${STAGES:-grid,bench,mma,sweep,ncu,sanitizer}"
SHAPES="${SHAPES:-8192x57344,4096x28672,28672x8192,8192x10240,14336x4096,4096x6144,4096x4096}"
BATCH="${BATCH:-1,4,8,16}"
SCHEMES="${SCHEMES:-w4a16g128,w8a16}"
has() { [[ ",$STAGES," == *",$1,"* ]]; }
DEADLINE=$((SECONDS + ${TOTAL_S:-300}))
lim() {
  local left=$((DEADLINE - SECONDS - 15))
  ((left < 1)) && left=1
  ((left < $1)) && echo "$left" || echo "$1"
}
stamp() { echo "=== $(date +%T) $*"; }
bench() {  # bench LOG_NAME [extra env assignments via env(1)] -- runs qlinear bench on SHAPES x BATCH
  local name="$1"
  shift
  stamp "bench $name"
  timeout "$(lim "${BENCH_S:-90}")" env "$@" "$QL" bench --device cuda --shape "$SHAPES" \
    --batch "$BATCH" --scheme "$SCHEMES" --act-dtype bf16 --out-dtype bf16 --json --quick \
    ${PEERS_ARG:-} 2>>"$LOGS/bench_$name.err" | tee "$OUT/bench_$name.jsonl" |
    python3 "$HERE/tools/print_bench.py"
  tail -2 "$LOGS/bench_$name.err"
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader

if has grid; then
  # Entries PIPE or PIPE:ENV=VALUE (e.g. 2:QLINEAR_CUDA_GEMV_XS=0: the ring with x from global).
  for entry in ${PIPES:-0 1 2}; do
    pipe="${entry%%:*}"
    extra=()
    [[ "$entry" == *:* ]] && extra=("${entry#*:}")
    tag="${entry//[^A-Za-z0-9_]/_}"
    stamp "grid $entry"
    timeout "$(lim "${GRID_S:-120}")" env QLINEAR_CUDA_GEMV_PIPE="$pipe" "${extra[@]}" "$TESTS" \
      --gtest_color=no --gtest_filter='Registry/*' 2>&1 | tee "$LOGS/grid_$tag.log" |
      grep -E "cuda grid\] cuda.int|FAILED|Failure|error:|Which is|PASSED|tests ran" | head -40
  done
fi

if has peers; then
  stamp peers
  SHAPES="$SHAPES" BATCH="$BATCH" OUT="$OUT" timeout "$(lim "${PEERS_S:-120}")" \
    python3 "$HERE/tools/gpu_peers.py" >"$LOGS/peers.log" 2>&1
  tail -3 "$LOGS/peers.log"
  [[ -f "$OUT/gpu_peers.json" ]] && PEERS_ARG="--peers $OUT/gpu_peers.json"
fi

has bench && bench gemv QLINEAR_CUDA_GEMV_PIPE=-1
if has pipe; then
  for pipe in ${BENCH_PIPES:-0 1}; do bench "pipe$pipe" QLINEAR_CUDA_GEMV_PIPE="$pipe"; done
fi
has mma && bench mma QLINEAR_DISABLED_KERNELS=cuda.int.gemv.sm80
if has benchenv; then
  # BENCH_ENVS: entries NAME:ENV=VALUE[,ENV=VALUE] (e.g. xs0:QLINEAR_CUDA_GEMV_XS=0).
  for entry in ${BENCH_ENVS:-}; do
    envs="${entry#*:}"
    # shellcheck disable=SC2086  # the list is split on commas into env(1) assignments
    bench "${entry%%:*}" ${envs//,/ }
  done
fi

if has sweep; then
  for pipe in ${SWEEP_PIPES:-2}; do
    for wk in ${WKS:-1 2 4 8}; do
      SHAPES="${SWEEP_SHAPES:-8192x57344,4096x28672,14336x4096,4096x4096}" BATCH="${SWEEP_BATCH:-1,16}" \
        SCHEMES=w4a16g128 bench "wk${wk}_p$pipe" QLINEAR_CUDA_GEMV_WK="$wk" QLINEAR_CUDA_GEMV_PIPE=$pipe
    done
  done
fi

if has ncu; then
  NCU="$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)"
  IFS=";" read -r -a CFGS <<<"${NCU_CFGS-8192x57344 1 w4a16g128 0;8192x57344 1 w4a16g128 1;14336x4096 1 w4a16g128 0;14336x4096 1 w4a16g128 1}"
  for cfg in "${CFGS[@]}"; do
    read -r shape m scheme pipe <<<"$cfg"
    stamp "ncu $shape M=$m $scheme pipe=$pipe"
    QLINEAR_CUDA_GEMV_PIPE=$pipe timeout "$(lim 60)" "$NCU" --clock-control none -k regex:int_gemv --launch-skip 6 \
      --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis \
      --section WarpStateStats --section Occupancy --section LaunchStats --section SchedulerStats \
      "$QL" bench --device cuda --shape "$shape" --batch "$m" --scheme "$scheme" \
      --out-dtype bf16 --quick --json 2>&1 | grep -vE '^\{|^==PROF==|^ *-+ *$' |
      sed 's/  */ /g' >"$OUT/ncu_${shape}_${m}_${scheme}_$pipe.txt"
    grep -iE "Duration|DRAM Through|Compute \(SM\)|Achieved Occ|Registers Per|Grid Size|Warp Cycles Per Issued|Issued Warp|stalled" \
      "$OUT/ncu_${shape}_${m}_${scheme}_$pipe.txt" | head -12
  done
fi

if has sass; then
  # The disassembly of the main instantiation (4-bit, bf16, f16 scales, symmetric, M <= 8, one
  # stage) for instruction counts per step.
  CUOBJDUMP="$(command -v cuobjdump || ls /usr/local/cuda/bin/cuobjdump 2>/dev/null | head -1)"
  if [[ -n "$CUOBJDUMP" ]]; then
    "$CUOBJDUMP" -sass "$QL" 2>/dev/null | awk -v k="${SASS_KERNEL:-int_gemv_kernelILi4ELb1ELb1ELb0ELi1ELb0E}" \
      '/Function : /{f = index($0, k) > 0} f' >"$LOGS/sass_gemv.txt"
    echo "sass: $(wc -l <"$LOGS/sass_gemv.txt") lines"
  else
    echo "sass: no cuobjdump"
  fi
fi

if has sanitizer; then
  for entry in ${PIPES:-0 1 2}; do
    pipe="${entry%%:*}"
    extra=()
    [[ "$entry" == *:* ]] && extra=("${entry#*:}")
    for tool in ${SANITIZER_TOOLS:-memcheck}; do
      tag="${tool}_${entry//[^A-Za-z0-9_]/_}"
      stamp "sanitizer $tool $entry"
      timeout "$(lim "${SANITIZER_S:-120}")" env QLINEAR_CUDA_GEMV_PIPE="$pipe" "${extra[@]}" \
        QLINEAR_DEVICE_GRID=reduced compute-sanitizer --tool "$tool" --error-exitcode 3 "$TESTS" \
        --gtest_color=no --gtest_filter='Registry/CudaGrid.MatchesReference/*' \
        >"$LOGS/sanitizer_$tag.log" 2>&1
      echo "compute-sanitizer exit $?" | tee -a "$LOGS/sanitizer_$tag.log"
      grep -E "ERROR SUMMARY|Invalid|hazard|cuda grid\] cuda.int.gemv|FAILED|PASSED" \
        "$LOGS/sanitizer_$tag.log" | head -8
    done
  done
fi

if has model; then
  # FORMAT[@BATCH][:ENV=VALUE] runs (the environment picks the gemv variant or disables it; BATCH
  # is bench-model --batch, default 1).
  for model in ${MODELS:-llama3.2-1b}; do
    for run in ${MODEL_RUNS:-w4a16g128 w4a16g128:QLINEAR_CUDA_GEMV_PIPE=0 w4a16g128:QLINEAR_DISABLED_KERNELS=cuda.int.gemv.sm80 w8a16}; do
      spec="${run%%:*}"
      fmt="${spec%%@*}"
      batch=1
      [[ "$spec" == *@* ]] && batch="${spec#*@}"
      envs=()
      [[ "$run" == *:* ]] && envs=("${run#*:}")
      stamp "bench-model $model $run"
      timeout "$(lim 90)" env "${envs[@]}" "$QL" bench-model --device cuda --synthetic "$model" \
        --format "$fmt" --batch "$batch" --prompt-len 128 --gen-len 128 --json \
        2>>"$LOGS/bench_model.err" |
        sed "s|^{|{\"model\":\"$model\",\"run\":\"$run\",|" | tee -a "$OUT/bench_model.jsonl"
    done
  done
  tail -3 "$LOGS/bench_model.err"
  if [[ -f "$HERE/tools/gpu_decode_peer.py" ]]; then
    # PEER_RUNS: MODEL:QUANT entries of PyTorch's decode step (gpu_decode_peer.py).
    for peer in ${PEER_RUNS:-llama3.2-1b:int4}; do
      stamp "gpu_decode_peer $peer"
      MODEL="${peer%%:*}" QUANT="${peer#*:}" COMPILE="${COMPILE:-0}" OUT="$OUT" \
        timeout "$(lim "${PEER_S:-90}")" python3 "$HERE/tools/gpu_decode_peer.py" \
        >>"$LOGS/decode_peer.log" 2>&1
      tail -1 "$LOGS/decode_peer.log"
    done
  fi
fi

stamp done
(cd "$OUT" && cat bench_*.jsonl >all_bench.jsonl 2>/dev/null
  tar czf logs.tgz logs ncu_*.txt bench_*.jsonl 2>/dev/null && rm -rf logs ncu_*.txt bench_*.jsonl)
ls -la "$OUT"
