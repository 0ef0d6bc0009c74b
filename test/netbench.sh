#!/usr/bin/env bash
# The agent against plain git-lfs through the same emulated link, one after the other in one run
# (issue 35's Targets table). Every server sits behind its own link emulator (test/linkemu:
# bandwidth shared by all connections, half the round trip added each way) and a counting proxy
# (test/countproxy, bytes):
#   - xet-server, its --public-url the emulator's address: the agent (batch mode);
#   - lfs-test-server (git-lfs's reference server), its LFS_HOST the emulator's: plain git-lfs;
#   - the Hub emulator (xet-server --hub-compat): the agent with `install --hub`, and plain git-lfs
#     through its bridge.
# The rows (NETBENCH_ROWS, comma-separated; default all):
#   clone     home  VN (4) versions of MIB/4 MiB, each a 0.5 % scattered edit of the last, pushed one
#                   at a time: `git clone` + `git lfs fetch --all`              target wall ≤ 0.4×
#   pull      home  `git lfs pull` after a 1 % scattered edit of MIB MiB       target wall ≤ 0.15×
#   push      home, far  first push of MIB MiB of random data                   target ≤ 1.05×
#   download  far   one MIB MiB download (`git lfs pull` in a clone without it) target ≥ 80 % of the link
#   hub       home  clone and pull through the Hub emulator: the ratios within 10 % of xet-server's
#   thin      thin  a clone of MIB MiB: no failure; progress reaches git-lfs at least every 5 s (the
#                   agent's progress messages, timed by a tap on its stdout) and bytes cross the link
#   mount     home  `git xet-transfer mount` of a revision with 1,000 small LFS files and a file of
#                   MOUNT_MIB MiB (v1, then a 0.5 % edit, v2), in a clone of pointers only:
#                   mount + `ls -lR` ≤ 1 s with no byte over the link; the first 1 MiB at a random
#                   offset ≤ 0.5 s (plain git-lfs fetches the whole file first: its time at the link's
#                   rate, computed, not run); `cat` of v1 ≥ 80 % of the link, the mount's CPU ≤ 1.5×
#                   that of `git lfs fetch` of the same object (the agent, same link); then v2 whole
#                   ≤ 2 % of the file over the link; the cache ≤ --cache-size + 64 MiB; the mount's
#                   peak RSS ≤ 256 MB
#   many      home  a clone of 48 unrelated files of 8 MiB (issue 42; MIB/128 MiB each, at least 1,
#                   when NETBENCH_MIB < 1024): unrelated downloads go side by side   target ≤ 1.05×
#   small     home, far  push, then clone, of NETBENCH_SMALL_N (1,000; 50 when NETBENCH_MIB < 1024)
#                   files of 1–10 KB in one commit
#                   (issue 46), both sides with lfs.concurrenttransfers NETBENCH_SMALL_TRANSFERS
#                   (default 8, git-lfs's): target ≤ 0.5× each (a far clone ≤ 0.3×); the xorbs and shards xet-server
#                   stored for the push (its metrics) are shown
# Set-up (pushes that are not measured, the clones a pull starts from) runs through an unshaped link.
# Also printed: what the emulator passes at 1 Gbit/s on this machine (linkemu -probe, target ≥ 95 %),
# the emulators' CPU during the measured transfers, and the peak RSS of every agent process (each
# runs under GNU time; target ≤ 256 MB).
#
# Knobs: NETBENCH_MIB (default 1024: the issue's sizes; 16 for a smoke run), NETBENCH_MOUNT_MIB (the
# mount row's file, default 4×MIB: 4096, issue 43's size), NETBENCH_ROWS,
# NETBENCH_PROFILES (the profiles to run, default home,far,thin: a row runs on those of its profiles
# listed), NETBENCH_LINK (one link for every row instead of its profile: a name or MBIT/RTT_MS, e.g.
# 400/2 for a quick run), NETBENCH_PROBE_MIB (default 256). With XET_BINDIR=DIR it runs the
# git-xet-transfer, xet-server and countproxy in DIR (test/binaries.sh). Runs in a temp dir; touches
# nothing else. Needs go, git, git-lfs, lfs-test-server (test/install-lfs-test-server.sh), python3,
# curl, GNU time. Disk: about 20 × MIB.
#
#   test/netbench.sh
#   NETBENCH_MIB=16 NETBENCH_LINK=400/2 test/netbench.sh                      (a smoke run)
#   NETBENCH_MIB=1024 NETBENCH_PROFILES=home NETBENCH_ROWS=clone,pull,push test/netbench.sh
# The script is one brace group, which bash reads whole before it runs any of it: an edit that
# rewrites this file in place during a run (a default run takes many minutes) does not change the run.
{
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
MIB=${NETBENCH_MIB:-1024}
MOUNT_MIB=${NETBENCH_MOUNT_MIB:-$((4 * MIB))}
ROWS=",${NETBENCH_ROWS:-clone,pull,push,download,hub,thin,many,small,mount},"
PROFILES=",${NETBENCH_PROFILES:-home,far,thin},"
LINK=${NETBENCH_LINK:-}
PROBE_MIB=${NETBENCH_PROBE_MIB:-256}
VN=4
SMALL_N=${NETBENCH_SMALL_N:-$((MIB >= 1024 ? 1000 : 50))} SMALL_T=${NETBENCH_SMALL_TRANSFERS:-8}
MANY_N=48 MANY_MIB=$((MIB >= 1024 ? 8 : (MIB / 128 > 1 ? MIB / 128 : 1)))
TOKEN=hf_netbenchWRITEtoken0123456789
LTS_USER=bench LTS_PASS=benchpass
[ -x /usr/bin/time ] || { echo "netbench: needs GNU time at /usr/bin/time" >&2; exit 1; }
command -v git-lfs >/dev/null || { echo "netbench: git-lfs is missing" >&2; exit 1; }
lts_bin=$(command -v lfs-test-server || echo "$(go env GOPATH)/bin/lfs-test-server")
[ -x "$lts_bin" ] || { echo "netbench: lfs-test-server is missing (test/install-lfs-test-server.sh builds it)" >&2; exit 1; }
[ "$MIB" -ge 4 ] || { echo "netbench: NETBENCH_MIB must be at least 4" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/xet-netbench.XXXXXX")
cleanup() {
  local rc=$?
  # the set-up's pushes write to setup.log: a failed one would otherwise end the script unexplained
  if [ "$rc" != 0 ] && [ -s "$work/setup.log" ]; then
    echo "netbench: exit $rc; the set-up's log (setup.log), last 40 lines:" >&2; tail -n 40 "$work/setup.log" >&2
  fi
  if [ "$rc" != 0 ] && [ -s "$work/agent.log" ]; then
    echo "netbench: the agents' last warnings and errors (agent.log):" >&2; grep -E '"level":"(warn|error)"' "$work/agent.log" | tail -n 20 >&2 || true
  fi
  [ -d "$work/mnt-point" ] && { "$work/bin/git-xet-transfer" unmount "$work/mnt-point" 2>/dev/null || fusermount3 -u -z "$work/mnt-point" 2>/dev/null || true; }
  for p in $(jobs -p); do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; [ -n "${NETBENCH_KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/bin" "$work/data"
. test/binaries.sh
xet_binaries "$work/bin"
go build -o "$work/bin/linkemu" ./test/linkemu
export GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0
unset GIT_DIR GIT_WORK_TREE GIT_TRACE GIT_XET_CPUPROFILE HF_TOKEN HF_ENDPOINT HF_HOME HF_XET_CACHE GIT_LFS_PROGRESS
export GIT_XET_LOG="$work/agent.log" GIT_XET_LOG_LEVEL="${NETBENCH_LOG_LEVEL:-info}" # NETBENCH_KEEP=1 keeps it
# The agent as git-lfs runs it, under GNU time: the peak RSS (KiB) of each process. Its stdout (the
# protocol) passes through tap.py, which notes the time of every progress message it carries in
# $NETBENCH_TAP: what git-lfs's progress meter is told (git-lfs writes GIT_LFS_PROGRESS lines for a
# clone's smudge only at the end of each file).
cat >"$work/tap.py" <<'PY'
import sys, time
out = open(sys.argv[1], "a", buffering=1)
for line in sys.stdin.buffer:
    sys.stdout.buffer.write(line)
    sys.stdout.buffer.flush()
    if b'"progress"' in line:
        out.write("%.3f\n" % time.time())
PY
cat >"$work/bin/agent" <<WRAP
#!/usr/bin/env bash
set -o pipefail
[ -n "\${NETBENCH_TAP:-}" ] || exec /usr/bin/time -a -o "$work/agent.times" -f "%M" "$work/bin/git-xet-transfer" "\$@"
/usr/bin/time -a -o "$work/agent.times" -f "%M" "$work/bin/git-xet-transfer" "\$@" | python3 -u "$work/tap.py" "\$NETBENCH_TAP"
WRAP
chmod 755 "$work/bin/agent"
: >"$work/agent.times"

on_row() { [[ "$ROWS" == *",$1,"* ]]; }
on_profile() { [[ "$PROFILES" == *",$1,"* ]]; }
link_of() { if [ -n "$LINK" ]; then echo "$LINK"; else echo "$1"; fi; } # the link a row of profile $1 runs on
. test/ports.sh
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
atmost() { awk -v a="$1" -v b="$2" 'BEGIN { print (a <= b) ? 1 : 0 }'; }
mb() { awk -v b="$1" 'BEGIN { printf "%.1f MB", b / 1e6 }'; }

# --- servers, each behind a counting proxy behind a link emulator ---
# server NAME: ports in emu_NAME (the address clients use), count_NAME (the proxy, asked directly).
declare -A emu_port count_port emu_pid emu_profile
chain() { # chain NAME BACKEND_PORT PROXY_PORT EMU_PORT: the proxy and the emulator (unshaped) in front of a server
  local name=$1 cport=$3 eport=$4
  count_port[$name]=$cport emu_port[$name]=$eport
  "$work/bin/countproxy" -listen "127.0.0.1:$cport" -backend "http://127.0.0.1:$2" 2>"$work/$name-count.log" &
  shape "$name" 0/0
}
shape() { # shape NAME PROFILE: restart NAME's emulator on its port with PROFILE; wait until it answers
  local name=$1 p=$2
  [ -n "${emu_pid[$name]:-}" ] && stop_emu "$name"
  "$work/bin/linkemu" -listen "127.0.0.1:${emu_port[$name]}" -backend "127.0.0.1:${count_port[$name]}" -profile "$p" 2>>"$work/$name-emu.log" &
  emu_pid[$name]=$! emu_profile[$name]=$p
  for _ in $(seq 200); do curl -fs "http://127.0.0.1:${emu_port[$name]}/__count" >/dev/null 2>&1 && return 0; sleep 0.05; done
  echo "netbench: the link emulator of $name did not start" >&2; cat "$work/$name-emu.log" >&2; exit 1
}
stop_emu() { # stop NAME's emulator; its summary line goes to NAME-emu.log (kept in emu.measured when shaped)
  local name=$1 pid=${emu_pid[$1]}
  kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
  emu_pid[$name]=""
  [ "${emu_profile[$name]}" = 0/0 ] || tail -n 1 "$work/$name-emu.log" >>"$work/emu.measured"
}
counted() { curl -fs "http://127.0.0.1:${count_port[$1]}/__count"; } # "<up> <down>"
url() { echo "http://127.0.0.1:${emu_port[$1]}"; }
wait_http() { for _ in $(seq 200); do curl -s -o /dev/null "$1" && return 0; sleep 0.05; done; echo "netbench: $1 did not answer" >&2; exit 1; }

declare -A metrics_port
start_xs() { # start_xs NAME [HUBTOKENS]: a fresh xet-server (or Hub emulator) behind its link
  local name=$1 ports port mport cport eport extra=()
  ports=$(freeports 4); read -r port mport cport eport <<<"$ports" # one call: none of them bound yet
  chain "$name" "$port" "$cport" "$eport"
  metrics_port[$name]=$mport
  extra=(--metrics-listen "127.0.0.1:${metrics_port[$name]}")
  [ -n "${2:-}" ] && extra+=(--hub-compat "$2")
  "$work/bin/xet-server" --listen "127.0.0.1:$port" --data "$work/$name" --public-url "$(url "$name")" "${extra[@]}" --log-level error 2>"$work/$name.log" &
  wait_http "http://127.0.0.1:$port/"
}
start_lts() { # lfs-test-server behind its link, its URLs naming the link, one user
  local ports port cport eport; ports=$(freeports 3); read -r port cport eport <<<"$ports"
  chain lts "$port" "$cport" "$eport"
  LFS_LISTEN="tcp://127.0.0.1:$port" LFS_HOST="127.0.0.1:${emu_port[lts]}" LFS_SCHEME=http LFS_ADMINUSER=admin LFS_ADMINPASS=adminpass \
    LFS_CONTENTPATH="$work/lts/content" LFS_METADB="$work/lts/lfs.db" "$lts_bin" >"$work/lts.log" 2>&1 &
  mkdir -p "$work/lts"
  for _ in $(seq 200); do
    curl -fs -u admin:adminpass -d "name=$LTS_USER&password=$LTS_PASS" "http://127.0.0.1:$port/mgmt/add" -o /dev/null && return 0
    sleep 0.05
  done
  echo "netbench: lfs-test-server did not start" >&2; cat "$work/lts.log" >&2; exit 1
}
echo "$TOKEN:netbench:write" >"$work/hub-tokens"
start_xs xs
start_lts
start_xs hub "$work/hub-tokens"

use() { # use NAME [xet|hub|plain]: a fresh HOME for NAME (made on first use), exported
  local name=$1 kind=${2:-xet} h="$work/home-$1"
  export HOME="$h" XDG_CACHE_HOME="$h/.cache"
  unset HF_ENDPOINT HF_TOKEN
  [ "$kind" = hub ] && export HF_ENDPOINT="$(url hub)" HF_TOKEN="$TOKEN"
  [ -d "$h" ] && return 0
  mkdir -p "$h"
  git config --global user.name netbench; git config --global user.email netbench@example.test
  git config --global init.defaultBranch main
  # a commit of 10,000 files starts git's automatic gc, in the background by default, which packs
  # the loose objects while the push reads them (git-lfs's pre-push: 'missing object'); in the
  # foreground it is part of the commit, which is not measured
  git config --global gc.autoDetach false
  # git-lfs authenticates its batch calls to lfs-test-server and the Hub with git's credential helper
  git config --global credential.helper store
  printf 'http://%s:%s@127.0.0.1:%s\nhttp://hf_user:%s@127.0.0.1:%s\n' "$LTS_USER" "$LTS_PASS" "${emu_port[lts]}" "$TOKEN" "${emu_port[hub]}" >"$h/.git-credentials"
  case $kind in
  plain) git lfs install >/dev/null ;;
  hub) (cd "$h" && "$work/bin/git-xet-transfer" install --hub >/dev/null) ;;
  *) (cd "$h" && "$work/bin/git-xet-transfer" install >/dev/null) ;;
  esac
  [ "$kind" = plain ] || git config --global lfs.customtransfer.xet.path "$work/bin/agent"
}
lfs_url() { # lfs_url SERVER REPO: the LFS endpoint of REPO on SERVER (through its link)
  case $1 in
  lts) echo "$(url lts)/" ;;
  hub) echo "$(url hub)/org/$2.git/info/lfs" ;;
  *) echo "$(url "$1")/team/$2.git/info/lfs" ;;
  esac
}
home_kind() { case $1 in lts) echo plain ;; hub) echo "$2" ;; *) echo xet ;; esac; }

