#!/bin/bash
# What 'make demo' needs beyond the build: perf's flame-graph template from
# the d3-flame-graph 4.1.3 npm package (self-contained, so the HTML needs no
# network at view time), and playwright-core, which drives Debian's
# Chromium (from 'make deps') to render it headless: demo/render.js; and the
# demo guest's kernel, Debian's stock cloud kernel (demo/stock-kernel.sh).
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"

TEMPLATE_MD5=143e0d06ba69b8370b9848dcd6ae3f36	# the md5 perf's flamegraph.py checks
template=$FLAMEGRAPH_TEMPLATE
playwright=$NPMDIR/node_modules/playwright-core/package.json
if ! echo "$TEMPLATE_MD5  $template" | md5sum -c --status 2>/dev/null ||
	! grep -q '"version": "1.49.1"' "$playwright" 2>/dev/null; then
	command -v npm >/dev/null || die "npm missing: run 'make deps' (it installs Debian's nodejs and npm)"
	say "installing d3-flame-graph@4.1.3 and playwright-core@1.49.1 (no browser download) from npm"
	mkdir -p "$NPMDIR"
	PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --silent --no-audit --no-fund --save-exact \
		--prefix "$NPMDIR" d3-flame-graph@4.1.3 playwright-core@1.49.1 >/dev/null
	echo "$TEMPLATE_MD5  $template" | md5sum -c --status ||
		die "d3-flame-graph template has an unexpected md5sum"
fi
say "flame-graph template: $template"

bash "$TOP/demo/stock-kernel.sh"

command -v chromium >/dev/null || die "chromium missing: run 'make deps'"
say "$(chromium --version 2>/dev/null | head -n 1)"
