#!/usr/bin/env bash
# Issue 41 item 5: the server's CPU seconds on one ~390 KB shard naming a 1 GiB-raw xorb of zeros
# TERMS=4096 times (2^25 chunk references, 4 TiB of content, a wrong SHA-256), before (BASE,
# default main) and after (this work tree), in one run. Each build gets a fresh open server on loopback;
# the xorb is uploaded first (its validation is not counted), then the shard is sent with a
# TIMEOUT (default 60 s: before, the server would go on for hours) and the server's CPU time is read
# from /proc around it. Needs go, git, python3, Linux.
#
#   test/shardcost.sh            BASE=4894513 TIMEOUT=30s TERMS=256 test/shardcost.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BASE=${BASE:-main}
TIMEOUT=${TIMEOUT:-60s}
TERMS=${TERMS:-4096} # 256: 2^21 references, the most one file may name now (item 5 within the caps)
work=$(mktemp -d "${TMPDIR:-/tmp}/xet-shardcost.XXXXXX")
cleanup() {
  for p in $(jobs -p); do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  git worktree remove --force "$work/base" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
git worktree add -q --detach "$work/base" "$BASE"
(cd "$work/base" && go build -o "$work/xet-server-before" ./cmd/xet-server)
go build -o "$work/xet-server-after" ./cmd/xet-server
go build -o "$work/shardcost" ./test/shardcost
. test/ports.sh
cputicks() { awk '{print $14+$15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

measure() { # measure WHICH: prints the shard's answer and the server's CPU seconds on it
  local which=$1 port spid
  port=$(freeport)
  "$work/xet-server-$which" --listen "127.0.0.1:$port" --data "$work/data-$which" --log-level error 2>"$work/$which.log" & spid=$!
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
  local c0="" line
  while IFS= read -r line; do
    case "$line" in
      sending) c0=$(cputicks "$spid") ;;
      shard*) echo "$which: $line" ;;
    esac
  done < <("$work/shardcost" -url "http://127.0.0.1:$port" -shard "$work/item5.shard" -terms "$TERMS" -timeout "$TIMEOUT")
  local c1
  c1=$(cputicks "$spid")
  python3 -c "print('$which: server CPU on the shard: %.2f s' % (($c1 - $c0) / $hz))"
  kill "$spid"; wait "$spid" 2>/dev/null || true
}

measure before
measure after
