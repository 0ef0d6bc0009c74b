#!/usr/bin/env bash
# A/B of many small files pushed to the embedded store, for changes to the small-upload path (the
# leader's batches, the pack's fsyncs). SMALLPUSH_N files of 1-31 KB (random bytes) are committed
# once; then each side in turn pushes that commit to a fresh local remote, SMALLPUSH_ROUNDS rounds,
# alternating, in a journaled ext4 image (test/scratchfs.sh: file creation there does not depend on
# what the last step deleted). A side is a directory of binaries (`. test/binaries.sh;
# xet_binaries DIR`), optionally with one environment setting for its pushes (DIR:NAME=VALUE), or
# `plain` for plain git-lfs. It prints each push's wall and CPU seconds (GNU time over git and every
# process it starts), then each side's medians and their ratio to plain git-lfs's when it ran.
#
#   test/smallpush-ab.sh /tmp/binA /tmp/binB plain        SMALLPUSH_N=5000 SMALLPUSH_ROUNDS=9
set -euo pipefail
cd "$(dirname "$0")/.."
. test/median.sh
[ $# -gt 0 ] || { echo "usage: test/smallpush-ab.sh SIDE... (a binaries directory[:NAME=VALUE], or plain)" >&2; exit 2; }
N=${SMALLPUSH_N:-5000} ROUNDS=${SMALLPUSH_ROUNDS:-7}
for side in "$@"; do
  dir=${side%%:*}
  [ "$side" = plain ] || [ -x "$dir/git-xet-transfer" ] || { echo "smallpush-ab: $dir has no git-xet-transfer" >&2; exit 2; }
done
command -v git-lfs >/dev/null || { echo "smallpush-ab: git-lfs is missing" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "smallpush-ab: GNU time (/usr/bin/time) is missing" >&2; exit 1; }

. test/scratchfs.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/smallpush-ab.XXXXXX")
cleanup() { cd /; scratch_fs_unmount; rm -rf "$work"; } # out of the image first: a busy mount unmounts only lazily
trap cleanup EXIT
trap "exit 130" INT
trap "exit 143" TERM
scratch_fs_mount "$work"
echo "smallpush-ab: $N files, $ROUNDS rounds, in $SCRATCH_NOTE" >&2
base=$SCRATCH_DIR
export HOME=$base/home
mkdir -p "$HOME" "$base/src/d"
git config --global user.name ab; git config --global user.email ab@example.test
git config --global init.defaultBranch main
# git gc after a commit of more than 6,700 objects runs in the background by default, and a push
# meanwhile fails with "missing object" (scale.sh found it at 10,000 files): in the foreground, it
# is part of the commit.
git config --global gc.autoDetach false
git lfs install >/dev/null
cd "$base/src"
git init -q .
git lfs track '*.bin' >/dev/null
for i in $(seq "$N"); do head -c $((1000 + (i * 37) % 30000)) /dev/urandom >"d/f$i.bin"; done
git add . && git commit -q -m "$N small files"

# configure SIDE: the global git config for a side's pushes (the agent as its install writes it, or
# plain git-lfs alone)
configure() {
  git config --global --remove-section lfs.customtransfer.xet 2>/dev/null || true
  git config --global --unset-all 'lfs.file:///.standalonetransferagent' 2>/dev/null || true
  [ "$1" = plain ] || (cd "$HOME" && PATH="${1%%:*}:$PATH" git-xet-transfer install >/dev/null)
}

results=$work/results
: >"$results"
for round in $(seq "$ROUNDS"); do
  for side in "$@"; do
    configure "$side"
    rm -rf "$base/remote.git" && git init -q --bare "$base/remote.git"
    git remote remove origin 2>/dev/null || true
    git remote add origin "$base/remote.git"
    setting=(); [[ "$side" == *:* ]] && setting=("${side#*:}")
    path=$PATH; [ "$side" = plain ] || path="${side%%:*}:$PATH"
    sync
    t0=$(date +%s.%N)
    /usr/bin/time -f '%U %S' -o "$work/cpu" env "${setting[@]}" PATH="$path" git push -q origin main >"$work/push.log" 2>&1 ||
      { echo "smallpush-ab: the push of $side failed:" >&2; cat "$work/push.log" >&2; exit 1; }
    t1=$(date +%s.%N)
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
    cpu=$(awk '{ printf "%.2f", $1 + $2 }' "$work/cpu")
    echo "round $round  $side  push $wall s  cpu $cpu s"
    printf '%s\t%s\t%s\n' "$side" "$wall" "$cpu" >>"$results"
  done
done

plain_wall=""
grep -q "^plain	" "$results" && plain_wall=$(awk -F'\t' '$1 == "plain" { print $2 }' "$results" | median)
echo
for side in "$@"; do
  w=$(awk -F'\t' -v s="$side" '$1 == s { print $2 }' "$results" | median)
  c=$(awk -F'\t' -v s="$side" '$1 == s { print $3 }' "$results" | median)
  ratio=""; [ -n "$plain_wall" ] && ratio=$(awk -v a="$w" -v b="$plain_wall" 'BEGIN { printf "  %.2fx plain git-lfs", a / b }')
  printf '%-40s push median %.3f s  cpu median %.2f s%s\n' "$side" "$w" "$c" "$ratio"
done
