#!/usr/bin/env bash
# The one device call of the CUDA backend (issue 12) and of the runner on the GPU (issue 14):
# environment check, the registry-wide CUDA kernel grid on the GPU, the runner's GPU tests and
# runs, compute-sanitizer memcheck on a reduced grid, PyTorch's peers and `qlinear bench --device
# cuda` in the same call, and the report's plots. Logs go under $OUT.
#
#   STAGES=env,grid,runner,decode_peer,peers,bench,sanitizer,report TOTAL_S=560 bash tests/device/run.sh
#
# Binaries: $QL_BIN (default ./bin next to this script) holding qlinear, cuda_device_tests and
# model_tests, as tests/device/stage.sh copies them from this machine's build; with QL_BUILD=1 the
# script builds the cuda preset (plus tests) itself first, on a machine that has the project's
# dependencies. The runner stage reads the committed data (tests/data/hf, models/default) from
# $QL_ROOT, default the working directory (the repository root the device tool runs in). Each
# stage has its own time limit, so one that hangs leaves the others their time.
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
OUT="${OUT:-$HERE/out}"
mkdir -p "$OUT/logs"
# tests/device/stage.sh ships bin/ and lib/ as one archive.
[[ -f "$HERE/payload.tar.xz" && ! -d "$HERE/bin" ]] && tar xJf "$HERE/payload.tar.xz" -C "$HERE"
LOGS="$OUT/logs"
STAGES="${STAGES:-env,grid,runner,peers,bench,sanitizer,report}"
QL_ROOT="${QL_ROOT:-$PWD}"
QL_BIN="${QL_BIN:-$HERE/bin}"
SHAPES="${SHAPES:-8192x57344,4096x28672,14336x4096,4096x4096}"
BATCH="${BATCH:-1,16,64,256,1024,4096}"
SCHEMES="${SCHEMES:-w4a16g128,w8a16,fp8-w8a8-token,fp8-w8a8-tensor,fp8-block-w8a8,dense-bf16}"
export LD_LIBRARY_PATH="$HERE/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
# cuBLASLt 13: the CUDA image's, else the copy PyTorch's wheels carry.
if ! ls /usr/local/cuda/lib64/libcublasLt.so.13 >/dev/null 2>&1 &&
   ! ldconfig -p 2>/dev/null | grep -q libcublasLt.so.13; then
  LT="$(find /usr /opt -name 'libcublasLt.so.13*' 2>/dev/null | head -1)"
  [[ -n "$LT" ]] && export LD_LIBRARY_PATH="$(dirname "$LT"):$LD_LIBRARY_PATH"
fi
export PYTHONUNBUFFERED=1
has() { [[ ",$STAGES," == *",$1,"* ]]; }
# Every stage ends before the call's deadline (TOTAL_S), so the logs are always packed.
DEADLINE=$((SECONDS + ${TOTAL_S:-560}))
lim() {
  local left=$((DEADLINE - SECONDS - 25))
  ((left < 1)) && left=1
  ((left < $1)) && echo "$left" || echo "$1"
}
stamp() { echo "=== $(date +%T) $*"; }

if [[ "${QL_BUILD:-0}" == 1 ]]; then
  stamp build
  ROOT="$(cd "$HERE/../.." && pwd)"
  cmake -S "$ROOT" -B "$ROOT/build-cuda" --preset cuda -DQLINEAR_BUILD_TESTS=ON >"$LOGS/build.log" 2>&1 &&
    cmake --build "$ROOT/build-cuda" -j "$(nproc)" >>"$LOGS/build.log" 2>&1 || {
      tail -30 "$LOGS/build.log"; exit 1; }
  QL_BIN="$ROOT/build-cuda"
  cp "$ROOT/build-cuda/tests/device/cuda_device_tests" "$QL_BIN/" 2>/dev/null || true
fi
QL="$QL_BIN/qlinear"
TESTS="$QL_BIN/cuda_device_tests"
MODEL_TESTS="$QL_BIN/model_tests"

if has env; then
  stamp env
  {
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
    python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)' 2>&1
    ls /usr/local/cuda/lib64/libcublasLt.so* 2>&1
    ldd "$QL" | grep -E "not found|cublas|fmt|openblas|gomp"
    ldd "$TESTS" | grep -E "not found"
    "$QL" explain --help >/dev/null 2>&1 && echo "qlinear runs"
  } 2>&1 | tee "$LOGS/env.log"
fi

