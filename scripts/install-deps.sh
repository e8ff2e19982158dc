#!/usr/bin/env bash
# Installs everything the project needs, idempotently: Debian packages (apt)
# and the project's Python virtualenv (.venv) with pinned PyPI packages.
# Safe to run again; it only does work when something is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian 12 packages. Versions are pinned by Debian's stable release (and
# LLVM by its major version in the package name); the versions tested are
# recorded in scripts/tested-versions.txt.
APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libgtest-dev
  python3 python3-venv python3-pip
  llvm-19 clang-19
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: apt-get install ${missing[*]}"
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

# One project virtualenv from Debian's interpreter, so Debian's python3-*
# packages stay visible to it (DESIGN §5).
VENV=.venv
if [[ ! -x $VENV/bin/python ]]; then
  echo "install-deps: creating $VENV"
  /usr/bin/python3 -m venv --system-site-packages "$VENV"
fi
stamp=$VENV/.requirements.sha256
want=$(sha256sum python/requirements.txt python/pyproject.toml | sha256sum | cut -d' ' -f1)
if [[ ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
  echo "install-deps: pip install -r python/requirements.txt"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r python/requirements.txt
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps -e ./python
  echo "$want" > "$stamp"
fi
