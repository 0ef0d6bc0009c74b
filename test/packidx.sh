#!/usr/bin/env bash
# The cost of a large embedded store to a clone: a repository with one small LFS file is pushed
# through the agent to a local bare remote (its embedded Xet store), the remote is copied, and the
# copy's store is filled with PACKIDX_OBJECTS more small blobs (default 1,000,000) through the fs
# backend's own pack writer (test/packfill). Then both are cloned PACKIDX_RUNS times each (default
# 11), interleaved (empty, full, full, empty, ...) after one warm-up clone of each, and the script
# prints the medians of each clone's wall time and of its agents' CPU time (user+sys of every agent
# process git-lfs started, through a GNU time wrapper: what the store costs the agent, and less
# moved by other load on the machine than wall time; packfill cpu), what the full store adds, and
# what a fresh process pays to open
# each store, read one blob and miss another (packfill open: the backend's creation and two lookups,
# the part of a clone that grows with the store). With PACKIDX_BASE_BINDIR=DIR it also times the git-xet-transfer
# in DIR (another build, e.g. the previous commit's) on the same two stores, in the same run; with
# XET_BINDIR=DIR it runs the agent in DIR instead of building it. Runs in a temp HOME; touches
# nothing else. Needs go, git, git-lfs.
#
#   test/packidx.sh        PACKIDX_OBJECTS=100000 PACKIDX_RUNS=5 test/packidx.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. test/median.sh
N=${PACKIDX_OBJECTS:-1000000}
RUNS=${PACKIDX_RUNS:-11}
command -v git-lfs >/dev/null || { echo "packidx: git-lfs is missing" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/xet-packidx.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/home"
if [ -n "${XET_BINDIR:-}" ]; then
  cp "$XET_BINDIR/git-xet-transfer" "$work/bin/"
else
  go build -o "$work/bin/git-xet-transfer" ./cmd/git-xet-transfer
fi
go build -o "$work/bin/packfill" ./test/packfill
agents=(this)
if [ -n "${PACKIDX_BASE_BINDIR:-}" ]; then
  mkdir -p "$work/base" && cp "$PACKIDX_BASE_BINDIR/git-xet-transfer" "$work/base/" && agents+=(base)
fi
# Each agent runs through a wrapper that adds its CPU time to $PACKIDX_CPU (packfill cpu).
for a in bin base; do
  [ -x "$work/$a/git-xet-transfer" ] || continue
  printf '#!/bin/sh\nexec "%s" cpu "$PACKIDX_CPU" "%s" "$@"\n' "$work/bin/packfill" "$work/$a/git-xet-transfer" > "$work/$a/agent"
  chmod +x "$work/$a/agent"
done
export HOME="$work/home" GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0 XDG_CACHE_HOME="$work/home/.cache"
unset GIT_DIR GIT_WORK_TREE GIT_XET_LOG GIT_TRACE
(cd "$work" && "$work/bin/git-xet-transfer" install >/dev/null)
g() { git -c user.name=bench -c user.email=bench@example.test -c init.defaultBranch=main "$@"; }

cd "$work"
g init -q --bare empty.git
g init -q src
(cd src && g lfs track '*.bin' >/dev/null && head -c 20000 /dev/urandom > small.bin && g add . &&
  g commit -q -m one && g remote add origin ../empty.git && g push -q origin main)
[ -d empty.git/xet/packs ] || { echo "packidx: the push did not go to the embedded store" >&2; exit 1; }
cp -a empty.git full.git
t0=$(date +%s.%N)
"$work/bin/packfill" fill full.git/xet "$N"
t1=$(date +%s.%N)
echo "filled a store with $N small blobs through the pack writer in $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f s", b - a}'):" \
  "$(du -sh full.git/xet/packs | cut -f1) in packs/"

# clone_ms AGENT REMOTE: one clone's wall time and its agents' CPU time, in ms, on one line; the
# file must come back whole.
clone_ms() {
  local bin="$work/bin/agent" t0 t1
  [ "$1" = base ] && bin="$work/base/agent"
  rm -rf "$work/dst"
  export PACKIDX_CPU="$work/cpu"; : > "$PACKIDX_CPU"
  t0=$(date +%s%N)
  g -c "lfs.customtransfer.xet.path=$bin" clone -q "$2" "$work/dst" >/dev/null 2>&1 || { echo "packidx: clone of $2 failed" >&2; exit 1; }
  t1=$(date +%s%N)
  cmp -s "$work/src/small.bin" "$work/dst/small.bin" || { echo "packidx: the clone of $2 did not bring small.bin back" >&2; exit 1; }
  awk -v a="$t0" -v b="$t1" '{c += $1} END {printf "%.1f %.1f\n", (b - a) / 1e6, c / 1000}' "$PACKIDX_CPU"
}
col() { cut -d' ' -f"$1" | median; } # col N < FILE: the median of column N
for a in "${agents[@]}"; do
  for s in empty full; do clone_ms "$a" "$s.git" >/dev/null; : > "$work/$a.$s.ms"; done # warm the page cache
done
for i in $(seq "$RUNS"); do
  for a in "${agents[@]}"; do
    if [ $((i % 2)) = 1 ]; then order="empty full"; else order="full empty"; fi
    for s in $order; do clone_ms "$a" "$s.git" >> "$work/$a.$s.ms"; done
  done
done
opens() { for _ in $(seq "$RUNS"); do "$work/bin/packfill" open "$1" format files/00/not-stored; done | median; }
oe=$(awk -v u="$(opens empty.git/xet)" 'BEGIN {printf "%.1f", u / 1000}')
of=$(awk -v u="$(opens full.git/xet)" 'BEGIN {printf "%.1f", u / 1000}')

echo
echo "one-small-file clone, medians of $RUNS interleaved runs ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%F)):"
printf '%-20s %-10s %12s %14s %11s %8s\n' agent "" "empty store" "$N blobs" added ratio
for a in "${agents[@]}"; do
  name="this build"; [ "$a" = base ] && name="PACKIDX_BASE_BINDIR"
  for c in 1 2; do
    e=$(col $c < "$work/$a.empty.ms"); f=$(col $c < "$work/$a.full.ms")
    what=wall; [ $c = 2 ] && what="agent CPU"
    awk -v n="$name" -v w="$what" -v e="$e" -v f="$f" 'BEGIN {printf "%-20s %-10s %9.1f ms %11.1f ms %8.1f ms %7.2f×\n", n, w, e, f, f - e, (e > 0 ? f / e : 0)}'
    name=""
  done
done
echo "open + a hit and a miss (this build's backend, a fresh process): $oe ms on the empty store, $of ms on the full one"
e=$(col 1 < "$work/this.empty.ms"); f=$(col 1 < "$work/this.full.ms")
awk -v e="$e" -v f="$f" 'BEGIN {printf "added by the full store to a clone: %.1f ms of wall time (target ≤ 50 ms)\n", f - e}'
