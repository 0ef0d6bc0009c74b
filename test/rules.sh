#!/usr/bin/env bash
# Checks the code rules of docs/ARCHITECTURE.md that the import graph does not show (test/rules,
# go/ast over every non-test file): the environment is read only under cmd/ and in the test-support
# packages; no struct field is a context.Context; protocol is imported only by agent and cmd/... .
# Prints every finding as path:line: rule: what, and exits 1 on any. Run from anywhere; .ci/run
# runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/rules" ./test/rules
"$bin/rules" .
