#!/usr/bin/env bash
# Configures and builds one CMake preset (default: "default").
# Usage: scripts/build.sh [--require-all-components] [default|asan|tsan]
#                         [extra cmake --build args]
# --require-all-components: configuring fails if an optional component
# (gRPC, ONNX Runtime, TF-AOT, the model compiler, the LLVM plugins) cannot
# be built, instead of building without it (scripts/test.sh uses it).
set -euo pipefail
cd "$(dirname "$0")/.."
require_all=OFF
if [[ ${1:-} == --require-all-components ]]; then
  require_all=ON
  shift
fi
preset=${1:-default}
shift || true
cmake --preset "$preset" -DMLBRIDGE_REQUIRE_ALL_COMPONENTS=$require_all >/dev/null
cmake --build --preset "$preset" "$@"