if has grid; then
  stamp grid
  # The quantizer and the block-layout probe first (seconds), then the registry grid.
  timeout "$(lim 60)" "$TESTS" --gtest_color=no --gtest_filter='CudaFp8*' 2>&1 | tee "$LOGS/quant.log" |
    grep -E "cuda grid|FAILED|Failure|error|Which is|Expected|PASSED|tests ran" | head -40
  timeout "$(lim "${GRID_S:-200}")" "$TESTS" --gtest_color=no --gtest_filter='Registry/*' 2>&1 |
    tee "$LOGS/grid.log" |
    grep -E "cuda grid|FAILED|Failure|error:|Which is|PASSED|tests ran" | head -150
fi

if has runner; then
  # The decoder on the GPU: its operations against the CPU ops, the Hugging Face goldens and every
  # fixture format through the CUDA decoder, greedy text of the default model on cuda against the
  # CPU and transformers' ids, then bench-model on synthetic Llama shapes (RUNNER_BENCH: ';'
  # separated `--synthetic M --format F` runs).
  stamp runner
  export QLINEAR_SOURCE_DIR="$QL_ROOT"
  timeout "$(lim 60)" "$MODEL_TESTS" --gtest_color=no --gtest_filter='CudaOpsTest.*' 2>&1 |
    tee "$LOGS/runner_ops.log" | grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure|error|Which is|cuda [^o]" | head -40
  timeout "$(lim 90)" "$MODEL_TESTS" --gtest_color=no --gtest_filter='Folders/HfGolden.*cuda*:Folders/DecodeGraph.*' 2>&1 |
    tee "$LOGS/runner_golden.log" | grep -E "^\[ +(OK|FAILED|SKIPPED|PASSED) |Failure|Expected|Which is|error" | head -40
  PROMPT="And God said unto Moses,"
  # cuda32: the CPU's f32 activations and KV cache on the GPU (the parity check); cuda: the
  # GPU's defaults (bf16 activations and KV cache).
  for dev in cpu cuda32 cuda; do
    dtypes=()
    [[ $dev == cuda32 ]] && dtypes=(--dtype f32 --kv-dtype f32)
    timeout "$(lim 60)" "$QL" generate --model "$QL_ROOT/models/default" --prompt "$PROMPT" \
      --max-tokens 48 --temperature 0 --device "${dev%32}" "${dtypes[@]}" --json \
      >"$LOGS/generate_$dev.json" 2>"$LOGS/generate_$dev.err"
    echo "generate --device $dev: exit $?"; tail -3 "$LOGS/generate_$dev.err"
  done
  python3 - "$LOGS" "$QL_ROOT/models/default/golden.json" <<'PY' 2>&1 | tee "$LOGS/generate_compare.log"
import json, sys
logs, golden = sys.argv[1], json.load(open(sys.argv[2]))
runs = {}
for dev in ("cpu", "cuda32", "cuda"):
    try:
        runs[dev] = json.loads(open(f"{logs}/generate_{dev}.json").read().strip().splitlines()[-1])
    except Exception as e:  # noqa: BLE001
        print(f"{dev}: no result ({e})")
for dev, r in runs.items():
    print(f"{dev}: ids equal to transformers' greedy ids: {r['output_ids'] == golden['greedy_ids']}; "
          f"prefill {r['prefill_tokens_per_s']:.1f} tok/s, decode {r['decode_tokens_per_s']:.1f} tok/s")
for dev in ("cuda32", "cuda"):
    if dev in runs and "cpu" in runs:
        print(f"{dev} ({runs[dev].get('dtype')} activations, {runs[dev].get('kv_dtype')} KV) text == cpu text:",
              runs[dev]["text"] == runs["cpu"]["text"],
              "; == transformers' greedy text:", runs[dev]["text"] == golden["greedy_text"])
        print(f"{dev} text:", repr(runs[dev]["text"]))
PY
  # Each shape and format twice: the recorded decode step (CUDA graph) and --eager.
  IFS=';' read -r -a RB <<<"${RUNNER_BENCH:---synthetic llama3.2-1b --format w4a16g128;--synthetic llama3.2-1b --format w4a16g128 --eager;--synthetic llama3.2-1b --format bf16;--synthetic llama3.2-1b --format bf16 --eager}"
  : >"$OUT/bench_model.jsonl"
  for run in "${RB[@]}"; do
    stamp "bench-model $run"
    # shellcheck disable=SC2086
    timeout "$(lim "${RUNNER_BENCH_S:-90}")" "$QL" bench-model --device cuda $run --prompt-len 128 \
      --gen-len "${RUNNER_GEN:-128}" --json 2>>"$LOGS/bench_model.err" | tee -a "$OUT/bench_model.jsonl"
    echo "exit ${PIPESTATUS[0]}"
  done
  tail -3 "$LOGS/bench_model.err"
  timeout "$(lim "${RUNNER_FIXTURES_S:-120}")" "$MODEL_TESTS" --gtest_color=no \
    --gtest_filter='Fixtures/EveryFormatOnCuda.*' 2>&1 | tee "$LOGS/runner_fixtures.log" |
    grep -E "^\[ +(OK|FAILED|SKIPPED|PASSED) |Failure|Expected|Which is|error|\[ cuda" | head -80
