#!/usr/bin/env bash
# `npm run test:cluster` drives the Temporal UI with Debian's headless Chromium (test/cluster/operator-ui.test.ts).
# Installs the `chromium` package when /usr/bin/chromium (or $CHROMIUM) is absent; safe to run again.
set -euo pipefail
browser=${CHROMIUM:-/usr/bin/chromium}
[ -x "$browser" ] && exit 0
if [ -n "${CHROMIUM:-}" ]; then
  echo "CHROMIUM=$CHROMIUM is not an executable file" >&2
  exit 1
fi
as_root=()
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { echo "chromium is not installed and this user cannot install it: apt-get install chromium as root" >&2; exit 1; }
  as_root=(sudo)
fi
echo "installing Debian's chromium (apt-get) for the Temporal UI test"
"${as_root[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends chromium >/dev/null
[ -x "$browser" ] || { echo "apt-get installed chromium but $browser is missing" >&2; exit 1; }
