#!/bin/bash
# What 'make demo' needs beyond the build: perf's flame-graph template from
# the d3-flame-graph 4.1.3 npm package (self-contained, so the HTML needs no
# network at view time), and Chromium to render it headless.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

TEMPLATE_MD5=143e0d06ba69b8370b9848dcd6ae3f36	# the md5 perf's flamegraph.py checks
npmdir=$BUILD/npm
template=$npmdir/node_modules/d3-flame-graph/dist/templates/d3-flamegraph-base.html
if ! echo "$TEMPLATE_MD5  $template" | md5sum -c --status 2>/dev/null; then
	command -v npm >/dev/null || die "npm missing: install Node.js and npm"
	say "installing d3-flame-graph@4.1.3 from npm"
	mkdir -p "$npmdir"
	npm install --silent --no-audit --no-fund --prefix "$npmdir" d3-flame-graph@4.1.3 >/dev/null
	echo "$TEMPLATE_MD5  $template" | md5sum -c --status ||
		die "d3-flame-graph template has an unexpected md5sum"
fi
say "flame-graph template: $template"

if ! command -v chromium >/dev/null; then
	SUDO=
	[ "$(id -u)" -eq 0 ] || SUDO=sudo
	say "installing chromium"
	$SUDO apt-get update -q >/dev/null
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
		chromium fonts-dejavu-core >/dev/null
fi
say "$(chromium --version 2>/dev/null | head -n 1)"
