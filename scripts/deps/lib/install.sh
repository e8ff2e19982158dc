# Shared by the component installers in scripts/deps/ (sourced, not run):
# the stamp check that makes them idempotent, the checks on what they
# download, and the staged install that never leaves a half-written DEST.
# Messages name the installer ($DEPS_NAME, set before sourcing).

# deps_installed STAMP WANT FILE...: true when STAMP holds WANT and every
# FILE exists.
deps_installed() {
  local stamp=$1 want=$2 f
  shift 2
  [[ -f $stamp && $(cat "$stamp") == "$want" ]] || return 1
  for f; do
    [[ -f $f ]] || return 1
  done
}

# deps_fail MESSAGE...: the message on stderr, then exit 1.
deps_fail() {
  echo "$DEPS_NAME: $*" >&2
  exit 1
}

# deps_require HINT TOOL...: every TOOL is on PATH (HINT says where from).
deps_require() {
  local hint=$1 tool
  shift
  for tool; do
    command -v "$tool" >/dev/null || deps_fail "'$tool' is required$hint"
  done
}

# deps_workdir: sets `work` to a fresh directory under .deps, removed on exit.
deps_workdir() {
  mkdir -p .deps
  work=$(mktemp -d ".deps/${DEPS_NAME%.sh}-tmp.XXXXXX")
  trap 'rm -rf "$work"' EXIT
}

# deps_check ALGO EXPECTED FILE WHAT: FILE's ALGO (sha256, sha512) digest is
# EXPECTED.
deps_check() {
  local got
  got=$("${1}sum" "$3" | cut -d' ' -f1)
  if [[ $got != "$2" ]]; then
    echo "$DEPS_NAME: $1 mismatch for $4 ($3)" >&2
    echo "  expected $2" >&2
    echo "  got      $got" >&2
    exit 1
  fi
}

# deps_commit STAGE DEST WANT WHAT: stamps STAGE with WANT and puts it in
# place of DEST.
deps_commit() {
  echo "$3" > "$1/.installed"
  rm -rf "$2"
  mv "$1" "$2"
  echo "install-deps: $4 installed in $2"
}