# --- measuring ---
declare -A wall bytes gap still
measure() { # measure KEY SERVER COMMAND...: run COMMAND (in the current dir and HOME): its wall time,
  # the bytes received and sent at SERVER's proxy, the longest time no byte crossed the link (still,
  # sampled every 0.5 s) and, in the thin row, the longest time no progress reached git-lfs (gap: the
  # agent's progress messages and GIT_LFS_PROGRESS lines; start and end count)
  local key=$1 server=$2; shift 2
  local prog="$work/progress-$key" tap="$work/tap-$key" u0 d0 u1 d1 t0 t1
  : >"$prog"; : >"$tap"
  sync
  read -r u0 d0 < <(counted "$server")
  t0=$(now)
  watch_bytes "$server" "$work/still-$key" & local watcher=$!
  # the tap (a python process per agent) only where the progress is a target: the thin row
  local tapped=""; [[ $key == thin-* ]] && tapped=$tap
  GIT_LFS_PROGRESS="$prog" NETBENCH_TAP="$tapped" "$@" >"$work/last.log" 2>&1 || {
    kill "$watcher"; echo "netbench: FAILED: $key: $*" >&2; cat "$work/last.log" >&2; exit 1; }
  t1=$(now)
  touch "$work/still-$key.stop"; wait "$watcher" || true
  read -r u1 d1 < <(counted "$server")
  wall[$key]=$(secs "$t0" "$t1") bytes[$key]=$((d1 - d0 + u1 - u0)) still[$key]=$(cat "$work/still-$key")
  # progress moments: the agent's progress messages, and the progress file's lines (no time of their own: its mtime)
  gap[$key]=$( { echo "$t0"; cat "$tap"; [ -s "$prog" ] && stat -c %.3Y "$prog"; echo "$t1"; } | sort -n |
    awk 'NR > 1 && $1 - p > m { m = $1 - p } { p = $1 } END { printf "%.1f", m }')
  printf '  %-28s %8s s %12s  (no byte over the link for at most %s s%s)\n' "$key" "${wall[$key]}" "$(mb "${bytes[$key]}")" "${still[$key]}" \
    "${tapped:+, no progress for at most ${gap[$key]} s}"
}
watch_bytes() { # watch_bytes SERVER OUT: until OUT.stop exists, the longest spell (s) no byte went up or came down, from the start
  local server=$1 out=$2 last down=-1 d u max=0 t
  last=$(now)
  while [ ! -e "$out.stop" ]; do
    sleep 0.5
    read -r u d < <(counted "$server"); d=$((u + d)) t=$(now)
    if [ "$d" != "$down" ]; then down=$d last=$t; fi
    max=$(awk -v m="$max" -v a="$last" -v b="$t" 'BEGIN { d = b - a; printf "%.1f", (d > m) ? d : m }')
  done
  echo "$max" >"$out"
}

