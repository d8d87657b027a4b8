#!/usr/bin/env bash
# Perplexity of the default model (models/default) in every format `qlinear quantize` writes,
# on the first KIB KiB of its held-out text (never trained on, never used for calibration),
# windows of 256 tokens every 128 (Hugging Face's sliding-window recipe). Writes
# bench/results/accuracy-DATE.jsonl and prints the markdown table docs/accuracy.md holds.
#
#   bash tools/accuracy.sh [build/qlinear]        env: KIB=64  MODEL=models/default
set -euo pipefail
cd "$(dirname "$0")/.."
QL=${1:-build/qlinear}
MODEL=${MODEL:-models/default}
KIB=${KIB:-64}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
head -c $((KIB * 1024)) "$MODEL/heldout.txt" > "$work/heldout.txt"
calib="$MODEL/calib.txt"
out=bench/results/accuracy-$(date +%F).jsonl
: > "$out"

# name | quantize arguments ("" = the float model; "online-fp8" = --quantization fp8 at load)
configs=(
  "bf16 (float)|"
  "AWQ w4 g128, RTN + clip search|--format awq --bits 4 --group 128"
  "AWQ w4 g128, calibrated|--format awq --bits 4 --group 128 --calib $calib"
  "GPTQ w4 g128, RTN + clip search|--format gptq --bits 4 --group 128"
  "GPTQ w4 g128, calibrated|--format gptq --bits 4 --group 128 --calib $calib"
  "GPTQ w4 g128 act-order, calibrated|--format gptq --bits 4 --group 128 --act-order --calib $calib"
  "AutoRound w4 g128|--format autoround --bits 4 --group 128 --calib $calib"
  "compressed-tensors W4A16 g128|--format ct-w4a16 --bits 4 --group 128"
  "compressed-tensors W8A16 channelwise|--format ct-w8a16 --bits 8 --group -1"
  "compressed-tensors FP8 dynamic|--format ct-fp8-dynamic"
  "compressed-tensors FP8 static|--format ct-fp8-static --calib $calib"
  "FP8 block 128x128|--format fp8-block"
  "FP8 online (--quantization fp8)|online-fp8"
)
echo "| format | perplexity | vs float | checkpoint MB | quantize s |"
echo "|---|---|---|---|---|"
float_ppl=""
for entry in "${configs[@]}"; do
  name=${entry%%|*}
  args=${entry#*|}
  dir=$MODEL
  extra=()
  qs=0
  if [[ $args == online-fp8 ]]; then
    extra=(--quantization fp8)
  elif [[ -n $args ]]; then
    dir=$work/q
    rm -rf "$dir"
    start=$(date +%s%N)
    # shellcheck disable=SC2086
    "$QL" quantize --model "$MODEL" --out "$dir" $args > "$work/quantize.log" 2>&1 ||
      { echo "| $name | quantize failed: $(tail -1 "$work/quantize.log") | | | |"; continue; }
    qs=$(python3 -c "print(($(date +%s%N) - $start) / 1e9)")
  fi
  json=$("$QL" perplexity --model "$dir" --text "$work/heldout.txt" --ctx 256 --stride 128 \
         "${extra[@]}" --json)
  ppl=$(echo "$json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["perplexity"])')
  [[ -z $float_ppl ]] && float_ppl=$ppl
  mb=$(du -cm "$dir"/*.safetensors | tail -1 | cut -f1)
  printf '| %s | %.3f | %+.2f %% | %s | %.1f |\n' "$name" "$ppl" \
    "$(python3 -c "print(($ppl / $float_ppl - 1) * 100)")" "$mb" "$qs"
  echo "$json" | python3 -c "import json,sys; d=json.load(sys.stdin); d['format']='''$name'''; d['quantize_args']='''$args'''; d['quantize_s']=$qs; print(json.dumps(d))" >> "$out"
done
echo
echo "(first $KIB KiB of $MODEL/heldout.txt; raw records in $out)"
