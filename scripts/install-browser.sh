#!/usr/bin/env bash
# Debian's Chromium for the dashboard's end-to-end test (Playwright drives it; it never
# downloads a browser of its own). Needs apt-get and root; exits non-zero where it cannot.
set -euo pipefail
command -v chromium >/dev/null 2>&1 && exit 0
command -v apt-get >/dev/null 2>&1 || exit 1
[ "$(id -u)" = 0 ] || exit 1
apt-get update -qq >/dev/null
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
command -v chromium >/dev/null 2>&1
