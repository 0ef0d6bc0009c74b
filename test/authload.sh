#!/usr/bin/env bash
# Issue 41's figures for failed logins, for the server of BASE (default main) and of this checkout
# in one run: the server's CPU while a guesser (test/authload) sends RATE wrong-password batch
# requests per second from another address (127.0.0.2) — for one known user, then for a new unknown
# name each time — and a legitimate user's 10 MB push (batch mode, Basic credentials) meanwhile,
# against the same push with the server otherwise idle. Each scenario gets a fresh server (an old
# one still works off the guesses it queued). Prints, per server and scenario, the server's CPU in
# cores over CPU_SECONDS and the median of PUSHES pushes (a push that takes over PUSH_TIMEOUT
# seconds is stopped, and the scenario's push shown as over it), and the ratio to the push alone.
# Targets: under 0.5 core; push ≤ 1.2× alone. The agent is this checkout's for both servers.
# Needs go, git, git-lfs, python3, curl.
#
#   test/authload.sh            BASE=4894513 RATE=200 CPU_SECONDS=10 PUSHES=5 PUSH_TIMEOUT=60 test/authload.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. test/median.sh
BASE=${BASE:-main}
RATE=${RATE:-200}
CPU_SECONDS=${CPU_SECONDS:-10}
PUSHES=${PUSHES:-5}
PUSH_TIMEOUT=${PUSH_TIMEOUT:-60}
work=$(mktemp -d "${TMPDIR:-/tmp}/xet-authload.XXXXXX")
# The servers and guessers run in the subshells of the scenarios: their ids go to a file, for an
# interrupted run to stop them.
cleanup() { if [ -f "$work/pids" ]; then xargs kill -KILL <"$work/pids" 2>/dev/null || true; fi; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$work/bin" "$work/base-src" "$work/home"
git archive "$BASE" | tar -x -C "$work/base-src"
(cd "$work/base-src" && go build -o "$work/bin/xet-server-base" ./cmd/xet-server)
go build -o "$work/bin/xet-server-this" ./cmd/xet-server
go build -o "$work/bin/git-xet-transfer" ./cmd/git-xet-transfer
go build -o "$work/bin/git-xet-transfer-agent" ./cmd/git-xet-transfer-agent
go build -o "$work/bin/authload" ./test/authload
export HOME="$work/home" GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0 XDG_CACHE_HOME="$work/home/.cache" PATH="$work/bin:$PATH"
unset GIT_DIR GIT_WORK_TREE GIT_XET_LOG GIT_TRACE
git config --global user.name b; git config --global user.email b@example.test; git config --global init.defaultBranch main
(cd "$work" && git-xet-transfer install >/dev/null)
{ printf 'alice-password-1\n' | xet-server-this hash-password --user alice
  printf 'dev-password-22\n' | xet-server-this hash-password --user dev; } > "$work/users"
. test/ports.sh
cputicks() { awk '{print $14+$15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

start_server() { # start_server BUILD: sets port and spid
  port=$(freeport)
  "xet-server-$1" --listen "127.0.0.1:$port" --data "$work/data-$1" --users "$work/users" --log-file "$work/server-$1.log" >>"$work/server.log" 2>&1 &
  spid=$!; echo "$spid" >>"$work/pids"
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/healthz" && return; sleep 0.1; done
  echo "xet-server-$1 did not start"; cat "$work/server.log"; exit 1
}

n=0
push_once() { # prints the wall seconds of one push of a fresh 10 MB file as dev, or "timeout"
  n=$((n + 1))
  local repo="$work/repo$n" t0 t1 ok=1
  git init -q --bare "$repo.git"; git init -q "$repo"
  (cd "$repo" && git lfs track '*.bin' >/dev/null &&
    printf '[lfs]\n\turl = http://dev:dev-password-22@127.0.0.1:%s/team/r%s.git/info/lfs\n\tlocksverify = false\n' "$port" "$n" > .lfsconfig &&
    head -c $((10 << 20)) /dev/urandom > f.bin && git add . && git commit -q -m v1 && git remote add origin "$repo.git")
  t0=$(date +%s.%N)
  (cd "$repo" && timeout -s KILL "$PUSH_TIMEOUT" git push -q origin main >/dev/null 2>"$work/push.err") || ok=0
  t1=$(date +%s.%N)
  rm -rf "$repo" "$repo.git"
  if [ $ok = 1 ]; then awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f\n", b-a}'; else echo timeout; fi
}

median_push() { # the median of PUSHES pushes, or "timeout" at the first that times out
  local times=() t
  for _ in $(seq "$PUSHES"); do
    t=$(push_once)
    if [ "$t" = timeout ]; then echo timeout; return; fi
    times+=("$t")
  done
  printf '%s\n' "${times[@]}" | median
}

server_cpu() { # cores the server used over CPU_SECONDS
  local c0 c1
  c0=$(cputicks "$spid"); sleep "$CPU_SECONDS"; c1=$(cputicks "$spid")
  awk -v a="$c0" -v b="$c1" -v hz="$hz" -v s="$CPU_SECONDS" 'BEGIN {printf "%.2f\n", (b-a)/hz/s}'
}

scenario() { # scenario BUILD NAME [authload flags...]: prints "cpu push"
  local build=$1 name=$2 gpid= cpu push; shift 2
  start_server "$build"
  if [ $# -gt 0 ]; then
    authload -url "http://127.0.0.1:$port/team/a.git/info/lfs/objects/batch" -rate "$RATE" \
      -for 1h -from 127.0.0.2 "$@" >"$work/guesser.out" 2>&1 &
    gpid=$!; echo "$gpid" >>"$work/pids"
    sleep 2 # the guesser's rate established
  fi
  cpu=$(server_cpu)
  push=$(median_push)
  if [ -n "$gpid" ]; then
    kill -INT "$gpid"; wait "$gpid" 2>/dev/null || true
    echo "      guesser ($build, $name): $(cat "$work/guesser.out")" >&2
  fi
  kill -KILL "$spid"; wait "$spid" 2>/dev/null || true # an old server may still be working off queued guesses
  echo "$cpu $push"
}

row() { # row BUILD SCENARIO CPU PUSH ALONE
  local ratio=-
  if [ "$4" = timeout ]; then
    ratio=">$(awk -v p="$PUSH_TIMEOUT" -v a="$5" 'BEGIN {printf "%.0f", p/a}')x"
    set -- "$1" "$2" "$3" ">$PUSH_TIMEOUT"
  else
    ratio=$(awk -v p="$4" -v a="$5" 'BEGIN {printf "%.2fx", p/a}')
  fi
  printf '%-6s %-36s %6s core %10ss %9s\n' "$1" "$2" "$3" "$4" "$ratio"
}

printf '%-6s %-36s %11s %11s %9s\n' server scenario "server CPU" "push (med.)" "vs alone"
for build in base this; do
  read -r cpu0 alone < <(scenario "$build" idle)
  if [ "$alone" = timeout ]; then echo "$build: a push alone timed out"; cat "$work/push.err"; exit 1; fi
  row "$build" idle "$cpu0" "$alone" "$alone"
  read -r cpu push < <(scenario "$build" "one user" -user alice)
  row "$build" "$RATE/s wrong passwords, one user" "$cpu" "$push" "$alone"
  read -r cpu push < <(scenario "$build" "new names" -names)
  row "$build" "$RATE/s wrong passwords, new names" "$cpu" "$push" "$alone"
done
echo "targets: under 0.5 core; push ≤ 1.2x alone (base: $BASE = $(git rev-parse --short "$BASE"), this: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo +changes))"
