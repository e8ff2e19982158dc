#!/usr/bin/env bash
# The main job: the inlining-for-size model shipped inside
# MLBridgeInlineAdvisor.so, on held-out real code (libraries it never saw):
# plain clang-19 -Oz vs clang-19 -Oz with the plugin, .text and compile CPU
# per library; then the same policy in Python serving stock clang-19 over
# named pipes, checked to decide the same; then the phase-ordering policy
# built into MLBridgePhaseOrder.so on the same units. Installs, builds and fetches what
# is missing first. Arguments go to `python -m mlbridge.train.demo`
# (e.g. --libraries brotli snappy, --max-units 5).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh default --target mlbridge-llvm-plugins >/dev/null
export PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH}
exec .venv/bin/python -m mlbridge.train.demo "$@"
