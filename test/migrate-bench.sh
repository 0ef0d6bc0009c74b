#!/usr/bin/env bash
# Migration benchmark (issue 15's history): MIG_COMMITS (default 20) commits, each editing 1 % of
# three MIG_MB (default 64) MB files (random bytes, text, a float32 tensor) and adding small files
# (500 of 1-10 KB over the history), pushed with plain git-lfs to git-lfs's reference server
# (lfs-test-server, built by test/install-lfs-test-server.sh), then migrated with
# `git-xet-transfer migrate` to the Xet store of the local remote. Prints the dry-run estimate, the
# migration report, and the bytes stored against the logical bytes (plain LFS stores 100 %).
# Needs go, git, git-lfs, python3.
#
#   test/migrate-bench.sh            MIG_MB=16 MIG_COMMITS=10 test/migrate-bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
C=${MIG_COMMITS:-20}
MB=${MIG_MB:-64}
work=$(mktemp -d "${TMPDIR:-/tmp}/xet-migrate-bench.XXXXXX")
cleanup() { for p in $(jobs -p); do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
bash test/install-lfs-test-server.sh >/dev/null
mkdir -p "$work/bin" "$work/home" "$work/lts"
go build -o "$work/bin/git-xet-transfer" ./cmd/git-xet-transfer
lts="$(go env GOPATH)/bin/lfs-test-server"
export HOME="$work/home" GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0 PATH="$work/bin:$PATH"
unset GIT_DIR GIT_WORK_TREE GIT_XET_LOG GIT_TRACE
git config --global user.name bench; git config --global user.email bench@example.test
git config --global init.defaultBranch main
git lfs install >/dev/null

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
LFS_LISTEN="tcp://127.0.0.1:$port" LFS_HOST="127.0.0.1:$port" LFS_SCHEME=http LFS_ADMINUSER=admin LFS_ADMINPASS=adminpass \
  LFS_CONTENTPATH="$work/lts/content" LFS_METADB="$work/lts/lfs.db" "$lts" >"$work/lts.log" 2>&1 &
for _ in $(seq 50); do curl -fs -o /dev/null -u admin:adminpass -d 'name=u&password=p' "http://127.0.0.1:$port/mgmt/add" && break; sleep 0.2; done
git config --global credential.helper store
echo "http://u:p@127.0.0.1:$port" > "$HOME/.git-credentials"

echo "generating $C commits of three $MB MB files (1 % edited per commit) and small files"
git init -q --bare "$work/remote.git"
git init -q "$work/repo" && cd "$work/repo"
git lfs track '*.bin' >/dev/null
git config lfs.url "http://127.0.0.1:$port/"
git config lfs.locksverify false
git remote add origin "$work/remote.git"
head -c $((MB << 20)) /dev/urandom > random.bin
head -c $(((MB << 20) * 3 / 4 + 4096)) /dev/urandom | base64 -w 100 > text.bin
truncate -s $((MB << 20)) text.bin
python3 - "$MB" <<'PY'
import array, math, sys, random
n = (int(sys.argv[1]) << 20) // 4
random.seed(1)
a = array.array('f', (math.sin(i / 97.0) * 0.02 + random.gauss(0, 0.001) for i in range(n)))
open('tensor.bin', 'wb').write(a.tobytes())
PY
small_per=$(( (500 + C - 1) / C ))
patch=$(( (MB << 20) / 100 / 4 ))
for c in $(seq 1 "$C"); do
  for f in random.bin text.bin tensor.bin; do
    for k in 1 3 5 7; do
      off=$(( (RANDOM * 32768 + RANDOM) % ((MB << 20) - patch) ))
      if [ "$f" = text.bin ]; then # text stays text
        (set +o pipefail # head stops base64 early
          head -c $((patch * 3 / 4 + 4)) /dev/urandom | base64 -w 100 | head -c "$patch" |
            dd of="$f" bs="$patch" count=1 seek="$off" oflag=seek_bytes iflag=fullblock conv=notrunc status=none)
      else
        head -c "$patch" /dev/urandom | dd of="$f" bs="$patch" count=1 seek="$off" oflag=seek_bytes iflag=fullblock conv=notrunc status=none
      fi
    done
  done
  mkdir -p small
  for i in $(seq 1 "$small_per"); do head -c $((1024 + RANDOM % 9216)) /dev/urandom > "small/c$c-$i.bin"; done
  git add . && git commit -q -m "version $c"
done
echo "pushing with plain git-lfs to lfs-test-server"
t0=$(date +%s.%N); git push -q origin main; t1=$(date +%s.%N)
echo "plain git-lfs push: $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}') s, server holds $(du -sb "$work/lts/content" | cut -f1) bytes"
echo
echo "== git-xet-transfer migrate --dry-run"
git-xet-transfer migrate --dry-run 2>/dev/null
echo
echo "== git-xet-transfer migrate --to ../remote.git"
t0=$(date +%s.%N); git-xet-transfer migrate --to "$work/remote.git" 2>/dev/null; t1=$(date +%s.%N)
echo
stored=$(du -sb "$work/remote.git/xet" | cut -f1)
logical=$(du -sb "$work/lts/content" | cut -f1)
awk -v s="$stored" -v l="$logical" -v t="$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" \
  'BEGIN { printf "summary: the Xet store holds %.1f MB on disk for %.1f MB of LFS objects (%.1f %%; plain LFS: 100 %%); migration took %.1f s\n", s/1e6, l/1e6, 100*s/l, t }'
