#!/bin/sh
# Installs the build tree into a temporary prefix, then builds and runs two
# out-of-tree consumers: one with find_package(MLBridge CONFIG), one with
# pkg-config. Usage: test_installed_package.sh <build-dir> <source-dir>
set -eu
build=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$src/tests/package/consumer" -B "$work/consumer" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
"$work/consumer/consumer" "$work/no-such-channel"
PKG_CONFIG_PATH="$(dirname "$(find "$work/prefix" -name mlbridge.pc)")" pkg-config --exists mlbridge
# shellcheck disable=SC2046
cc -std=c99 -Wall -Wextra -Werror "$src/tests/package/consumer/consumer.c" \
  -o "$work/consumer_c" \
  $(PKG_CONFIG_PATH="$(dirname "$(find "$work/prefix" -name mlbridge.pc)")" pkg-config --cflags --libs mlbridge)
"$work/consumer_c" "$work/no-such-channel"
