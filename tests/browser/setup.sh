#!/usr/bin/env bash
# Installs what the browser test (tests/test_export_html.py -m browser) needs, when missing:
# Debian's chromium (playwright cannot download a browser here, so it drives the system one)
# and the npm package playwright-core pinned in package.json / package-lock.json.
# Safe to run every time: with both present it does nothing.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
chromium="${CHROMIUM_PATH:-/usr/bin/chromium}"

if [ ! -x "$chromium" ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "setup.sh: $chromium is missing; as root run: apt-get install -y chromium chromium-driver" >&2
		exit 1
	fi
	echo "setup.sh: installing chromium" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >/dev/null
	apt-get install -y -q chromium chromium-driver >/dev/null
fi

if [ ! -d "$here/node_modules/playwright-core" ]; then
	echo "setup.sh: installing playwright-core" >&2
	# the browser comes from Debian: keep any postinstall from trying to download one
	export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
	if [ -f "$here/package-lock.json" ]; then
		(cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
	else
		(cd "$here" && npm install --no-audit --no-fund --loglevel=error)
	fi
fi
