#!/usr/bin/env bash
# The main job: the size models shipped inside MLBridgeInlineAdvisor.so and
# MLBridgePhaseOrder.so on held-out real code (libraries they never saw):
# plain clang-19 -Oz, the best stock size flags (chosen on the validation
# libraries), each plugin (the phase-ordering episode starts from two of
# those flags and decides where the IR outliner runs), and both plugins in one clang process -- .text and compile CPU per library; then the inliner's
# policy in Python serving stock clang-19 over named pipes, checked to
# decide the same. Then one held-out loop kernel distributed by
# MLBridgeLoopDistribution.so's built-in model (callgrind Ir against plain
# clang-19 -O3) and the register allocator MLBridgeRegAlloc.so against
# greedy on one held-out library (the allocation score). Last, a real
# project (libyaml, Debian's source package) built by its own autotools
# build with plain -Oz, the best flags and both size plugins as
# docs/deployment.md says, its own tests run, the linked .text compared.
# Installs, builds and fetches what is missing first. Arguments go to
# `python -m mlbridge.train.demo` (e.g. --libraries brotli snappy,
# --max-units 5).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh default --target mlbridge-llvm-plugins >/dev/null
export PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH}
.venv/bin/python -m mlbridge.train.demo "$@"
echo
echo "== Loop distribution chosen by the model compiled into MLBridgeLoopDistribution.so"
.venv/bin/python -m mlbridge.train loop-distribution demo
echo
echo "== Register allocation by the model compiled into MLBridgeRegAlloc.so"
.venv/bin/python -m mlbridge.train regalloc demo
echo
echo "== A real project through its own build system: libyaml with the size plugins (docs/deployment.md)"
.venv/bin/python -m mlbridge.builds run --projects libyaml --configs Oz,best,size --llvm 19 \
    --results build/demo/real-build.json --work build/demo/real-build --again
.venv/bin/python -m mlbridge.builds table --results build/demo/real-build.json
