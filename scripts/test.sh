#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test
# (labels unit, python, e2e), then the C++ and cross-process tests again
# under AddressSanitizer + UndefinedBehaviorSanitizer, and the tests that
# use threads (named "threads.*") under ThreadSanitizer. Every optional
# component must be built (--require-all-components): a missing dependency
# fails the configuration instead of skipping that component's tests.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh

echo "== build (RelWithDebInfo)"
scripts/build.sh --require-all-components default
echo "== tests (RelWithDebInfo)"
ctest --preset default -j2

echo "== build (ASan + UBSan)"
scripts/build.sh --require-all-components asan
echo "== tests (ASan + UBSan; pure-Python tests already ran above)"
ctest --preset asan -j2 -LE python

echo "== build (TSan)"
scripts/build.sh --require-all-components tsan
echo "== tests (TSan, tests named threads.*)"
ctest --preset tsan -j2 -R '^threads[.]' --no-tests=error
