#!/usr/bin/env bash
# Trains the inlining-for-size policy the way the shipped one was trained
# (docs/training.md): corpus fetched, plugins built, Ray started in-process
# with two compiler workers. Output folder: $1 (default runs/inliner).
# Extra arguments go to `python -m mlbridge.train inliner train` (e.g. --address auto).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-runs/inliner}
shift || true
scripts/install-deps.sh
scripts/build.sh default --target mlbridge-llvm-plugins >/dev/null
export PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH}
.venv/bin/python -m mlbridge.corpus fetch
exec .venv/bin/python -m mlbridge.train inliner train --out "$out" --workers 2 --iterations 8 \
  --pairs 4 --modules-per-iteration 8 --eval-every 4 --max-train 100 "$@"
