#!/usr/bin/env bash
# Walk speed of `git-xet-transfer migrate`: a generated repository of WALK_COMMITS (default 100,000)
# commits naming WALK_POINTERS (default 10,000) distinct LFS pointers (written with git fast-import,
# no LFS objects anywhere), then `migrate --dry-run`, whose report gives the walk time; compared in
# the same run with git-lfs's own scan of the same history (`git lfs ls-files --all`). Needs go,
# git, git-lfs.
#
#   test/migrate-walk.sh            WALK_COMMITS=10000 WALK_POINTERS=1000 test/migrate-walk.sh
set -euo pipefail
cd "$(dirname "$0")/.."
N=${WALK_COMMITS:-100000}
P=${WALK_POINTERS:-10000}
work=$(mktemp -d "${TMPDIR:-/tmp}/xet-walk.XXXXXX")
trap 'rm -rf "$work"' EXIT
go build -o "$work/git-xet-transfer" ./cmd/git-xet-transfer
export HOME="$work/home" GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0
mkdir -p "$HOME"
git init -q -b main "$work/repo"
cd "$work/repo"
echo "generating $N commits over $P pointers (git fast-import)"
awk -v n="$N" -v p="$P" 'BEGIN {
  for (i = 0; i < n; i++) {
    k = i % p
    oid = sprintf("%08x%056x", k, 0)
    ptr = sprintf("version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %d\n", oid, 1000 + k)
    printf "commit refs/heads/main\ncommitter T <t@t> %d +0000\ndata 2\nc\n", 1700000000 + i
    if (i == 0) { a = "*.bin filter=lfs diff=lfs merge=lfs -text\n"; printf "M 100644 inline .gitattributes\ndata %d\n%s", length(a), a }
    printf "M 100644 inline d%03d/f%05d.bin\ndata %d\n%s\n", k % 100, k, length(ptr), ptr
  }
}' | git fast-import --quiet
git checkout -q -f main 2>/dev/null || true
git gc -q 2>/dev/null || true
t0=$(date +%s.%N)
out=$(GIT_LFS_SKIP_SMUDGE=1 "$work/git-xet-transfer" migrate --dry-run 2>/dev/null | head -1)
t1=$(date +%s.%N)
n=$(git lfs ls-files --all 2>/dev/null | wc -l)
t2=$(date +%s.%N)
echo "migrate --dry-run: $out (whole command $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}') s)"
echo "git lfs ls-files --all: $n pointer paths in $(awk -v a="$t1" -v b="$t2" 'BEGIN{printf "%.2f", b-a}') s"
awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { printf "migrate walk (whole dry run) takes %.2fx the time of git-lfs'"'"'s scan\n", (b-a)/(c-b) }'
