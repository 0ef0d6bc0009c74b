#!/usr/bin/env bash
# Demo: a repository with a few large files is pushed to a local bare remote through the embedded
# Xet store and cloned back; then a second version with a small edit is pushed, and the bytes the
# store gained for it are shown. Needs `./install.sh` (or `git-xet-transfer install`) first.
#
#   test/demo.sh [DIR]     (default: a new temp dir, removed at the end unless KEEP=1)
set -euo pipefail

command -v git-lfs >/dev/null || { echo "demo: git-lfs is missing; run ./install.sh first" >&2; exit 1; }
agent=$(git config --get lfs.customtransfer.xet.path || true)
[ -n "$agent" ] && [ -x "$agent" ] || { echo "demo: git-xet-transfer is not installed in git config; run ./install.sh first" >&2; exit 1; }

dir="${1:-$(mktemp -d "${TMPDIR:-/tmp}/xet-demo.XXXXXX")}"
[ -z "${1:-}" ] && [ "${KEEP:-0}" != 1 ] && trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir"; cd "$dir"
g() { git -c user.name=demo -c user.email=demo@example.test -c init.defaultBranch=main "$@"; }
bytes() { du -sb "$1" | cut -f1; }
mb() { awk -v b="$1" 'BEGIN { printf "%.1f MB", b / 1e6 }'; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f s", b - a }'; }

echo "== demo in $dir (agent: $agent)"
g init -q --bare remote.git
g init -q work
cd work
g lfs track '*.bin' '*.safetensors' >/dev/null
head -c 64000000 /dev/urandom > model.safetensors                       # 64 MB of random weights
{ yes 'a line of a large log file that repeats a lot' || true; } | head -c 16000000 > train-log.bin
head -c 1000000 /dev/urandom > tokenizer.bin
g add . && g commit -q -m v1
g remote add origin ../remote.git
t=$(now); g push -q origin main; echo "push v1: $(since "$t")"
v1=$(bytes ../remote.git/xet)
echo "store after v1: $(mb "$v1") for $(mb $((64000000 + 16000000 + 1000000))) of files (the repetitive log compresses and dedupes)"

cd ..
t=$(now); g clone -q remote.git clone; echo "clone: $(since "$t")"
for f in model.safetensors train-log.bin tokenizer.bin; do cmp work/$f clone/$f; done
echo "clone is byte-identical"

cd work
# v2: 1 MB (1.5 %) of the weights changed in four places.
for off in 5000000 20000000 40000000 60000000; do
  head -c 250000 /dev/urandom | dd of=model.safetensors bs=1 seek=$off conv=notrunc status=none
done
g commit -q -am "v2: fine-tuned a few layers"
t=$(now); g push -q origin main; echo "push v2: $(since "$t")"
v2=$(bytes ../remote.git/xet)
echo "store grew by $(mb $((v2 - v1))) for v2 (a 64 MB file with 1 MB changed); plain git-lfs would store 64.0 MB again"
cd ../clone && g pull -q origin main && cmp ../work/model.safetensors model.safetensors && echo "pull of v2 is byte-identical"
