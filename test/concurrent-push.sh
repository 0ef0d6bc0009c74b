#!/usr/bin/env bash
# Four concurrent pushes to one embedded store against the same through xet-server: runs
# TestConcurrentOverlappingPushes (20 rounds of 4 pushes of overlapping content at once, each kind
# in turn, in one run), which prints each kind's time for its push rounds, and prints both and
# their ratio (issue 35's target: embedded ≤ 1.5× xet-server). Needs go, git, git-lfs.
#
#   test/concurrent-push.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(XET_CONCURRENT_ROUNDS=20 go test -count=1 -run 'TestConcurrentOverlappingPushes$' -v ./test 2>&1) || { echo "$out" | tail -n 30; exit 1; }
e=$(sed -n 's/.*push rounds: embedded \([0-9.]*\) s.*/\1/p' <<<"$out")
s=$(sed -n 's/.*push rounds: server \([0-9.]*\) s.*/\1/p' <<<"$out")
[ -n "$e" ] && [ -n "$s" ] || { echo "concurrent-push: no figures in the test's output:"; echo "$out" | tail -n 30; exit 1; }
echo "4 concurrent pushes × 20 rounds: embedded store $e s, xet-server $s s"
awk -v e="$e" -v s="$s" 'BEGIN {printf "ratio: %.2f× (target ≤ 1.5×)\n", e / s}'
