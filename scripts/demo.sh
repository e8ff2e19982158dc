#!/usr/bin/env bash
# The main job: a C++ "compiler" asks a Python model for advice over named
# pipes, with both SerDes, and prints the exchange. Installs and builds what
# is missing first.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh default --target mlbridge-demo >/dev/null
exec build/tools/mlbridge-demo "$@"
