#!/usr/bin/env bash
# Compiles every OpenCL kernel file (common.cl + the file, as the runtime builds it) offline with
# Intel's ocloc for Intel GPU targets, without a GPU; fails on any compile error. Default targets:
# tgllp (Xe-LP, integrated: subgroups, fp16, no DPAS) and dg2-g10 (Xe-HPG, Arc A770: DPAS).
# On the DPAS targets the DPAS kernel is compiled with -Dcl_intel_subgroup_matrix_multiply_accumulate
# (as the host does on a device listing that extension: this IGC declares the built-in only under
# the macro and never defines it) and -DQL_REQUIRE_DPAS (an #error if the body were left out);
# no log may say "INVALID opcode" (IGC's note when a target has no DPAS).
# Usage: scripts/check_ocloc.sh [target...]   (installs intel-opencl-icd, which ships ocloc)
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v ocloc >/dev/null; then
  echo "installing intel-opencl-icd (ships ocloc)"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends intel-opencl-icd
fi
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(tgllp dg2-g10)
dpas_targets=" dg2-g10 dg2-g11 dg2-g12 acm-g10 acm-g11 acm-g12 ats-m150 ats-m75 xe-hpg "
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
for target in "${targets[@]}"; do
  for file in src/kernels/opencl/*.cl; do
    name=$(basename "$file" .cl)
    [ "$name" = common ] && continue
    options="-cl-std=CL1.2"
    if [ "$name" = fp8_w8a8_dpas_intel ]; then
      # Without DPAS the kernel compiles to nothing (the registry never picks it there).
      [[ "$dpas_targets" == *" $target "* ]] && options+=" -Dcl_intel_subgroup_matrix_multiply_accumulate -DQL_REQUIRE_DPAS"
    fi
    { cat src/kernels/opencl/common.cl; printf '\n#line 1 "%s.cl"\n' "$name"; cat "$file"; } \
      > "$work/$name.cl"
    if (cd "$work" && ocloc compile -q -file "$name.cl" -device "$target" -options "$options" \
          -out_dir "$work/out" > "$work/$name.$target.log" 2>&1) &&
       ! grep -q "INVALID" "$work/$name.$target.log"; then
      echo "ocloc $target: $name ok ($options)"
    else
      echo "ocloc $target: $name FAILED ($options)"
      cat "$work/$name.$target.log"
      failed=1
    fi
  done
done
exit $failed
