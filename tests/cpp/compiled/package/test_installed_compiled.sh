#!/bin/sh
# Installs the build tree into a temporary prefix, then builds and runs an
# out-of-tree project that compiles an ONNX model with the installed
# mlbridge-model-compiler (find_package(MLBridge) + mlbridge_add_compiled_model).
# Usage: test_installed_compiled.sh <build-dir> <source-dir>
set -eu
build=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
test -x "$work/prefix/bin/mlbridge-model-compiler"
cmake -S "$src/tests/cpp/compiled/package" -B "$work/consumer" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DPOLICY_MODEL="$src/tests/cpp/compiled/models/policy_head.onnx" >/dev/null
cmake --build "$work/consumer" >/dev/null
"$work/consumer/compiled_consumer"
