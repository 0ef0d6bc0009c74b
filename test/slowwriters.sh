#!/usr/bin/env bash
# Issue 41, item 3's figure: a 10 MB push of one user (bob, his own repository) alone, then while
# another user (alice, her own repository) holds the xorb upload slots with eight uploads trickling
# at 17 KB/s each (test/slowwriters, reopened as soon as the server ends one), in one run against
# one xet-server (users file, real git, git-lfs and the agent). Prints both times (the median of
# RUNS pushes each), the ratio and the difference. Target: ratio ≤ 1.2, or at most 5 s more for a
# push under a few seconds.
#
# Knobs: SLOWWRITERS_MB (default 10), SLOWWRITERS_RUNS (default 3), SLOWWRITERS_N (writers, default
# 8), SLOWWRITERS_RATE (bytes/s per writer, default 17000), SLOWWRITERS_TIMEOUT (seconds one push
# may take before it is counted as that and killed, default 120). With XET_BINDIR=DIR it runs the
# git-xet-transfer and xet-server of DIR (test/binaries.sh: an older build for a before/after
# figure); test/slowwriters is always built from this checkout. Runs in a temp dir; touches nothing
# else. Needs go, git, git-lfs, python3, curl.
#
#   test/slowwriters.sh
#   XET_BINDIR=/tmp/old-build test/slowwriters.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. test/median.sh
MB=${SLOWWRITERS_MB:-10}
RUNS=${SLOWWRITERS_RUNS:-3}
N=${SLOWWRITERS_N:-8}
RATE=${SLOWWRITERS_RATE:-17000}
TIMEOUT=${SLOWWRITERS_TIMEOUT:-120}
command -v git-lfs >/dev/null || { echo "slowwriters: git-lfs is missing" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/xet-slowwriters.XXXXXX")
cleanup() { for p in $(jobs -p); do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$work/bin" "$work/home"
. test/binaries.sh
xet_binaries "$work/bin" >/dev/null
go build -o "$work/bin/slowwriters" ./test/slowwriters
. test/ports.sh
user() { printf '%s:$sha256$73616c74$%s:write:%s\n' "$1" "$(printf 'salt%s' "$2" | sha256sum | cut -d' ' -f1)" "$3"; }
{ user alice pw-alice 'alice/*'; user bob pw-bob 'bob/*'; } >"$work/users"
ports=$(freeports 2); read -r port mport <<<"$ports"
addr=127.0.0.1:$port metrics=http://127.0.0.1:$mport/metrics
"$work/bin/xet-server" --listen "$addr" --data "$work/data" --users "$work/users" --metrics-listen "127.0.0.1:$mport" --log-level error 2>"$work/server.log" &
for _ in $(seq 200); do curl -fs "http://$addr/healthz" >/dev/null 2>&1 && break; sleep 0.05; done

export HOME="$work/home" PATH="$work/bin:$PATH" GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0
unset GIT_DIR GIT_WORK_TREE GIT_TRACE HF_TOKEN HF_ENDPOINT HF_HOME HF_XET_CACHE GIT_XET_LOG
git config --global user.name bench && git config --global user.email bench@example.test
git config --global init.defaultBranch main
git-xet-transfer install >/dev/null

slots() { curl -fs "$metrics" | awk '$1 == "xet_upload_slots_in_use" { print $2 }'; }
# push NAME: a fresh repository bob/NAME with one MB MB file of its own; prints the push's seconds.
push() {
  local dir="$work/$1"
  git init -q --bare "$dir.git"
  git init -q "$dir" && cd "$dir"
  git lfs track '*.bin' >/dev/null
  printf '[lfs]\n\turl = http://bob:pw-bob@%s/bob/%s.git/info/lfs\n\tlocksverify = false\n' "$addr" "$1" >.lfsconfig
  head -c $((MB * 1000000)) /dev/urandom >big.bin
  git add . && git commit -q -m big && git remote add origin "$dir.git"
  local t0 t1; t0=$(date +%s.%N)
  timeout "$TIMEOUT" git push -q origin main >"$work/push.log" 2>&1 || echo "slowwriters: push $1 failed or took over ${TIMEOUT}s: $(tail -3 "$work/push.log")" >&2
  t1=$(date +%s.%N)
  cd - >/dev/null
  echo "$t0 $t1" | awk '{ printf "%.2f\n", $2 - $1 }'
}

alone=()
for i in $(seq "$RUNS"); do alone+=("$(push alone$i)"); done
"$work/bin/slowwriters" -lfs "http://alice:pw-alice@$addr/alice/r.git/info/lfs" -n "$N" -rate "$RATE" -reopen >"$work/writers.log" 2>&1 &
attacked=()
for i in $(seq "$RUNS"); do
  for _ in $(seq 600); do [ "$(slots)" = "$N" ] && break; sleep 0.05; done # alice holds every slot again
  [ "$(slots)" = "$N" ] || { echo "slowwriters: the writers hold $(slots) slots, not $N" >&2; exit 1; }
  attacked+=("$(push attacked$i)")
done
a=$(printf '%s\n' "${alone[@]}" | median)
b=$(printf '%s\n' "${attacked[@]}" | median)
echo "bob's ${MB} MB push, median of $RUNS: alone ${a} s (${alone[*]}), while alice's $N writers at $RATE B/s hold the slots ${b} s (${attacked[*]})"
awk -v a="$a" -v b="$b" 'BEGIN { printf "ratio %.2f, %+.2f s (target: ratio ≤ 1.2, or ≤ 5 s more for a push under a few seconds)\n", b / a, b - a }'
echo "alice's uploads the server ended meanwhile: $(grep -c '^ended' "$work/writers.log" || true)"