declare -a rows=()
row() { # row LABEL PROFILE AGENT PLAIN RATIO TARGET OK
  rows+=("$(printf '%-52s %-5s %-26s %-26s %-8s %-22s %s' "$1" "$2" "$3" "$4" "$5" "$6" "$([ "$7" = 1 ] && echo PASS || echo MISS)")")
  echo "${rows[-1]}"
}
fig() { printf '%s s, %s' "${wall[$1]}" "$(mb "${bytes[$1]}")"; } # the figures of a measured KEY

push_repo() { # push_repo NAME SERVER KIND FILE...: a repository whose model.bin is each FILE in turn,
  # one commit and push each, to a fresh local bare remote with its LFS on SERVER; leaves $remote
  local name=$1 server=$2 kind=$3; shift 3
  remote="$work/$name.git"
  use "$name-src" "$kind"
  git init -q --bare "$remote"
  git init -q "$work/$name-src"
  (cd "$work/$name-src" && git lfs track '*.bin' >/dev/null &&
    printf '[lfs]\n\turl = %s\n\tlocksverify = false\n' "$(lfs_url "$server" "$name")" >.lfsconfig &&
    git remote add origin "$remote" && git add . && git commit -q -m init)
  local f
  for f in "$@"; do
    (cd "$work/$name-src" && cp "$f" model.bin && git add model.bin && git commit -q -m "${f##*/}" && git push -q origin main >>"$work/setup.log" 2>&1)
  done
}

