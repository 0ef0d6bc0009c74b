#!/usr/bin/env bash
# Delta downloads and resumed transfers, in one run on this machine:
#   1. a DELTA_MB-MiB file (default 1024) of random data is pushed; a second version with ten
#      1 MiB edits scattered over it is pushed; `git lfs pull` of it in a clone holding the first
#      version (the delta; its commits pulled with GIT_LFS_SKIP_SMUDGE=1) is set against the same in a
#      clone holding nothing (the full fetch): bytes fetched and wall time. Against xet-server on loopback (bytes counted
#      by a proxy in front of it) and against the embedded store (bytes from the agents' log).
#   2. `git lfs pull` of a new random file killed when half of it is written, then run again:
#      bytes the second attempt fetched. A push of another one killed when half of it was sent,
#      then run again: bytes the second push sent. (xet-server.)
# (The download speed from the embedded store against cp, with the agents' CPU against the floor of
# verification, is test/fetchspeed.sh.)
# Runs in a temp HOME; touches nothing else. Needs go, git, git-lfs, python3, curl, GNU time.
#
#   test/delta.sh          DELTA_MB=256 test/delta.sh
set -euo pipefail
cd "$(dirname "$0")/.."
MB=${DELTA_MB:-1024}
[ -x /usr/bin/time ] || { echo "delta: needs GNU time at /usr/bin/time" >&2; exit 1; }
command -v git-lfs >/dev/null || { echo "delta: git-lfs is missing" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/xet-delta.XXXXXX")
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/home"
go build -o "$work/bin/git-xet-transfer" ./cmd/git-xet-transfer
go build -o "$work/bin/xet-server" ./cmd/xet-server
go build -o "$work/bin/countproxy" ./test/countproxy
export HOME="$work/home" GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0 XDG_CACHE_HOME="$work/home/.cache"
unset GIT_DIR GIT_WORK_TREE GIT_TRACE GIT_XET_CPUPROFILE
export GIT_XET_LOG="$work/agent.log" GIT_XET_LOG_LEVEL=info
(cd "$work" && "$work/bin/git-xet-transfer" install >/dev/null)
# The agent as git-lfs runs it, under GNU time: user and system CPU and peak RSS of each process.
cat >"$work/bin/agent" <<WRAP
#!/bin/sh
exec /usr/bin/time -a -o "$work/agent.times" -f "%U %S %M" "$work/bin/git-xet-transfer" "\$@"
WRAP
chmod 755 "$work/bin/agent"
git config --global lfs.customtransfer.xet.path "$work/bin/agent"
git config --global user.name delta; git config --global user.email delta@example.test
git config --global init.defaultBranch main

. test/ports.sh
proxy=""
start_server() { # a fresh xet-server behind a counting proxy, at $proxy
  local ports sport pport; ports=$(freeports 2); read -r sport pport <<<"$ports"
  proxy="http://127.0.0.1:$pport"
  "$work/bin/xet-server" --listen "127.0.0.1:$sport" --data "$work/server" --public-url "$proxy" --log-level error 2>"$work/server.log" & pids+=($!)
  "$work/bin/countproxy" -listen "127.0.0.1:$pport" -backend "http://127.0.0.1:$sport" 2>"$work/proxy.log" & pids+=($!)
  for _ in $(seq 100); do curl -fs "$proxy/__count" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "delta: xet-server did not start" >&2; cat "$work/server.log" >&2; exit 1
}
down() { curl -fs "$proxy/__count" | cut -d' ' -f2; }
up() { curl -fs "$proxy/__count" | cut -d' ' -f1; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
logged() { # logged FIELD FROM: the sum of FIELD over the downloads logged since line FROM
  tail -n +"$2" "$GIT_XET_LOG" | python3 -c '
import json, sys
n = 0
for l in sys.stdin:
    try: r = json.loads(l)
    except ValueError: continue
    if r.get("op") == "download" and r.get("message") == "transfer complete": n += r.get(sys.argv[1], 0)
print(int(n))' "$1"
}
loglines() { [ -f "$GIT_XET_LOG" ] && wc -l <"$GIT_XET_LOG" || echo 0; }
size=$((MB << 20))

echo "making $MB MiB of random data and a version with ten 1 MiB edits"
mkdir -p "$work/data"
head -c "$size" /dev/urandom >"$work/data/v1"
cp "$work/data/v1" "$work/data/v2"
for k in $(seq 0 9); do
  head -c $((1 << 20)) /dev/urandom | dd of="$work/data/v2" bs=1M seek=$((MB * k / 10 + MB / 20)) conv=notrunc status=none iflag=fullblock
done

declare -a rows=()
row() { rows+=("$(printf '%-46s %s' "$1" "$2")"); echo "${rows[-1]}"; }

delta_pair() { # delta_pair NAME REMOTE COUNTER: push v1, clone, push v2; pull (delta) vs lfs pull (full)
  local name=$1 remote=$2 counter=$3 repo="$work/$1"
  git init -q "$repo"; cd "$repo"; git lfs track '*.bin' >/dev/null
  [ -n "${4:-}" ] && printf '[lfs]\n\turl = %s\n\tlocksverify = false\n' "$4" >.lfsconfig
  cp "$work/data/v1" model.bin; git add .; git commit -q -m v1
  git remote add origin "$remote"; git push -q origin main
  git clone -q "$remote" "$repo-a"
  cp "$work/data/v2" model.bin; git commit -q -am v2; git push -q origin main
  GIT_LFS_SKIP_SMUDGE=1 git clone -q "$remote" "$repo-b"
  sync
  local b0 l0 t0 t1 dfull tfull ddelta tdelta afull adelta
  b0=$($counter 1); l0=$(loglines); t0=$(now)
  (cd "$repo-b" && git lfs pull)
  t1=$(now); dfull=$(( $($counter "$b0") )); tfull=$(secs "$t0" "$t1"); afull=$(logged elapsed_ms $((l0 + 1)))
  cmp "$repo-b/model.bin" "$work/data/v2"
  sync
  (cd "$repo-a" && GIT_LFS_SKIP_SMUDGE=1 git pull -q)
  b0=$($counter 1); l0=$(loglines); t0=$(now)
  (cd "$repo-a" && git lfs pull)
  t1=$(now); ddelta=$(( $($counter "$b0") )); tdelta=$(secs "$t0" "$t1"); adelta=$(logged elapsed_ms $((l0 + 1)))
  cmp "$repo-a/model.bin" "$work/data/v2"
  row "$name: full fetch of v2 (git lfs pull)" "$(printf '%8s s %10.1f MB   agent %5d ms' "$tfull" "$(awk -v b="$dfull" 'BEGIN{print b/1e6}')" "$afull")"
  row "$name: git lfs pull of v2 over v1 (delta)" "$(printf '%8s s %10.1f MB   agent %5d ms   bytes %s of the file, wall %s (agent %s) of the full fetch' "$tdelta" \
    "$(awk -v b="$ddelta" 'BEGIN{print b/1e6}')" "$adelta" "$(ratio "$ddelta" "$size")" "$(ratio "$tdelta" "$tfull")" "$(ratio "$adelta" "$afull")")"
  cd "$work"
}
# counters: called with no arguments state → a mark; with a mark → bytes since it
proxy_counter() { if [ "$1" = 1 ]; then down; else echo $(($(down) - $1)); fi; }
log_counter() { if [ "$1" = 1 ]; then loglines; else logged new_bytes "$(($1 + 1))"; fi; }

start_server
git init -q --bare "$work/server-remote.git"
delta_pair server "$work/server-remote.git" proxy_counter "$proxy/team/delta.git/info/lfs"
git init -q --bare "$work/embedded-remote.git"
delta_pair embedded "$work/embedded-remote.git" log_counter

kill_agents_when() { # kill_agents_when COND...: wait for COND, then kill -9 every agent
  for _ in $(seq 1200); do "$@" && break; sleep 0.05; done
  pkill -9 -f "$work/bin/git-xet-transfer" || true
}
half_written() { # the partial record of a download in $1 says half the file is written (~4.7 KB per 8 MiB)
  local f; for f in "$1"/.git/lfs/tmp/xet-*.part.xetmap; do
    [ -e "$f" ] && [ "$(stat -c %s "$f")" -ge $((size / 2 / (8 << 20) * 4600)) ] && return 0
  done; return 1
}
half_sent() { [ "$(up)" -ge $(($1 + size / 2)) ]; }

echo "resume: a download and an upload killed half-way, then run again"
repo="$work/resume"; git init -q "$repo"; cd "$repo"; git lfs track '*.bin' >/dev/null
printf '[lfs]\n\turl = %s/team/resume.git/info/lfs\n\tlocksverify = false\n' "$proxy" >.lfsconfig
head -c "$size" /dev/urandom >a.bin; git add .; git commit -q -m a
git init -q --bare "$repo.git"; git remote add origin "$repo.git"; git push -q origin main
GIT_LFS_SKIP_SMUDGE=1 git clone -q "$repo.git" "$repo-clone"
(cd "$repo-clone" && git lfs pull >/dev/null 2>&1) & p=$!
kill_agents_when half_written "$repo-clone"; wait $p || true
d0=$(down); (cd "$repo-clone" && git lfs pull); d1=$(down)
cmp "$repo-clone/a.bin" a.bin
row "server: download killed at 50 %, second attempt" "$(printf '%10.1f MB fetched   %s of the file' "$(awk -v b=$((d1 - d0)) 'BEGIN{print b/1e6}')" "$(ratio $((d1 - d0)) "$size")")"
head -c "$size" /dev/urandom >b.bin; git add .; git commit -q -m b
u0=$(up); (git push -q origin main >/dev/null 2>&1) & p=$!
kill_agents_when half_sent "$u0"; wait $p || true
u1=$(up); git push -q origin main; u2=$(up)
row "server: upload killed at $(ratio $((u1 - u0)) "$size") sent, second push" "$(printf '%10.1f MB sent       %s of the file' "$(awk -v b=$((u2 - u1)) 'BEGIN{print b/1e6}')" "$(ratio $((u2 - u1)) "$size")")"
cd "$work"

echo
echo "summary ($(nproc) cores, $MB MiB):"
printf '%s\n' "${rows[@]}"
