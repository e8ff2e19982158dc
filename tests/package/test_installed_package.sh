#!/bin/sh
# Installs the build tree into a temporary prefix, then builds and runs an
# out-of-tree consumer of one component with find_package(MLBridge CONFIG)
# and checks what the component installs for consumers without CMake.
#   core      MLBridge::mlbridge, and a C consumer built with pkg-config
#   onnx      MLBridge::onnx, which must find the ONNX Runtime installed with
#             MLBridge by itself and run a model, from C++ and C
#   compiled  a model compiled by the installed mlbridge-model-compiler
#             (mlbridge_add_compiled_model)
#   grpc      MLBridge::grpc from C++ and C, pkg-config mlbridge-grpc and the
#             installed .proto
# Usage: test_installed_package.sh <build-dir> <source-dir> [component]
set -eu
build=$1
src=$2
component=${3:-core}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null

# consume <consumer-source-dir> [cmake arguments]: configures and builds it
# (without ONNXRUNTIME_ROOT: the installed package finds its own).
consume() {
  dir=$1
  shift
  env -u ONNXRUNTIME_ROOT cmake -S "$dir" -B "$work/consumer" -G Ninja \
    -DCMAKE_PREFIX_PATH="$work/prefix" "$@" >/dev/null
  cmake --build "$work/consumer" >/dev/null
}
# pcdir <name>: the directory of the installed <name>.pc
pcdir() {
  dirname "$(find "$work/prefix" -name "$1.pc")"
}

case $component in
core)
  consume "$src/tests/package/consumer"
  "$work/consumer/consumer" "$work/no-such-channel"
  PKG_CONFIG_PATH="$(pcdir mlbridge)" pkg-config --exists mlbridge
  # shellcheck disable=SC2046
  cc -std=c99 -Wall -Wextra -Werror "$src/tests/package/consumer/consumer.c" \
    -o "$work/consumer_c" \
    $(PKG_CONFIG_PATH="$(pcdir mlbridge)" pkg-config --cflags --libs mlbridge)
  "$work/consumer_c" "$work/no-such-channel"
  ;;
onnx)
  test -e "$work/prefix/lib/libonnxruntime.so.1"
  test -f "$work/prefix/share/doc/mlbridge/onnxruntime/LICENSE"
  test -f "$work/prefix/share/doc/mlbridge/onnxruntime/ThirdPartyNotices.txt"
  consume "$src/tests/cpp/onnx/package"
  # The executables find libonnxruntime.so.1 in the prefix through their RPATH.
  ldd "$work/consumer/onnx_consumer" | grep -q "$work/prefix/lib/libonnxruntime.so.1"
  "$work/consumer/onnx_consumer" "$src/models/mlp_300_64_15.onnx"
  "$work/consumer/onnx_consumer_c" "$src/models/mlp_300_64_15.onnx"
  ;;
compiled)
  test -x "$work/prefix/bin/mlbridge-model-compiler"
  consume "$src/tests/cpp/compiled/package" \
    -DPOLICY_MODEL="$src/tests/cpp/compiled/models/policy_head.onnx"
  "$work/consumer/compiled_consumer"
  ;;
grpc)
  consume "$src/tests/cpp/grpc/consumer"
  "$work/consumer/grpc_consumer"
  "$work/consumer/grpc_consumer_c"
  PKG_CONFIG_PATH="$(pcdir mlbridge-grpc)" pkg-config --exists mlbridge-grpc
  PKG_CONFIG_PATH="$(pcdir mlbridge-grpc)" pkg-config --libs mlbridge-grpc |
    grep -q -- -lmlbridge_grpc
  test -f "$work/prefix/share/mlbridge/proto/mlbridge.proto"
  ;;
*)
  echo "test_installed_package.sh: unknown component '$component'" >&2
  exit 2
  ;;
esac
