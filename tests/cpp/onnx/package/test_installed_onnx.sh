#!/bin/sh
# Installs the build tree into a temporary prefix and builds an out-of-tree
# consumer of MLBridge::onnx, which must find ONNX Runtime by itself (the
# copy installed with MLBridge) and run a model, from C++ and C.
# Usage: test_installed_onnx.sh <build-dir> <source-dir>
set -eu
build=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
test -e "$work/prefix/lib/libonnxruntime.so.1"
test -f "$work/prefix/share/doc/mlbridge/onnxruntime/LICENSE"
test -f "$work/prefix/share/doc/mlbridge/onnxruntime/ThirdPartyNotices.txt"
env -u ONNXRUNTIME_ROOT cmake -S "$src/tests/cpp/onnx/package" -B "$work/consumer" \
  -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
# The executables find libonnxruntime.so.1 in the prefix through their RPATH.
ldd "$work/consumer/onnx_consumer" | grep -q "$work/prefix/lib/libonnxruntime.so.1"
"$work/consumer/onnx_consumer" "$src/models/mlp_300_64_15.onnx"
"$work/consumer/onnx_consumer_c" "$src/models/mlp_300_64_15.onnx"
