#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test
# (labels unit, python, e2e), then the C++ tests again under
# AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh

echo "== build (RelWithDebInfo)"
scripts/build.sh default
echo "== tests (RelWithDebInfo)"
ctest --preset default -j2

echo "== build (ASan + UBSan)"
scripts/build.sh asan
echo "== tests (ASan + UBSan; pure-Python tests already ran above)"
ctest --preset asan -j2 -LE python