# --- the rows ---
size=$((MIB << 20)) vsize=$(((MIB << 20) / 4))
echo "netbench: $MIB MiB ($VN×$((MIB / 4)) MiB versions), rows ${ROWS:1:-1}, profiles ${PROFILES:1:-1}${LINK:+, every row on link $LINK}; $(nproc) cores"
# What the emulator passes at the fastest profile, whichever rows run.
probe=$("$work/bin/linkemu" -profile far -probe "$PROBE_MIB")
echo "$probe"
pct=$(echo "$probe" | sed -n 's/.*down [0-9]* Mbit\/s (\([0-9.]*\) %.*/\1/p')
row "link emulator alone, $PROBE_MIB MiB down (linkemu -probe)" far "$(echo "$probe" | sed -n 's/.*down \([0-9]* Mbit\/s\).*/\1/p')" "-" "-" "≥ 95 % of 1 Gbit/s" "$(atmost 95 "$pct")"

versions_ready=0
setup_versions() { # VN versions of MIB/4 MiB on xet-server, lfs-test-server (and the Hub), one push each
  [ $versions_ready = 1 ] && return; versions_ready=1
  echo "set-up: $VN versions of $((MIB / 4)) MiB, pushed one at a time (unshaped)"
  python3 "$root/test/editdata.py" versions "$work/data" v "$VN" "$vsize" 0.5
  local files=(); for i in $(seq "$VN"); do files+=("$work/data/v$i"); done
  push_repo vxs xs xet "${files[@]}"
  push_repo vlts lts plain "${files[@]}"
  if on_row hub; then push_repo vhub hub hub "${files[@]}"; fi
}
clone_fetch_all() { # clone_fetch_all KEY SERVER KIND REMOTE: measured git clone + git lfs fetch --all
  use "$1" "$3"; cd "$work"
  measure "$1" "$2" sh -c "git clone -q '$4' '$work/$1' && cd '$work/$1' && git lfs fetch --all origin"
  cmp "$work/$1/model.bin" "$work/data/v$VN"
  local n; n=$(find "$work/$1/.git/lfs/objects" -type f | wc -l)
  [ "$n" = "$VN" ] || { echo "netbench: $1 holds $n LFS objects, want $VN" >&2; exit 1; }
}

