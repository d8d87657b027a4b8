# Sourced by the device scripts (step_profile.sh, diag.sh): HERE, OUT, the binaries that
# tests/device/stage.sh ships (unpacked on first use), LD_LIBRARY_PATH, QL and NCU.
# HERE is this file's own folder (stage.sh puts it beside the payload), so a call script anywhere
# (.carry/callN.sh) can source it.
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="${OUT:-$HERE/out}"
mkdir -p "$OUT"
[[ -f "$HERE/payload.tar.xz" && ! -d "$HERE/bin" ]] && tar xJf "$HERE/payload.tar.xz" -C "$HERE"
export LD_LIBRARY_PATH="$HERE/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
QL="$HERE/bin/qlinear"
NCU="$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)"
