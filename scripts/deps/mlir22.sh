#!/usr/bin/env bash
# MLIR 22 beside MLIR 19 without installing it (docs/mlir.md, "MLIR 22"):
# Debian's libmlir-19-dev and libmlir-22-dev conflict (installing one
# removes the other), so this downloads libmlir-22, libmlir-22-dev and
# mlir-22-tools with `apt-get download` (apt checks them against the signed
# archive) and unpacks them with `dpkg -x` into DEST, default .deps/mlir22:
#   DEST/usr/lib/llvm-22/include/mlir/...   the headers the plugin builds with
#   DEST/usr/lib/llvm-22/bin/mlir-opt       the mlir-opt-22 that loads it
#   DEST/usr/lib/llvm-22/lib/libMLIR.so.22.1
# The packages are the version of the installed LLVM 22 (libllvm22, from
# scripts/deps/llvm22.apt): the extracted libMLIR links that libLLVM.so.22.1,
# found in the system's library path, so mlir-opt runs with no
# LD_LIBRARY_PATH (its RPATH finds libMLIR next to it). Then configure with
#   cmake --preset default -DMLBRIDGE_MLIR22_ROOT=$PWD/.deps/mlir22
# Opt-in (809 MB unpacked; the default build does not use it): it extracts
# only when asked -- a DEST argument, or MLBRIDGE_MLIR22=1 in the
# environment (`MLBRIDGE_MLIR22=1 scripts/install-deps.sh`, which runs every
# scripts/deps/*.sh) -- or when DEST holds an earlier extraction, which it
# keeps at the installed LLVM 22's version (delete DEST to opt out again).
# Idempotent: does nothing when the stamp matches the LLVM 22 version.
#   usage: [MLBRIDGE_MLIR22=1] scripts/deps/mlir22.sh [DEST]
set -euo pipefail
cd "$(dirname "$0")/../.."
DEPS_NAME=mlir22.sh
source scripts/deps/lib/install.sh

DEST=${1:-.deps/mlir22}
if [[ $# -eq 0 && ${MLBRIDGE_MLIR22:-} != 1 && ! -f $DEST/.installed ]]; then
  echo "install-deps: MLIR 22 not extracted (opt-in, for the MLIR 22 build only: MLBRIDGE_MLIR22=1; docs/mlir.md)"
  exit 0
fi
PACKAGES=(libmlir-22 libmlir-22-dev mlir-22-tools)
deps_require " (Debian: apt, dpkg)" apt-get dpkg dpkg-query
version=$(dpkg-query -W -f='${Version}' libllvm22 2>/dev/null) ||
  deps_fail "LLVM 22 is not installed (scripts/deps/llvm22.apt: llvm-22, llvm-22-dev)"
want="${PACKAGES[*]} $version"
if deps_installed "$DEST/.installed" "$want" "$DEST/usr/lib/llvm-22/bin/mlir-opt" \
     "$DEST/usr/lib/llvm-22/include/mlir/Tools/Plugins/PassPlugin.h"; then
  exit 0
fi

echo "install-deps: MLIR $version extracted (not installed) into $DEST"
mkdir -p "$(dirname "$DEST")"
work=$(realpath "$(mktemp -d "$DEST.tmp.XXXXXX")")
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download "${PACKAGES[@]/%/=$version}" >/dev/null 2>"$work/apt.log") ||
  deps_fail "apt-get download failed: $(tail -3 "$work/apt.log")"
mkdir "$work/root"
for deb in "$work"/*.deb; do
  dpkg -x "$deb" "$work/root"
done
"$work/root/usr/lib/llvm-22/bin/mlir-opt" --version >/dev/null ||
  deps_fail "the extracted mlir-opt does not run (is libllvm22 $version installed?)"
deps_commit "$work/root" "$DEST" "$want" "MLIR $version"
