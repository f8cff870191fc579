#!/usr/bin/env bash
# Headless Chromium for the report tests (crates/berth/tests/report.rs): Debian's package,
# installed when /usr/bin/chromium is missing (needs root, as on the CI machine); quick and
# silent when it is there. Prints the browser's path.
set -euo pipefail
chromium=/usr/bin/chromium
if [[ ! -x "$chromium" ]]; then
  if [[ "$(id -u)" != 0 ]]; then
    echo "error: $chromium is missing and installing it needs root: apt-get install -y chromium" >&2
    exit 1
  fi
  echo "installing Debian's chromium package for the report tests" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq chromium >&2
fi
echo "$chromium"
