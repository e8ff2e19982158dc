#!/usr/bin/env bash
# Runs one libFuzzer target for SECONDS from the committed seed corpus
# (read only: new inputs go to a scratch directory). A crash, leak, timeout
# or sanitizer report fails the run; its input is kept in ARTIFACTS.
#   run_fuzzer.sh FUZZER SEED_CORPUS SECONDS ARTIFACTS
set -euo pipefail
fuzzer=$1 seeds=$2 seconds=$3 artifacts=$4
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$artifacts"
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$artifacts/" "$scratch" "$seeds" \
  2> "$scratch.log" || { status=$?; tail -n 60 "$scratch.log"; rm -f "$scratch.log"; exit $status; }
grep -E "^stat::(number_of_executed_units|peak_rss_mb)|^Done " "$scratch.log" || true
rm -f "$scratch.log"
