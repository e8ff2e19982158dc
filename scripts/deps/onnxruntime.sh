#!/usr/bin/env bash
# Installs ONNX Runtime 1.29.0 (headers + Linux x64 library) into
# .deps/onnxruntime-1.29.0/ in the layout of an official release:
#   include/onnxruntime_c_api.h ...   lib/libonnxruntime.so.1.29.0 (+ .so.1, .so)
#   LICENSE, ThirdPartyNotices.txt, VERSION_NUMBER, SOURCE
# Source: the npm package com.github.asus4.onnxruntime@0.4.9 (MIT, a
# repackaged official release), checked against its pinned sha512 before
# anything is extracted. Its library and ThirdPartyNotices.txt are then
# checked byte for byte against Microsoft's own package: the sha256 below
# are those of ai/onnxruntime/native/linux-x64/libonnxruntime.so and
# ThirdPartyNotices.txt in Maven Central's com.microsoft.onnxruntime:
# onnxruntime:1.29.0 jar. Why not Microsoft's packages directly: the jar has
# no C headers; npm's onnxruntime-node@1.29.0 (Microsoft) ships a different,
# CUDA/TensorRT-capable 44 MB build of the library and no headers or
# licence file; the Android AAR that carries the headers
# (com.microsoft.onnxruntime:onnxruntime-android) is not on the reachable
# Maven Central mirror. docs/onnx-runtime.md says how to use an official
# release instead (-DONNXRUNTIME_ROOT). Idempotent: does nothing when the
# stamp file matches.
set -euo pipefail
cd "$(dirname "$0")/../.."
DEPS_NAME=onnxruntime.sh
source scripts/deps/lib/install.sh

ORT_VERSION=1.29.0
NPM_PACKAGE=com.github.asus4.onnxruntime
NPM_VERSION=0.4.9
NPM_SHA512=064cf176e499f4891e0cfe90f25cf64c553689eee1492bd2ed921fccca28131a2ad02373267bae19a509ec8b288c182a3b8a2e0f58d76a1f0e63225b08ddbd16
# Microsoft's files (Maven Central, com.microsoft.onnxruntime:onnxruntime:1.29.0).
MS_LIB_SHA256=5715f06d8992ca8eeeddcce43df3a7d38f97d537052126f558e912cb312460ca
MS_NOTICES_SHA256=4c5b864d8974c94b37461f38163facef79a1bb5dea461667ee9e5be6a8e73f83
DEST=.deps/onnxruntime-$ORT_VERSION
STAMP=$DEST/.installed

if deps_installed "$STAMP" "$NPM_SHA512" "$DEST/lib/libonnxruntime.so.$ORT_VERSION" \
     "$DEST/include/onnxruntime_c_api.h"; then
  exit 0
fi
if [[ $(uname -s)/$(uname -m) != Linux/x86_64 ]]; then
  deps_fail "the npm package only has a Linux x86_64 library;" \
            "install an official ONNX Runtime release and configure with -DONNXRUNTIME_ROOT=<dir>"
fi
deps_require " (npm comes with Node.js; unzip with scripts/deps/onnx.apt)" npm unzip sha512sum tar

echo "install-deps: ONNX Runtime $ORT_VERSION from npm $NPM_PACKAGE@$NPM_VERSION"
deps_workdir

tarball=$(cd "$work" && npm pack --silent --loglevel=error "$NPM_PACKAGE@$NPM_VERSION" 2>/dev/null | tail -n1)
[[ -f $work/$tarball ]] || deps_fail "npm pack did not produce a tarball"
deps_check sha512 "$NPM_SHA512" "$work/$tarball" "the npm package"

tar -xzf "$work/$tarball" -C "$work" \
  package/LICENSE package/ThirdPartyNotices.txt package/package.json \
  package/Plugins/Linux/x64/libonnxruntime.so \
  package/Plugins/Linux/x64/libonnxruntime_providers_shared.so \
  package/Plugins/Android/onnxruntime.aar
microsoft="Microsoft's file (com.microsoft.onnxruntime:onnxruntime:$ORT_VERSION)"
deps_check sha256 "$MS_LIB_SHA256" "$work/package/Plugins/Linux/x64/libonnxruntime.so" "$microsoft"
deps_check sha256 "$MS_NOTICES_SHA256" "$work/package/ThirdPartyNotices.txt" "$microsoft"
stage=$work/stage
mkdir -p "$stage/include" "$stage/lib"
# The official C/C++ headers are in the Android archive (identical for all
# platforms); the .aar is a zip file.
unzip -q -j "$work/package/Plugins/Android/onnxruntime.aar" 'headers/*' -d "$stage/include"
api=$(cut -d. -f2 <<<"$ORT_VERSION")
grep -Eq "^#define ORT_API_VERSION $api\b" "$stage/include/onnxruntime_c_api.h" \
  || deps_fail "the headers are not those of ONNX Runtime $ORT_VERSION"
install -m 0644 "$work/package/Plugins/Linux/x64/libonnxruntime.so" "$stage/lib/libonnxruntime.so.$ORT_VERSION"
install -m 0644 "$work/package/Plugins/Linux/x64/libonnxruntime_providers_shared.so" "$stage/lib/"
ln -s "libonnxruntime.so.$ORT_VERSION" "$stage/lib/libonnxruntime.so.1"
ln -s libonnxruntime.so.1 "$stage/lib/libonnxruntime.so"
cp "$work/package/LICENSE" "$work/package/ThirdPartyNotices.txt" "$stage/"
cp "$work/package/package.json" "$stage/npm-package.json"
echo "$ORT_VERSION" > "$stage/VERSION_NUMBER"
cat > "$stage/SOURCE" <<SRC
ONNX Runtime $ORT_VERSION (Linux x86_64, CPU), from the npm package
$NPM_PACKAGE@$NPM_VERSION (sha512 $NPM_SHA512),
installed by scripts/deps/onnxruntime.sh. The library and ThirdPartyNotices.txt
are byte-identical to those of Microsoft's com.microsoft.onnxruntime:onnxruntime:$ORT_VERSION
(sha256 $MS_LIB_SHA256 and $MS_NOTICES_SHA256).
Licence: LICENSE (MIT) and ThirdPartyNotices.txt.
SRC
deps_commit "$stage" "$DEST" "$NPM_SHA512" "ONNX Runtime"