pull_ready=0
setup_pull() { # a MIB MiB file and its 1 % edit, pushed to each server; clones holding the first
  # version, one per server and kind of client (d-SERVER-KIND)
  [ $pull_ready = 1 ] && return; pull_ready=1
  echo "set-up: $MIB MiB and a 1 % edit of it (ten scattered patches), clones holding the first (unshaped)"
  python3 "$root/test/editdata.py" versions "$work/data" d 1 "$size" 0
  python3 "$root/test/editdata.py" patch "$work/data/d1" "$work/data/d2" 10 $((size / 1000))
  local s k
  for s in xs lts $(on_row hub && echo hub); do
    push_repo "d$s" "$s" "$(home_kind "$s" hub)" "$work/data/d1"
    for k in $(case $s in xs) echo xet ;; lts) echo plain ;; hub) echo hub plain ;; esac); do
      use "d-$s-$k" "$k"; git clone -q "$remote" "$work/d-$s-$k"
    done
    use "d$s-src" "$(home_kind "$s" hub)"
    (cd "$work/d$s-src" && cp "$work/data/d2" model.bin && git commit -q -am d2 && git push -q origin main >>"$work/setup.log" 2>&1)
    for k in $(case $s in xs) echo xet ;; lts) echo plain ;; hub) echo hub plain ;; esac); do
      use "d-$s-$k" "$k"; (cd "$work/d-$s-$k" && GIT_LFS_SKIP_SMUDGE=1 git pull -q)
    done
  done
}
lfs_pull() { # lfs_pull KEY SERVER KIND: measured git lfs pull of d2 in the clone holding d1
  use "d-$2-$3" "$3"; cd "$work/d-$2-$3"
  measure "$1" "$2" git lfs pull
  cmp model.bin "$work/data/d2"; cd "$work"
}

if on_row clone && on_profile home; then
  setup_versions
  echo "clone + fetch --all of $VN×$((MIB / 4)) MiB versions, link $(link_of home)"
  shape xs "$(link_of home)"; shape lts "$(link_of home)"
  clone_fetch_all clone-xet xs xet "$work/vxs.git"
  clone_fetch_all clone-plain lts plain "$work/vlts.git"
  shape xs 0/0; shape lts 0/0
  r=$(ratio "${wall[clone-xet]}" "${wall[clone-plain]}")
  row "clone + fetch --all, $VN×$((MIB / 4)) MiB versions" home "$(fig clone-xet)" "$(fig clone-plain)" "${r}×" "wall ≤ 0.4×" "$(atmost "$r" 0.4)"
fi
if on_row pull && on_profile home; then
  setup_pull
  echo "git lfs pull of a 1 % edit of $MIB MiB, link $(link_of home)"
  shape xs "$(link_of home)"; shape lts "$(link_of home)"
  lfs_pull pull-xet xs xet; lfs_pull pull-plain lts plain
  shape xs 0/0; shape lts 0/0
  r=$(ratio "${wall[pull-xet]}" "${wall[pull-plain]}")
  row "git lfs pull after a 1 % edit of $MIB MiB" home "$(fig pull-xet)" "$(fig pull-plain)" "${r}×" "wall ≤ 0.15×" "$(atmost "$r" 0.15)"
fi
if on_row push; then
  for p in home far; do
    on_profile $p || continue
    echo "first push of $MIB MiB of random data, link $(link_of $p)"
    python3 "$root/test/editdata.py" versions "$work/data" "push-$p-" 1 "$size" 0
    shape xs "$(link_of $p)"; shape lts "$(link_of $p)"
    for s in xs lts; do
      kind=$(home_kind $s xet); key="push-$p-$([ $s = xs ] && echo xet || echo plain)"
      push_repo "push-$p-$s" "$s" "$kind"
      use "push-$p-$s-src" "$kind"; cd "$work/push-$p-$s-src"
      cp "$work/data/push-$p-1" model.bin; git add model.bin; git commit -q -m push
      measure "$key" "$s" git push -q origin main
      cd "$work"
    done
    shape xs 0/0; shape lts 0/0
    r=$(ratio "${wall[push-$p-xet]}" "${wall[push-$p-plain]}")
    row "first push of $MIB MiB of random data" $p "$(fig push-$p-xet)" "$(fig push-$p-plain)" "${r}×" "≤ 1.05×" "$(atmost "$r" 1.05)"
    rm -f "$work/data/push-$p-1"
  done
