#!/usr/bin/env bash
# Builds the libFuzzer targets (the fuzz preset: clang, ASan + UBSan, coverage for libFuzzer)
# and runs each for SECONDS (default 60) on a seed corpus generated from the fixture
# checkpoints (fuzz/make_seeds.cc). Fails when any target finds a crash, a leak, a sanitizer
# report, a timeout (> 10 s for one input) or an input needing more than 2 GiB.
#   bash scripts/fuzz.sh            # 60 s per target
#   bash scripts/fuzz.sh 15         # what CI runs
#   FUZZ_TARGETS="fuzz_shard_index" bash scripts/fuzz.sh 600
#   FUZZ_NO_BUILD=1 bash scripts/fuzz.sh 60   # the binaries already in build-fuzz/fuzz
# Crash reproducers land in build-fuzz/fuzz/artifacts/; the grown corpora in
# build-fuzz/fuzz/corpus/<target>/ (kept between runs, so longer runs resume).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
all_targets="fuzz_safetensors_header fuzz_shard_index fuzz_config fuzz_quant_awq fuzz_quant_gptq
fuzz_quant_auto_round fuzz_quant_compressed_tensors fuzz_quant_fp8 fuzz_quant_any fuzz_tokenizer"
targets=${FUZZ_TARGETS:-$all_targets}
jobs=${FUZZ_BUILD_JOBS:-2}

# The seed writer needs the whole library; the ci build (scripts/test.sh) already has it, so the
# clang build then compiles only the parsers the targets link. FUZZ_SEEDS_FROM: another build.
seeds_build=${FUZZ_SEEDS_FROM:-build-ci}
make_seeds="$seeds_build/fuzz/make_seeds"
if [ -z "${FUZZ_NO_BUILD:-}" ]; then
  cmake --preset fuzz >/dev/null
  if [ -d "$seeds_build" ] && cmake --build "$seeds_build" -j "$jobs" --target make_seeds >/dev/null; then
    echo "seeds: $make_seeds"
  else
    make_seeds=build-fuzz/fuzz/make_seeds
    targets_to_build="make_seeds"
  fi
  # shellcheck disable=SC2086
  cmake --build build-fuzz -j "$jobs" --target ${targets_to_build:-} $targets
fi
[ -x "$make_seeds" ] || make_seeds=build-fuzz/fuzz/make_seeds

out=build-fuzz/fuzz
rm -rf "$out/seeds"
"$make_seeds" "$out/seeds" >/dev/null
mkdir -p "$out/artifacts"

seeds_of() {
  case "$1" in
    fuzz_safetensors_header) echo safetensors ;;
    fuzz_shard_index) echo index ;;
    fuzz_config) echo config ;;
    fuzz_tokenizer) echo tokenizer ;;
    *) echo quant ;;
  esac
}

# The synthetic tokenizer seeds are up to ~120 KiB; every other input is a few KiB.
max_len_of() {
  case "$1" in
    fuzz_tokenizer) echo 262144 ;;
    *) echo 65536 ;;
  esac
}

failed=0
for target in $targets; do
  corpus="$out/corpus/$target"
  mkdir -p "$corpus"
  log="$out/$target.log"
  # The first folder receives new inputs; the seeds folder is read only.
  if ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
     UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
     "$out/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len="$(max_len_of "$target")" \
       -print_final_stats=1 -artifact_prefix="$out/artifacts/$target-" \
       "$corpus" "$out/seeds/$(seeds_of "$target")" >"$log" 2>&1; then
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo '?')
    printf '%-32s ok  %10s execs  cov %6s  corpus %5s files\n' "$target" "$execs" "$cov" \
      "$(find "$corpus" -type f | wc -l)"
  else
    echo "$target FAILED (log: $log)"
    tail -40 "$log"
    failed=1
  fi
done
exit "$failed"
