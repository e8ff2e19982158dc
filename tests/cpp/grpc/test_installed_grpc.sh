#!/bin/sh
# Installs the build tree into a temporary prefix, then builds and runs an
# out-of-tree consumer of MLBridge::grpc with find_package(MLBridge
# COMPONENTS grpc), and checks the pkg-config file.
# Usage: test_installed_grpc.sh <build-dir> <consumer-source-dir>
set -eu
build=$1
consumer=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$consumer" -B "$work/consumer" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
"$work/consumer/grpc_consumer"
"$work/consumer/grpc_consumer_c"
pcdir=$(dirname "$(find "$work/prefix" -name mlbridge-grpc.pc)")
PKG_CONFIG_PATH="$pcdir" pkg-config --exists mlbridge-grpc
PKG_CONFIG_PATH="$pcdir" pkg-config --libs mlbridge-grpc | grep -q -- -lmlbridge_grpc
test -f "$work/prefix/share/mlbridge/proto/mlbridge.proto"
