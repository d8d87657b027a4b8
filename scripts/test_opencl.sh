#!/usr/bin/env bash
# The OpenCL backend on PoCL (a CPU OpenCL device), without sanitizers: builds build-opencl-tests
# (RelWithDebInfo, tests, warnings as errors) and runs every OpenCL test — the registry-wide kernel
# grid of each OpenCL kernel, the decoder ops against the CPU ops, every fixture format and the
# Hugging Face goldens through the OpenCL decoder, --tp 2 there, device discovery, the Intel
# targets in explain — then the offline Intel compile check (scripts/check_ocloc.sh).
# Not part of .ci/run: this is a second build of the whole library (docs/opencl.md, "CI").
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
missing=()
for p in pocl-opencl-icd clinfo libclblast-dev intel-opencl-icd; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
clinfo -l
cmake -S . -B build-opencl-tests -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DQLINEAR_WITH_OPENCL=ON -DQLINEAR_BUILD_TESTS=ON -DQLINEAR_WARNINGS_AS_ERRORS=ON >/dev/null
cmake --build build-opencl-tests -j "$(nproc)" --target qlinear kernels_tests model_tests \
  explain_layer_tests
ctest --test-dir build-opencl-tests -j "$(nproc)" --output-on-failure \
  -R 'opencl|OpenCl|HfGolden|ExplainIntel'
bash scripts/check_ocloc.sh