fi
if on_row download && on_profile far; then
  setup_pull
  echo "one download of $MIB MiB, link $(link_of far)"
  shape xs "$(link_of far)"; shape lts "$(link_of far)"
  for s in xs lts; do
    kind=$(home_kind $s xet); key="download-$([ $s = xs ] && echo xet || echo plain)"
    use "download-$s" "$kind"; cd "$work"
    GIT_LFS_SKIP_SMUDGE=1 git clone -q "$work/d$s.git" "$work/download-$s"
    # A download is the object reaching the LFS store (git lfs fetch: the transfer and git-lfs's
    # check of it), not the checkout's second copy of it in the work tree.
    cd "$work/download-$s"; measure "$key" "$s" git lfs fetch; git lfs checkout; cmp model.bin "$work/data/d2"; cd "$work"
  done
  shape xs 0/0; shape lts 0/0
  pct() { awk -v b="$size" -v t="${wall[$1]}" -v l="$2" 'BEGIN { printf "%.1f", 100 * b * 8 / t / l }'; }
  case $(link_of far) in far) lb=1e9 ;; home) lb=100e6 ;; thin) lb=20e6 ;; *) lb=$(awk -v p="$(link_of far)" 'BEGIN { split(p, a, "/"); print a[1] * 1e6 }') ;; esac
  px=$(pct download-xet "$lb"); pp=$(pct download-plain "$lb")
  row "one download of $MIB MiB (% of the link)" far "$(fig download-xet) = $px %" "$(fig download-plain) = $pp %" "$(ratio "${wall[download-xet]}" "${wall[download-plain]}")×" "≥ 80 % of the link" "$(atmost 80 "$px")"
fi
if on_row hub && on_profile home; then
  echo "the Hub emulator, link $(link_of home): clone + fetch --all and pull, agent (--hub) vs plain git-lfs (bridge)"
  setup_versions; setup_pull
  shape hub "$(link_of home)"
  clone_fetch_all hclone-xet hub hub "$work/vhub.git"
  clone_fetch_all hclone-plain hub plain "$work/vhub.git"
  lfs_pull hpull-xet hub hub
  lfs_pull hpull-plain hub plain
  shape hub 0/0
  for w in clone pull; do
    hr=$(ratio "${wall[h$w-xet]}" "${wall[h$w-plain]}")
    xr=""; [ -n "${wall[$w-xet]:-}" ] && xr=$(ratio "${wall[$w-xet]}" "${wall[$w-plain]}")
    ok=0; [ -n "$xr" ] && ok=$(atmost "$hr" "$(awk -v x="$xr" 'BEGIN { print x * 1.1 }')")
    row "Hub emulator: $w (ratio vs xet-server's ${xr:-?}×)" home "$(fig h$w-xet)" "$(fig h$w-plain)" "${hr}×" "≤ 1.1 × xet-server's" "$ok"
  done
fi
if on_row thin && on_profile thin; then
  setup_pull
  echo "a clone of $MIB MiB, link $(link_of thin)"
  shape xs "$(link_of thin)"; shape lts "$(link_of thin)"
  for s in xs lts; do
    kind=$(home_kind $s xet); key="thin-$([ $s = xs ] && echo xet || echo plain)"
    use "thin-$s" "$kind"; cd "$work"
    measure "$key" "$s" git clone -q "$work/d$s.git" "$work/thin-$s"
    cmp "$work/thin-$s/model.bin" "$work/data/d2"
  done
  shape xs 0/0; shape lts 0/0
  r=$(ratio "${wall[thin-xet]}" "${wall[thin-plain]}")
  row "clone of $MIB MiB" thin "$(fig thin-xet)" "$(fig thin-plain)" "${r}×" "no timeout" 1
  row "  longest spell without progress (agent: its messages)" thin "${gap[thin-xet]} s" "${gap[thin-plain]} s (end of file only)" "-" "≤ 5 s" "$(atmost "${gap[thin-xet]}" 5)"
  # Informative: the issue's target is progress; a spell without bytes at the end is local work
  # (verification, git-lfs's re-hash and checkout), plain git-lfs's too.
  row "  longest spell without a byte over the link" thin "${still[thin-xet]} s" "${still[thin-plain]} s" "-" "(shown)" "-"
fi

