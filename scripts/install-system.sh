#!/usr/bin/env bash
# Installs the Debian packages the project itself needs (load tools for benches,
# chromium for the report's browser test). Contestants' toolchains are installed by
# `serverbench install`, from each server.toml's [install] table.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
missing=()
while read -r pkg; do
  [[ -z "$pkg" || "$pkg" == \#* ]] && continue
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done < "$here/apt-packages.txt"
[[ ${#missing[@]} -eq 0 ]] && exit 0
if [[ $(id -u) -ne 0 ]]; then
  echo "serverbench: missing Debian packages: ${missing[*]}; install them with: sudo apt-get install -y ${missing[*]}" >&2
  exit 0
fi
echo "serverbench: installing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
