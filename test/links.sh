#!/usr/bin/env bash
# Checks the documentation (test/links, offline): every relative link and anchor in README.md and
# docs/**/*.md resolves (a file that exists, a heading by GitHub's id rules), and README.md is at
# most 450 lines. Prints every finding as path:line: what, and exits 1 on any. Run from anywhere;
# .ci/run runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/links" ./test/links
"$bin/links" .