if on_row mount && on_profile home && { [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; }; then
  echo "the mount row needs FUSE (/dev/fuse, fusermount3: apt-get install fuse3): skipped"
elif on_row mount && on_profile home; then
  msize=$((MOUNT_MIB << 20)) mcache=$(((MOUNT_MIB + MOUNT_MIB / 4) << 20)) mp="$work/mnt-point" xt="$work/bin/git-xet-transfer"
  echo "set-up: a revision of 1,000 small LFS files and $MOUNT_MIB MiB (v1; v2, a 0.5 % edit), pushed (unshaped)"
  python3 "$root/test/editdata.py" versions "$work/data" mount- 2 "$msize" 0.5
  push_repo mnt xs xet
  (cd "$work/mnt-src" && python3 -c '
import os, random
random.seed(43)
for i in range(1000):
    d = "small/d%d" % (i // 100)
    os.makedirs(d, exist_ok=True)
    open("%s/f%04d.bin" % (d, i), "wb").write(random.randbytes(1024 + i))
' && cp "$work/data/mount-1" model.bin && git add . && git commit -q -m v1 && git tag v1 &&
    cp "$work/data/mount-2" model.bin && git commit -q -am v2 && git push -q origin main v1 >>"$work/setup.log" 2>&1)
  use mnt xet; GIT_LFS_SKIP_SMUDGE=1 git clone -q "$remote" "$work/mnt"
  use mnt-fetch xet; GIT_LFS_SKIP_SMUDGE=1 git clone -q "$remote" "$work/mnt-fetch"
  echo "git xet-transfer mount, link $(link_of home)"
  mount_pid() { sed -n 's/.*(process \([0-9]*\),.*/\1/p' "$work/last.log"; }
  proc_cpu() { awk -v t="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / t }' "/proc/$1/stat"; }
  proc_hwm() { awk '/^VmHWM/ { print $2 * 1024 }' "/proc/$1/status"; }
  unmount_wait() { "$xt" unmount "$mp"; while kill -0 "$1" 2>/dev/null; do sleep 0.1; done; }
  use mnt xet; cd "$work/mnt"
  shape xs "$(link_of home)"
  measure mount-ls xs sh -c "'$xt' mount --background --cache-size $mcache --rev v1 '$mp' && ls -lR '$mp' >/dev/null"
  mpid=$(mount_pid)
  off=$(python3 -c "import random; random.seed(7); print(random.randrange($msize - (1 << 20)))")
  measure mount-1mib xs dd if="$mp/model.bin" of=/dev/null bs=1M count=1 skip="$off" iflag=skip_bytes
  c0=$(proc_cpu "$mpid")
  measure mount-cat xs sh -c "cat '$mp/model.bin' >/dev/null"
  c1=$(proc_cpu "$mpid") rss=$(proc_hwm "$mpid")
  unmount_wait "$mpid"
  measure mount-v2 xs sh -c "'$xt' mount --background --cache-size $mcache '$mp' && cat '$mp/model.bin' >/dev/null"
  mpid=$(mount_pid) rss2=$(proc_hwm "$mpid")
  [ "$rss2" -gt "$rss" ] && rss=$rss2
  use mnt-fetch xet; cd "$work/mnt-fetch"
  measure mount-fetch xs /usr/bin/time -o "$work/fetch.cpu" -f "%U %S" git lfs fetch origin v1 -I model.bin
  shape xs 0/0
  cmp "$mp/model.bin" "$work/data/mount-2"
  unmount_wait "$mpid"
  cache=$(du -s -B1 "$work/mnt/.git/lfs/xet/mount-cache" | cut -f1)
  cd "$work"
  mcpu=$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }') fcpu=$(awk '{ printf "%.2f", $1 + $2 }' "$work/fetch.cpu")
  whole=$(awk -v b="$msize" 'BEGIN { printf "%.0f", b * 8 / 100e6 }') # plain git-lfs: the whole file at 100 Mbit/s first
  case $(link_of home) in far) lb=1e9 ;; home) lb=100e6 ;; thin) lb=20e6 ;; *) lb=$(awk -v p="$(link_of home)" 'BEGIN { split(p, a, "/"); print a[1] * 1e6 }') ;; esac
  # the link's use while cat ran: the bytes that crossed it (the first 1 MiB's read had fetched a
  # little of the file already) over the time
  pc=$(awk -v b="${bytes[mount-cat]}" -v t="${wall[mount-cat]}" -v l="$lb" 'BEGIN { printf "%.1f", 100 * b * 8 / t / l }')
  pv=$(awk -v b="${bytes[mount-v2]}" -v s="$msize" 'BEGIN { printf "%.2f", 100 * b / s }')
  row "mount + ls -lR: 1,000 LFS files and a $MOUNT_MIB MiB one" home "$(fig mount-ls)" "-" "-" "≤ 1 s, no byte fetched" "$([ "$(atmost "${wall[mount-ls]}" 1)" = 1 ] && [ "${bytes[mount-ls]}" = 0 ] && echo 1 || echo 0)"
  row "first 1 MiB at a random offset of $MOUNT_MIB MiB" home "${wall[mount-1mib]} s" "~$whole s (the whole file first, computed)" "-" "≤ 0.5 s" "$(atmost "${wall[mount-1mib]}" 0.5)"
  row "cat of $MOUNT_MIB MiB through the mount (% of link)" home "$(fig mount-cat) = $pc %" "git lfs fetch: $(fig mount-fetch)" "$(ratio "${wall[mount-cat]}" "${wall[mount-fetch]}")×" "≥ 80 % of the link" "$(atmost 80 "$pc")"
  row "  CPU: the mount process vs git lfs fetch's" home "$mcpu s" "$fcpu s" "$(ratio "$mcpu" "$fcpu")×" "≤ 1.5×" "$(atmost "$(ratio "$mcpu" "$fcpu")" 1.5)"
  row "v2 (0.5 % edit) whole after v1, over the link" home "$(fig mount-v2) = $pv % of the file" "-" "-" "≤ 2 % of the file" "$(atmost "$pv" 2)"
  row "mount cache after both (du; --cache-size $(mb "$mcache"))" - "$(mb "$cache")" "-" "-" "≤ cache + 64 MiB" "$(atmost "$cache" $((mcache + (64 << 20))))"
  row "peak RSS of the mount process" - "$(mb "$rss")" "-" "-" "≤ 256 MB" "$(atmost "$rss" 256000000)"
fi

if on_row many && on_profile home; then
  echo "set-up: $MANY_N unrelated files of $MANY_MIB MiB, pushed in one commit (unshaped)"
  mkdir -p "$work/data/many"
  python3 "$root/test/editdata.py" unrelated "$work/data/many" m "$MANY_N" $((MANY_MIB << 20))
  for s in xs lts; do
    push_repo "many$s" "$s" "$(home_kind "$s" xet)"
    (cd "$work/many$s-src" && for f in "$work/data/many"/m*; do cp "$f" "${f##*/}.bin"; done &&
      git add . && git commit -q -m many && git push -q origin main >>"$work/setup.log" 2>&1)
  done
  echo "clone of $MANY_N unrelated files of $MANY_MIB MiB, link $(link_of home)"
  shape xs "$(link_of home)"; shape lts "$(link_of home)"
  for s in xs lts; do
    kind=$(home_kind $s xet); key="many-$([ $s = xs ] && echo xet || echo plain)"
    use "many-$s" "$kind"; cd "$work"
    measure "$key" "$s" git clone -q "$work/many$s.git" "$work/many-$s"
    for f in "$work/data/many"/m*; do cmp "$f" "$work/many-$s/${f##*/}.bin"; done
  done
  shape xs 0/0; shape lts 0/0
  r=$(ratio "${wall[many-xet]}" "${wall[many-plain]}")
  row "clone of $MANY_N unrelated files of $MANY_MIB MiB" home "$(fig many-xet)" "$(fig many-plain)" "${r}×" "≤ 1.05×" "$(atmost "$r" 1.05)"
  rm -rf "$work/data/many" "$work"/many-xs "$work"/many-lts
