#!/usr/bin/env bash
# Installs everything the project needs, idempotently:
#  * Debian packages listed in scripts/deps/*.apt (one package per line),
#  * the project virtualenv .venv with the pinned PyPI packages of
#    python/requirements/*.txt (one pip call, so pins are resolved together),
#  * component installers scripts/deps/*.sh (e.g. ONNX Runtime from npm),
#    run in name order; each must itself be idempotent. Opt-in parts ask
#    for an environment variable (MLBRIDGE_MLIR22=1: MLIR 22 for the
#    MLIR 22 build, docs/mlir.md).
# Safe to run again; it only does work when something is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
[[ $(id -u) -ne 0 ]] && SUDO="sudo"

# Debian's source archive for the real-project builds (python/mlbridge/builds:
# apt-get source --download-only): a deb-src entry with the URIs and suites of
# the deb entry of the Debian archive (not the security archive), in a file of
# its own. Debian's sources in deb822 (*.sources) or one-line form (*.list).
DEB_SRC=/etc/apt/sources.list.d/mlbridge-deb-src.sources
deb_src_entry() {  # prints the first entry found
  local f entry
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -e $f ]] || continue
    entry=$(awk 'BEGIN { RS = ""; FS = "\n" }
      { t = u = s = k = ""
        for (i = 1; i <= NF; i++) {
          if ($i ~ /^Types:/) t = $i; else if ($i ~ /^URIs:/) u = $i
          else if ($i ~ /^Suites:/) s = $i; else if ($i ~ /^Signed-By:/) k = $i }
        if (t ~ /[ \t]deb([ \t]|$)/ && u ~ /\/debian\/?([ \t]|$)/) {
          print "Types: deb-src"; print u; print s; print "Components: main"
          if (k != "") print k; exit } }' "$f")
    [[ -n $entry ]] && { printf '%s\n' "$entry"; return; }
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -e $f ]] || continue
    entry=$(awk '$1 == "deb" && $2 ~ /\/debian\/?$/ { s = s " " $3; u = $2 }
      END { if (u != "") { print "Types: deb-src"; print "URIs: " u
            print "Suites:" s; print "Components: main" } }' "$f")
    [[ -n $entry ]] && { printf '%s\n' "$entry"; return; }
  done
  return 0
}
if [[ ! -f $DEB_SRC ]]; then
  entry=$(deb_src_entry)
  if [[ -n $entry ]]; then
    echo "install-deps: adding Debian's source archive ($DEB_SRC)"
    printf '%s\n' "$entry" | $SUDO tee "$DEB_SRC" >/dev/null
    $SUDO apt-get update -qq
  else
    echo "install-deps: no deb entry of the Debian archive found; the real-project builds" \
         "need a deb-src entry (python -m mlbridge.builds fetch says so)" >&2
  fi
fi

mapfile -t APT_PACKAGES < <(cat scripts/deps/*.apt | sed 's/#.*//' | awk 'NF {print $1}' | sort -u)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: apt-get install ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

# One project virtualenv from Debian's interpreter, so Debian's python3-*
# packages (e.g. python3-torch) stay visible to it.
VENV=.venv
if [[ ! -x $VENV/bin/python ]]; then
  echo "install-deps: creating $VENV"
  /usr/bin/python3 -m venv --system-site-packages "$VENV"
fi
stamp=$VENV/.requirements.sha256
want=$(cat python/requirements/*.txt python/pyproject.toml | sha256sum | cut -d' ' -f1)
if [[ ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
  echo "install-deps: pip install -r python/requirements/*.txt"
  reqs=()
  for f in python/requirements/*.txt; do reqs+=(-r "$f"); done
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "${reqs[@]}"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps -e ./python
  echo "$want" > "$stamp"
fi

for script in scripts/deps/*.sh; do
  [[ -e $script ]] || continue
  bash "$script"
done
