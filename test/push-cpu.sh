#!/usr/bin/env bash
# The 1 GiB push of test/bench.sh without its counting proxy, with both sides' CPU: Xet (batch
# mode) and plain git-lfs basic, each to its own fresh xet-server on loopback, RUNS times
# alternating. Prints each push's wall time, the client side's CPU (git, git-lfs and the agents)
# and the server's, and the Xet/basic wall ratio of each pair. Needs go, git, git-lfs, python3.
#
#   test/push-cpu.sh            PUSH_MB=256 RUNS=1 test/push-cpu.sh
set -euo pipefail
cd "$(dirname "$0")/.."
MB=${PUSH_MB:-1024}
RUNS=${RUNS:-2}
work=$(mktemp -d "${TMPDIR:-/tmp}/xet-pushcpu.XXXXXX")
cleanup() { for p in $(jobs -p); do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$work/bin" "$work/home" "$work/data"
go build -o "$work/bin/git-xet-transfer" ./cmd/git-xet-transfer
go build -o "$work/bin/xet-server" ./cmd/xet-server
export HOME="$work/home" GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0 XDG_CACHE_HOME="$work/home/.cache" PATH="$work/bin:$PATH"
unset GIT_DIR GIT_WORK_TREE GIT_XET_LOG GIT_TRACE
git config --global user.name b; git config --global user.email b@example.test; git config --global init.defaultBranch main
(cd "$work" && git-xet-transfer install >/dev/null)
for i in 1 2 3 4; do head -c $((MB / 4 << 20)) /dev/urandom > "$work/data/f$i.bin"; done
. test/ports.sh
cputicks() { awk '{print $14+$15}' "/proc/$1/stat"; }

push() { # push MODE RUN: prints "wall client-cpu server-cpu"
  local mode=$1 run=$2 port spid gitc=()
  [ "$mode" = basic ] && gitc=(-c lfs.basictransfersonly=true)
  port=$(freeport)
  xet-server --listen "127.0.0.1:$port" --data "$work/srv-$mode-$run" --log-level error 2>"$work/srv.log" & spid=$!
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
  local repo="$work/$mode-$run"
  git init -q --bare "$repo-remote.git"; git init -q "$repo"; cd "$repo"
  git lfs track '*.bin' >/dev/null
  printf '[lfs]\n\turl = http://127.0.0.1:%s/team/%s.git/info/lfs\n\tlocksverify = false\n' "$port" "$mode" > .lfsconfig
  cp "$work"/data/*.bin .; git add . && git commit -q -m v1; git remote add origin "$repo-remote.git"
  sync; sleep 3
  local c0 t0 t1 c1
  c0=$(cputicks $spid); t0=$(date +%s.%N)
  /usr/bin/time -f "%U %S" -o "$work/ct" git "${gitc[@]}" push -q origin main >/dev/null 2>&1
  t1=$(date +%s.%N); c1=$(cputicks $spid)
  kill $spid; wait $spid 2>/dev/null || true
  cd "$work"; rm -rf "$repo" "$repo-remote.git" "$work/srv-$mode-$run"
  awk -v a="$t0" -v b="$t1" -v c0="$c0" -v c1="$c1" -v hz="$(getconf CLK_TCK)" '{printf "%.2f %.2f %.2f\n", b-a, $1+$2, (c1-c0)/hz}' "$work/ct"
}

printf '%-6s %-6s %8s %12s %12s\n' run mode wall "client CPU" "server CPU"
for run in $(seq "$RUNS"); do
  read -r xw xc xs < <(push xet "$run")
  read -r bw bc bs < <(push basic "$run")
  printf '%-6s %-6s %7.2fs %11.2fs %11.2fs\n' "$run" xet "$xw" "$xc" "$xs" "$run" basic "$bw" "$bc" "$bs"
  awk -v x="$xw" -v b="$bw" -v r="$run" 'BEGIN { printf "%-6s xet/basic push wall: %.2fx\n", r, x/b }'
done
