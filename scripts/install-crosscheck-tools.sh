#!/usr/bin/env bash
# Installs the established load tools `serverbench crosscheck` compares loadgen with, at pinned
# versions: wrk and ab from Debian, oha and drill from crates.io (cargo install --locked), hey and
# k6 from the Go module proxy (go install), Locust from PyPI into its own venv. Everything but the
# Debian packages lands under .tools/ (ignored by git); executables are linked into .tools/bin.
# Not part of `make test`: the tests parse recorded outputs (tests/fixtures/crosscheck/).
# Usage: scripts/install-crosscheck-tools.sh [TOOL...]   (default: every tool)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
tools="$repo/.tools"
bin="$tools/bin"
mkdir -p "$bin"
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"

# The pinned versions (serverbench/crosscheck/tools.py names the same ones in `doctor`).
OHA_VERSION=1.16.0
DRILL_VERSION=0.9.1
HEY_VERSION=v0.1.5
K6_VERSION=v1.8.1
LOCUST_VERSION=2.47.0

failed=()
note() { echo "crosscheck-tools: $*"; }

apt_tool() {  # apt_tool EXE PACKAGE
  command -v "$1" >/dev/null && { note "$1 present ($(command -v "$1"))"; return 0; }
  if [[ $(id -u) -ne 0 ]]; then
    note "$1 missing; install it with: sudo apt-get install -y $2"; return 1
  fi
  note "installing $2 (apt)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$2" >/dev/null \
    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$2" >/dev/null; }
}

cargo_tool() {  # cargo_tool CRATE VERSION [cargo flags...]
  local crate=$1 version=$2; shift 2
  if [[ -x "$bin/$crate" ]] && "$bin/$crate" --version 2>/dev/null | grep -q "$version"; then
    note "$crate $version present"; return 0
  fi
  command -v cargo >/dev/null || { note "$crate needs cargo (rustup or apt-get install cargo)"; return 1; }
  note "building $crate $version (cargo install --locked, a few minutes on 2 cores)"
  cargo install --quiet --locked --root "$tools" "$crate" --version "$version" "$@"
}

go_tool() {  # go_tool EXE MODULE VERSION
  local exe=$1 module=$2 version=$3
  if [[ -x "$bin/$exe" && -f "$tools/$exe.version" && "$(cat "$tools/$exe.version")" == "$version" ]]; then
    note "$exe $version present"; return 0
  fi
  command -v go >/dev/null || { note "$exe needs go (apt-get install golang)"; return 1; }
  note "building $exe $version (go install from the module proxy)"
  GOBIN="$bin" GOFLAGS=-mod=mod GOTOOLCHAIN=local go install "$module@$version" && echo "$version" >"$tools/$exe.version"
}

locust_tool() {
  local venv="$tools/locust-venv"
  if [[ -x "$venv/bin/locust" ]] && "$venv/bin/locust" --version 2>/dev/null | grep -q "$LOCUST_VERSION"; then
    note "locust $LOCUST_VERSION present"
  else
    note "installing locust $LOCUST_VERSION (pip, own venv $venv)"
    python3 -m venv "$venv" && "$venv/bin/pip" install -q "locust==$LOCUST_VERSION" || return 1
  fi
  ln -sf "$venv/bin/locust" "$bin/locust"
}

install_one() {
  case "$1" in
    wrk) apt_tool wrk wrk ;;
    ab) apt_tool ab apache2-utils ;;
    oha) cargo_tool oha "$OHA_VERSION" ;;
    drill) cargo_tool drill "$DRILL_VERSION" ;;
    hey) go_tool hey github.com/rakyll/hey "$HEY_VERSION" ;;
    k6) go_tool k6 go.k6.io/k6 "$K6_VERSION" ;;
    locust) locust_tool ;;
    *) note "unknown tool '$1'; known: wrk ab oha drill hey k6 locust"; return 2 ;;
  esac
}

want=("$@")
[[ ${#want[@]} -eq 0 ]] && want=(wrk ab oha hey k6 drill locust)
for t in "${want[@]}"; do
  install_one "$t" || failed+=("$t")
done
if [[ ${#failed[@]} -gt 0 ]]; then
  note "not installed: ${failed[*]} (see the messages above)"
  exit 1
fi
note "done; executables in $bin"