fi

stored() { # stored NAME: "<xorbs> <shards>" xet-server NAME has stored (its metrics)
  curl -fs "http://127.0.0.1:${metrics_port[$1]}/metrics" |
    awk '$1 == "xet_xorbs_stored_total" { x = $2 } $1 == "xet_shards_stored_total" { s = $2 } END { printf "%d %d\n", x, s }'
}
if on_row small; then
  echo "set-up: $SMALL_N files of 1–10 KB (random bytes, new ones for each profile: the servers must not have them), lfs.concurrenttransfers $SMALL_T"
  for p in home far; do
    on_profile $p || continue
    rm -rf "$work/data/small"; mkdir -p "$work/data/small"
    python3 - "$work/data/small" "$SMALL_N" "46-$p" <<'PY'
import os, random, sys
r = random.Random(sys.argv[3])
for i in range(int(sys.argv[2])):
    with open(os.path.join(sys.argv[1], "s%05d.bin" % i), "wb") as f:
        f.write(r.randbytes(r.randint(1000, 10000)))
PY
    echo "push, then clone, of $SMALL_N files of 1–10 KB, link $(link_of $p)"
    shape xs "$(link_of $p)"; shape lts "$(link_of $p)"
    for s in xs lts; do
      kind=$(home_kind $s xet); side=$([ $s = xs ] && echo xet || echo plain)
      push_repo "small-$p-$s" "$s" "$kind"
      git config --global lfs.concurrenttransfers "$SMALL_T"
      cd "$work/small-$p-$s-src"; cp "$work/data/small"/s*.bin .; git add .; git commit -q -m small
      [ $s = xs ] && read -r x0 h0 < <(stored xs)
      measure "small-push-$p-$side" "$s" git push -q origin main
      [ $s = xs ] && read -r x1 h1 < <(stored xs)
      use "small-$p-$s-clone" "$kind"; git config --global lfs.concurrenttransfers "$SMALL_T"; cd "$work"
      measure "small-clone-$p-$side" "$s" git clone -q "$remote" "$work/small-$p-$s-clone"
      for f in "$work/data/small"/s*.bin; do cmp "$f" "$work/small-$p-$s-clone/${f##*/}"; done
      rm -rf "$work/small-$p-$s-clone" "$work/small-$p-$s-src"
    done
    shape xs 0/0; shape lts 0/0
    for w in push clone; do
      r=$(ratio "${wall[small-$w-$p-xet]}" "${wall[small-$w-$p-plain]}")
      tgt=0.5; [ $w = clone ] && [ $p = far ] && tgt=0.3 # issue 46: round trips cost more far away
      row "$w of $SMALL_N files of 1–10 KB ($SMALL_T transfers)" $p "$(fig small-$w-$p-xet)" "$(fig small-$w-$p-plain)" "${r}×" "≤ ${tgt}×" "$(atmost "$r" $tgt)"
    done
    row "  xorbs and shards xet-server stored for the push" $p "$((x1 - x0)) xorbs, $((h1 - h0)) shards" "-" "-" "≤ 8 each" "$([ $((x1 - x0)) -le 8 ] && [ $((h1 - h0)) -le 8 ] && echo 1 || echo 0)"
  done
  rm -rf "$work/data/small"
fi

# The emulators' CPU over the measured transfers (their summary lines: "... in T s; CPU U s user + S s system").
if [ -s "$work/emu.measured" ]; then
  read -r ecpu ewall < <(awk '{ for (i = 1; i <= NF; i++) { if ($i == "in") t += $(i + 1); if ($i == "user") u += $(i - 2); if ($i == "system") u += $(i - 2) } } END { printf "%.2f %.1f\n", u, t }' "$work/emu.measured")
  row "link emulators' CPU while shaping" - "$ecpu s in $ewall s" "-" "$(ratio "$ecpu" "$ewall")" "small (< 0.1 of a core)" "$(atmost "$(ratio "$ecpu" "$ewall")" 0.1)"
fi
peak=$(awk '/^[0-9]+$/ && $1 + 0 > m { m = $1 + 0 } END { printf "%d", m }' "$work/agent.times")
procs=$(awk '/^[0-9]+$/ { n++ } END { print n + 0 }' "$work/agent.times")
row "peak RSS of an agent process (max of $procs)" - "$(awk -v k="$peak" 'BEGIN { printf "%.1f MB", k * 1024 / 1e6 }')" "-" "-" "≤ 256 MB" "$(atmost $((peak * 1024)) 256000000)"

echo
echo "summary ($(date -u +%Y-%m-%d), $(nproc) cores, $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo); $MIB MiB; agent vs plain git-lfs, one run):"
printf '%-52s %-5s %-26s %-26s %-8s %-22s %s\n' "row" "link" "agent" "plain git-lfs" "ratio" "target" ""
printf '%s\n' "${rows[@]}"
exit
}
