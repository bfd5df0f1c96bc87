#!/usr/bin/env bash
# Browser tests drive Debian's Chromium through Playwright (Playwright's own browser download does not work
# offline). Install it when missing and we are root on Debian; otherwise say what to do.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium
else
  echo "Browser tests need /usr/bin/chromium: install Debian's 'chromium' package (sudo apt-get install chromium)." >&2
  exit 1
fi
