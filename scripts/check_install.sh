#!/usr/bin/env bash
# Installs the release build (scripts/main.sh made it) to build/install and builds and runs the
# examples/consumer program against it with find_package(qlinear), shared and static.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d build ] || { echo "check_install: run scripts/main.sh first (no build/)"; exit 1; }
prefix="$PWD/build/install"
rm -rf "$prefix" build/consumer
cmake --install build --prefix "$prefix" >/dev/null
cmake -S examples/consumer -B build/consumer -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/consumer
model=build/example-model
[ -d "$model" ] || ./build/qlinear example --format awq --out "$model" >/dev/null
./build/consumer/consumer "$model"
./build/consumer/consumer_static "$model" >/dev/null
echo "check_install: the installed package builds and runs (shared and static)"
