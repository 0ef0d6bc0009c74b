#!/usr/bin/env bash
# Runs every fuzz target of the module for FUZZ_TIME each (default 5m; not part of CI, which runs
# the seed corpora through `go test`). A finding is written by the fuzzer under the package's
# testdata/fuzz/<Target>/ (commit it as a seed once fixed) and makes the script fail at the end.
#
# FUZZ_PARALLEL sets the fuzzing workers (default: one per core).
#
#   test/fuzz.sh            FUZZ_TIME=30s test/fuzz.sh            FUZZ_ONLY=Shard test/fuzz.sh
set -uo pipefail
cd "$(dirname "$0")/.."
time=${FUZZ_TIME:-5m}
only=${FUZZ_ONLY:-.}
par=()
[ -n "${FUZZ_PARALLEL:-}" ] && par=(-parallel "$FUZZ_PARALLEL")
failed=()
for pkg in $(go list ./...); do
  for target in $(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' | grep -E "$only"); do
    echo "=== $pkg $target ($time)"
    if ! go test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "$time" "${par[@]}"; then
      failed+=("$pkg $target")
    fi
  done
done
echo
if [ ${#failed[@]} -gt 0 ]; then
  echo "findings (see testdata/fuzz/ of each package):"; printf '  %s\n' "${failed[@]}"
  exit 1
fi
echo "no findings"