fi

if has decode_peer; then
  # PyTorch's batch-1 decode of the same shapes (gpt-fast recipe; DECODE_PEERS: ';' separated
  # "MODEL QUANT" pairs; COMPILE=0 captures the eager step in a CUDA graph by hand).
  stamp decode_peer
  : >"$OUT/gpu_decode_peer.jsonl"
  IFS=';' read -r -a DP <<<"${DECODE_PEERS:-llama3.2-1b int4;llama3.2-1b bf16}"
  for pair in "${DP[@]}"; do
    read -r model quant <<<"$pair"
    MODEL="$model" QUANT="$quant" COMPILE="${PEER_COMPILE:-0}" OUT="$LOGS" \
      timeout "$(lim "${DECODE_PEER_S:-90}")" python3 "$HERE/tools/gpu_decode_peer.py" 2>&1 |
      tail -4 | tee -a "$LOGS/decode_peer.log"
    # The peer writes gpu_decode_peer_MODEL_QUANT.json (older copies: gpu_decode_peer.json).
    for f in "$LOGS/gpu_decode_peer_${model}_${quant}.json" "$LOGS/gpu_decode_peer.json"; do
      [[ -f "$f" ]] && cat "$f" >>"$OUT/gpu_decode_peer.jsonl" && echo >>"$OUT/gpu_decode_peer.jsonl" && rm -f "$f"
    done
  done
fi

if has peers; then
  stamp peers
  SHAPES="$SHAPES" BATCH="$BATCH" OUT="$OUT" timeout "$(lim "${PEERS_S:-150}")" \
    python3 "$HERE/tools/gpu_peers.py" 2>&1 | tee "$LOGS/peers.log"
fi

if has bench; then
  stamp bench
  PEERS_ARG=()
  [[ -f "$OUT/gpu_peers.json" ]] && PEERS_ARG=(--peers "$OUT/gpu_peers.json")
  : >"$OUT/bench.jsonl"
  # Each line: extra options of one `qlinear bench` run (BENCH_RUNS overrides; ';' separates).
  IFS=';' read -r -a RUNS <<<"${BENCH_RUNS:---scheme $SCHEMES}"
  for run in "${RUNS[@]}"; do
    stamp "bench $run"
    # shellcheck disable=SC2086
    timeout "$(lim "${BENCH_RUN_S:-200}")" "$QL" bench --device cuda --shape "$SHAPES" --batch "$BATCH" \
      --act-dtype bf16 --out-dtype bf16 --json ${BENCH_QUICK:---quick} "${PEERS_ARG[@]}" $run \
      2>>"$LOGS/bench.err" | tee -a "$OUT/bench.jsonl" |
      python3 "$HERE/tools/print_bench.py"
  done
  tail -5 "$LOGS/bench.err"
fi

if has sanitizer; then
  stamp sanitizer
  QLINEAR_DEVICE_GRID=reduced timeout "$(lim "${SANITIZER_S:-120}")" compute-sanitizer --tool memcheck \
    --error-exitcode 3 "$TESTS" --gtest_color=no \
    --gtest_filter='Registry/CudaGrid.MatchesReference/*:CudaFp8Quantizer.*' \
    >"$LOGS/sanitizer.log" 2>&1
  echo "compute-sanitizer exit $?" | tee -a "$LOGS/sanitizer.log"
  grep -E "ERROR SUMMARY|Invalid|cuda grid|FAILED|PASSED" "$LOGS/sanitizer.log" | head -40
fi

if has report; then
  stamp report
  python3 "$HERE/tools/h200_report.py" "$OUT/bench.jsonl" "$OUT/gpu_peers.json" "$OUT/plots" \
    >"$LOGS/report.log" 2>&1 || tail -5 "$LOGS/report.log"
  (cd "$OUT" && tar czf plots.tgz plots && rm -rf plots) 2>/dev/null
fi

stamp done
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs)
ls -la "$OUT"
