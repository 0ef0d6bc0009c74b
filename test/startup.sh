#!/usr/bin/env bash
# Start-up cost of the agent against git's own: git-lfs starts up to lfs.concurrenttransfers agent
# processes (8 by default) for every transfer command, one after another. This script runs the
# agent as git-lfs does, in a work tree whose .lfsconfig names an LFS server, from `init` to
# `terminate` with nothing in between (STARTUP_RUNS times, default 20), and `git version` as often,
# in the same run, and prints both medians and their ratio. Runs in a temp HOME; touches nothing
# else. Needs go and git.
#
#   test/startup.sh            STARTUP_RUNS=50 test/startup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. test/median.sh
RUNS=${STARTUP_RUNS:-20}
work=$(mktemp -d "${TMPDIR:-/tmp}/xet-startup.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/home"
go build -o "$work/bin/" ./cmd/git-xet-transfer ./cmd/git-xet-transfer-agent
export HOME="$work/home" GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0 XDG_CACHE_HOME="$work/home/.cache"
unset GIT_DIR GIT_WORK_TREE GIT_XET_LOG GIT_TRACE
(cd "$work" && "$work/bin/git-xet-transfer" install >/dev/null)
git init -q "$work/repo"
printf '[lfs]\n\turl = http://127.0.0.1:9/team/repo.git/info/lfs\n' > "$work/repo/.lfsconfig"
git -C "$work/repo" remote add origin http://127.0.0.1:9/team/repo.git
printf '%s\n' '{"event":"init","operation":"upload","remote":"origin","concurrent":true,"concurrenttransfers":8}' \
  '{"event":"terminate"}' > "$work/msgs"
# What git-lfs runs: the path install wrote (the start-up agent, git-xet-transfer-agent); the full
# agent is timed too, for the processes that get a request (they pay both).
runs=$(git config --global lfs.customtransfer.xet.path)
cd "$work/repo"
# ms CMD...: the wall time of one run of CMD in milliseconds (three decimals).
ms() {
  local t0 t1
  t0=$(date +%s%N)
  "$@" >/dev/null 2>&1 || { echo "startup: $* failed" >&2; exit 1; }
  t1=$(date +%s%N)
  echo "$(( (t1 - t0) / 1000 ))" | awk '{printf "%.3f\n", $1 / 1000}'
}
agent() { "$runs" < "$work/msgs"; }
full() { "$work/bin/git-xet-transfer" < "$work/msgs"; }
# Alternate them, so that a busy moment of the machine falls on each.
: > "$work/agent.ms"; : > "$work/git.ms"; : > "$work/full.ms"
agent >/dev/null; full >/dev/null; git version >/dev/null # warm the page cache
for _ in $(seq "$RUNS"); do
  ms agent >> "$work/agent.ms"
  ms git version >> "$work/git.ms"
  ms full >> "$work/full.ms"
done
a=$(median < "$work/agent.ms"); g=$(median < "$work/git.ms"); f=$(median < "$work/full.ms")
echo "agent init → terminate:     median $a ms of $RUNS runs ($(basename "$runs"), what install configures)"
echo "git version:                median $g ms of $RUNS runs"
echo "full agent (for a request): median $f ms of $RUNS runs (git-xet-transfer alone)"
awk -v a="$a" -v g="$g" 'BEGIN {printf "ratio: %.2f× (target ≤ 1.5×)\n", a / g}'
