#!/usr/bin/env bash
# Scale (issue 44): how the agent's costs grow from demo sizes to what users push, against plain
# git-lfs on the same data in the same run (the two sides one after the other, alternating). Rows:
#   many-files  N files of 1–64 KiB (random, seeded) in one commit, two cases:
#                 embedded  the agent to a local bare remote (the embedded Xet store) against plain
#                           git-lfs to the same kind of remote (its standalone file transfer);
#                 server    the agent against xet-server against plain git-lfs against
#                           lfs-test-server (each fresh, on loopback, behind test/countproxy);
#               push and clone time, peak RSS, the store's files and bytes, bytes sent.
#   big-file    one random file of S MiB, embedded case: push, clone, `git lfs fetch` in a clone of
#               pointers only, peak RSS, and the temporary disk each used (the peak of `du` of the
#               step's directory, sampled every 0.2 s, less its size at the end; TMPDIR points there).
#   history     V versions of an H-MiB file, each the previous with 0.5 % rewritten in 64 KiB blocks
#               (test/editdata.py), pushed one at a time (commit, push, `git lfs prune`) to xet-server
#               and to lfs-test-server: seconds and bytes sent of each push, the agent's shard cache,
#               then in a fresh clone of pointers `git lfs pull` of the newest and `git lfs fetch
#               --all` (bytes received against what the server stores).
#   server      rows 4–5 (many clients, a large index): `test/scale-server.sh`, when it exists, with
#               the same SCALE_POINTS, SCALE_WORK and --quick.
# Peak RSS (*_peak_rss_mb): the agent's is the largest of its processes (each runs under GNU time);
# plain git-lfs's is the largest process of the command (GNU time of git): git-lfs in a push or a
# fetch, but git itself in a clone of a big file (git holds a smudged file whole in memory on both
# sides: 4.3 GB at 4 GiB), so that figure is git's, not git-lfs's.
# Each measured value is a JSON line in $SCALE_POINTS (row, case, side, x, x_unit, metric, value,
# unit); at the end they are gathered into one JSON document (--out FILE, default scale.json in the
# scratch dir: {"run": {...}, "points": [...], "targets": [...]}) and a table is printed: each
# row/case/size with the agent, the baseline and their ratio, the growth of the cost per unit from
# the smallest size to the largest (target ≤ 1.2×), and issue 44's targets as met or missed. A
# missed target is reported, not a failure: the script fails only when a command fails or a clone
# is not byte-exact. test/scalechart turns the JSON into SVG charts.
#
# Knobs (environment; --quick sets SCALE_QUICK=1, whose defaults are in brackets):
#   SCALE_ROWS         rows to run, comma-separated (many-files,big-file,history,server)
#   SCALE_FILES        row 1's sizes, files        (1000 10000 50000)       [100 300]
#   SCALE_SERVER_CASE  1: row 1 also on xet-server / lfs-test-server (1)
#   SCALE_SERVER_FILES row 1's sizes on the servers (those of SCALE_FILES up to 10,000). The
#                      server case at 50,000 files took 7 of the default run's 46 minutes, for
#                      ratios the embedded case's medians already bound; SCALE_SERVER_FILES=
#                      "1000 10000 50000" runs it.
#   SCALE_BIG_MIB      row 2's sizes, MiB          (1024 4096 8192; 16384 is the issue's knob) [16 48]
#   SCALE_HIST_MIB     row 3's file, MiB           (256)                    [8]
#   SCALE_HIST_N       row 3's versions            (50)                     [4]
#   SCALE_HIST_AT      versions shown in the table (1 10 25 50)             [1 2 4]
#   SCALE_RUNS         runs of each side at row 1's largest size, embedded case; the medians are
#                      kept (3) [1]
#   SCALE_SERVER_RUNS  the same for the server case (1): its ratios at 50,000 files (0.44x push,
#                      0.73x clone, when run) are far from the targets, and one run of
#                      lfs-test-server at that size takes minutes
#   SCALE_RUNS_OTHER   runs at every other size and row (1)
#   SCALE_FS           where the steps run: image (the default), an ext4 image with a journal on
#                      this disk through a loop device (test/scratchfs.sh; needs root), or dir, the
#                      scratch dir itself. On ext4 without a journal (this project's VMs) the inode
#                      allocator skips recently deleted inodes one lookup at a time, so a step run
#                      after another's delete measured up to 3x slower, whichever side it was; in
#                      the image a delete costs the next step nothing. Without root, dir.
#   SCALE_PAUSE        seconds of rest after a step deletes its files (0)
#   SCALE_COLD         1: row 2's steps start with the page cache dropped (default 1 where
#                      /proc/sys/vm/drop_caches takes a write, i.e. as root). The largest file does
#                      not fit in the cache and the smallest does, so without it the per-GiB ratio
#                      compares reads from the disk with reads from memory (16 GiB against 1 GiB:
#                      push 1.64x, fetch 1.56x warm).
#   SCALE_DEFER_DELETE 1: steps move what they made aside, deleted only when the script ends (0):
#                      the older remedy for SCALE_FS=dir (the disk then holds every step: about
#                      1.7 GB a step at 10,000 files; not for 50,000 or big files).
#   SCALE_PROFILE      DIR: the agent's measured pushes, clones and fetches of rows 1–3 write CPU
#                      profiles (GIT_XET_CPUPROFILE) to DIR/ROW-CASE-SIZE-OP (go tool pprof -top)
#   SCALE_WORK         scratch dir (default: a new temp dir, deleted at the end unless SCALE_KEEP=1)
#   SCALE_POINTS       the JSON Lines file (default: points.jsonl in the scratch dir)
#   XET_BINDIR         run the binaries in DIR instead of building them (test/binaries.sh)
# Flags: --quick, --out FILE. Needs go, git, git-lfs, lfs-test-server (test/install-lfs-test-server.sh),
# python3, curl, GNU time; for SCALE_FS=image root, mkfs.ext4, losetup and fstrim (util-linux, e2fsprogs).
# Each size's data is committed once (`template`, through test/lfsstage: the objects and pointers
# git-lfs's clean filter would write, without a pass of the bytes through it); every step pushes and
# clones a copy of that repository made of hard links. Disk: at most about 4 S at the big file's
# size S (the template's object, which no work tree holds; the store; the clone's file and
# object): 32 GiB at 8 GiB; every step deletes what it made before the next
# (in the image, SCALE_FS, the freed blocks are trimmed: the disk holds what the steps hold).
# Time, on a quiet 2-core machine, in the image: the default run took 25 minutes (rows 1-3: 10,
# 7 and 4; rows 4-5: 4, of which row 5's fill 2.5); on a slower one, with row 1's server case at
# 50,000 files, 46. SCALE_RUNS=1 SCALE_BIG_MIB="1024 4096" is shorter. Each row's time is printed,
# and kept in the JSON.
#
#   test/scale.sh --quick          SCALE_ROWS=many-files SCALE_FILES="1000 5000" test/scale.sh --out /tmp/s.json
# The script is one brace group, which bash reads whole before it runs any of it: an edit that
# rewrites this file in place during a run (the default run takes half an hour) does not change the run.
{
set -euo pipefail
# A command that fails outside run() ends the script through set -e, which says nothing: name it.
set -E
trap 'echo "scale: FAILED (exit $?) at line $LINENO: $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/.."
. test/median.sh
root=$(pwd)
OUT=""
while [ $# -gt 0 ]; do
  case $1 in
  --quick) export SCALE_QUICK=1 ;;
  --out) OUT=$2; shift ;;
  --out=*) OUT=${1#--out=} ;;
  *) echo "scale: unknown argument $1 (--quick, --out FILE)" >&2; exit 2 ;;
  esac
  shift
done
Q=${SCALE_QUICK:-0}
pick() { if [ "$Q" = 1 ]; then echo "$2"; else echo "$1"; fi; }
ROWS=,${SCALE_ROWS:-many-files,big-file,history,server},
FILES=${SCALE_FILES:-$(pick "1000 10000 50000" "100 300")}
SERVER_CASE=${SCALE_SERVER_CASE:-1}
SERVER_FILES=${SCALE_SERVER_FILES:-$(for n in $FILES; do [ "$n" -gt 10000 ] || printf '%s ' "$n"; done)}
SERVER_FILES=$(echo $SERVER_FILES) # one line, single spaces: it goes into the JSON's knobs
PAUSE=${SCALE_PAUSE:-0}
BIG=${SCALE_BIG_MIB:-$(pick "1024 4096 8192" "16 48")}
HMIB=${SCALE_HIST_MIB:-$(pick 256 8)}
HN=${SCALE_HIST_N:-$(pick 50 4)}
HAT=${SCALE_HIST_AT:-$(pick "1 10 25 50" "1 2 4")}
RUNS=${SCALE_RUNS:-$(pick 3 1)}
SERVER_RUNS=${SCALE_SERVER_RUNS:-1}
RUNS_OTHER=${SCALE_RUNS_OTHER:-1}
# (a container may show the file writable and refuse the write: the default tries it once, and
# only when row 2 runs, the one row that drops the cache)
COLD=0
if [ -n "${SCALE_COLD:-}" ]; then COLD=$SCALE_COLD
elif [[ $ROWS == *,big-file,* ]] && (echo 3 >/proc/sys/vm/drop_caches) 2>/dev/null; then COLD=1; fi
[ -x /usr/bin/time ] || { echo "scale: needs GNU time at /usr/bin/time" >&2; exit 1; }
for t in git git-lfs python3 curl; do command -v $t >/dev/null || { echo "scale: $t is missing" >&2; exit 1; }; done
lts_bin=$(command -v lfs-test-server || echo "$(go env GOPATH)/bin/lfs-test-server")
[ -x "$lts_bin" ] || { echo "scale: lfs-test-server is missing (test/install-lfs-test-server.sh builds it)" >&2; exit 1; }

# The caller's HOME, caches and TMPDIR: each side's steps export their own (use), and
# test/scale-server.sh starts from the caller's (its go builds use the caller's build cache).
orig_env=(HOME="$HOME" XDG_CACHE_HOME="${XDG_CACHE_HOME:-$HOME/.cache}" TMPDIR="${TMPDIR:-/tmp}")
made_work=""
if [ -z "${SCALE_WORK:-}" ]; then SCALE_WORK=$(mktemp -d "${TMPDIR:-/tmp}/xet-scale.XXXXXX"); made_work=1; fi
mkdir -p "$SCALE_WORK"
work=$(cd "$SCALE_WORK" && pwd)
export SCALE_WORK=$work SCALE_QUICK=$Q
export SCALE_POINTS=${SCALE_POINTS:-$work/points.jsonl}
: >"$SCALE_POINTS"
[ -n "$OUT" ] || OUT=$work/scale.json
. test/scratchfs.sh
steps=""
cleanup() {
  for p in $(jobs -p); do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -z "$steps" ] || [ "${SCALE_KEEP:-0}" = 1 ] || rm -rf "$steps/deferred"
  scratch_fs_unmount "$([ "${SCALE_KEEP:-0}" = 1 ] && echo keep)"
  [ -n "$made_work" ] && [ "${SCALE_KEEP:-0}" != 1 ] && rm -rf "$work"
  return 0
}
trap cleanup EXIT
trap "exit 130" INT
trap "exit 143" TERM
# Every step runs in $steps: an ext4 image with a journal on this disk (test/scratchfs.sh: why), or
# $work itself with SCALE_FS=dir.
SCRATCH_FS=${SCALE_FS:-image}
scratch_fs_mount "$work"
steps=$SCRATCH_DIR
mkdir -p "$work/bin"
. test/binaries.sh
xet_binaries "$work/bin" >/dev/null
go build -o "$work/bin/lfsstage" ./test/lfsstage # set-up, not under test: from this checkout even with XET_BINDIR
export GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0
unset GIT_DIR GIT_WORK_TREE GIT_TRACE GIT_XET_CPUPROFILE GIT_XET_LOG HF_TOKEN HF_ENDPOINT HF_HOME HF_XET_CACHE GIT_LFS_PROGRESS
LTS_USER=scale LTS_PASS=scalepass
started=$SECONDS

# --- points ---
point() { # point ROW CASE SIDE X X_UNIT METRIC VALUE UNIT
  printf '{"row":"%s","case":"%s","side":"%s","x":%s,"x_unit":"%s","metric":"%s","value":%s,"unit":"%s"}\n' "$@" >>"$SCALE_POINTS"
}
declare -A V # V[ROW|CASE|SIDE|X|METRIC] = the values of the runs, one a line
keep() { # keep ROW CASE SIDE X METRIC VALUE: a run's value, its median written by flush
  V[$1|$2|$3|$4|$5]+="$6"$'\n'
}
flush() { # flush X_UNIT: write the median of every kept value as a point, forget them
  local k
  for k in "${!V[@]}"; do
    IFS='|' read -r r c s x m <<<"$k"
    point "$r" "$c" "$s" "$x" "$1" "$m" "$(printf '%s' "${V[$k]}" | median)" "$(unit "$m")"
  done
  V=()
}
unit() { case $1 in *_s) echo s ;; *_mb) echo MB ;; *bytes*) echo bytes ;; *files*) echo files ;; *) echo 1 ;; esac; }

# --- processes ---
. test/ports.sh
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
wait_url() { # wait_url URL LOG NAME
  for _ in $(seq 200); do curl -fs -o /dev/null "$1" && return 0; sleep 0.05; done
  echo "scale: $3 did not start" >&2; cat "$2" >&2; exit 1
}
servers=() xs_proxy="" lts_proxy="" xs_data="" lts_data=""
start_servers() { # start_servers DIR: a fresh xet-server and lfs-test-server, each behind a countproxy
  local d=$1 ports sp pp lp lpp
  ports=$(freeports 4)
  read -r sp pp lp lpp <<<"$ports"
  xs_proxy="http://127.0.0.1:$pp" lts_proxy="http://127.0.0.1:$lpp" xs_data="$d/xs" lts_data="$d/lts"
  mkdir -p "$xs_data" "$lts_data"
  "$work/bin/xet-server" --listen "127.0.0.1:$sp" --data "$xs_data" --public-url "$xs_proxy" --log-level error 2>"$d/xs.log" &
  servers+=($!)
  "$work/bin/countproxy" -listen "127.0.0.1:$pp" -backend "http://127.0.0.1:$sp" 2>"$d/xs-proxy.log" &
  servers+=($!)
  LFS_LISTEN="tcp://127.0.0.1:$lp" LFS_HOST="127.0.0.1:$lpp" LFS_SCHEME=http LFS_ADMINUSER=admin LFS_ADMINPASS=adminpass \
    LFS_CONTENTPATH="$lts_data/content" LFS_METADB="$lts_data/lfs.db" "$lts_bin" >"$d/lts.log" 2>&1 &
  servers+=($!)
  "$work/bin/countproxy" -listen "127.0.0.1:$lpp" -backend "http://127.0.0.1:$lp" 2>"$d/lts-proxy.log" &
  servers+=($!)
  # The proxies answer /__count on their own: each backend is waited for itself.
  wait_url "http://127.0.0.1:$sp/readyz" "$d/xs.log" xet-server
  wait_url "$xs_proxy/__count" "$d/xs-proxy.log" countproxy
  wait_url "$lts_proxy/__count" "$d/lts-proxy.log" countproxy
  for _ in $(seq 200); do
    curl -fs -u admin:adminpass -d "name=$LTS_USER&password=$LTS_PASS" "http://127.0.0.1:$lp/mgmt/add" -o /dev/null && return 0
    sleep 0.05
  done
  echo "scale: lfs-test-server did not start" >&2; cat "$d/lts.log" >&2; exit 1
}
stop_servers() {
  local p
  for p in "${servers[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${servers[@]}"; do wait "$p" 2>/dev/null || true; done
  servers=()
}
counted() { # counted PROXY: "<up> <down>"
  curl -fsS "$1/__count" || { echo "scale: the counting proxy $1 does not answer (its log is beside the server's)" >&2; return 1; }
}

# --- homes and the measured commands ---
use() { # use DIR agent|git-lfs: a HOME in DIR (made on first use) for that side, exported, TMPDIR in it
  local h=$1/home
  export HOME="$h" XDG_CACHE_HOME="$h/.cache" TMPDIR="$h/tmp"
  [ -d "$h" ] && return 0
  mkdir -p "$h/tmp"
  git config --global user.name scale; git config --global user.email scale@example.test
  git config --global init.defaultBranch main
  git config --global credential.helper store
  # git's automatic gc after a commit of more than 6,700 objects runs in the background by default and
  # packs the loose objects while the push that follows reads them: git-lfs's pre-push then failed with
  # 'missing object' (10,000 files). In the foreground, it is part of the commit, not of the push.
  git config --global gc.autoDetach false
  [ -n "$lts_proxy" ] && echo "http://$LTS_USER:$LTS_PASS@${lts_proxy#http://}" >"$h/.git-credentials"
  if [ "$2" = agent ]; then
    (cd "$h" && "$work/bin/git-xet-transfer" install >/dev/null)
    # the agent as install configured it, under GNU time: the peak RSS (KiB) of each process
    local path; path=$(git config --global lfs.customtransfer.xet.path)
    printf '#!/bin/sh\nexec /usr/bin/time -a -o "$SCALE_AGENT_TIMES" -f %%M "%s" "$@"\n' "$path" >"$h/agent"
    chmod 755 "$h/agent"
    git config --global lfs.customtransfer.xet.path "$h/agent"
  else
    git lfs install >/dev/null
  fi
}
lfs_config() { # lfs_config SIDE: the .lfsconfig of a repository on the servers of the current step
  if [ "$1" = agent ]; then printf '[lfs]\n\turl = %s/team/scale.git/info/lfs\n\tlocksverify = false\n' "$xs_proxy"
  else printf '[lfs]\n\turl = %s/\n\tlocksverify = false\n' "$lts_proxy"; fi
}
T_WALL=0 T_RSS=0 T_AGENT=0 T_UP=0 T_DOWN=0 T_TMP=0
run() { # run PROXY|- DU_DIR|- COMMAND...: run COMMAND: its wall time (T_WALL), the peak RSS of its
  # largest process and of the agent's (T_RSS, T_AGENT, MB), the bytes up and down at PROXY, and the
  # peak of DU_DIR's size during it less its size after (T_TMP, MB)
  local proxy=$1 dudir=$2 u0=0 d0=0 u1=0 d1=0 t0 t1 c watcher=""; shift 2
  export SCALE_AGENT_TIMES="$work/agent.times"
  : >"$SCALE_AGENT_TIMES"
  sync
  if [ "$proxy" != - ]; then c=$(counted "$proxy"); read -r u0 d0 <<<"$c"; fi
  if [ "$dudir" != - ]; then
    rm -f "$work/du.stop"
    (m=0; while [ ! -e "$work/du.stop" ]; do s=$(du -sb "$dudir" 2>/dev/null | cut -f1) || s=0; [ "${s:-0}" -gt $m ] && m=$s; echo $m >"$work/du.max"; sleep 0.2; done) &
    watcher=$!
  fi
  t0=$(now)
  /usr/bin/time -f %M -o "$work/cmd.rss" "$@" >"$work/last.log" 2>&1 || {
    echo "scale: FAILED: $* (in $PWD)" >&2; cat "$work/last.log" >&2; exit 1; }
  t1=$(now)
  T_WALL=$(secs "$t0" "$t1")
  if [ -n "$watcher" ]; then
    touch "$work/du.stop"; wait "$watcher" || true
    local end; end=$(du -sb "$dudir" | cut -f1)
    T_TMP=$(awk -v m="$(cat "$work/du.max")" -v e="$end" 'BEGIN { d = m - e; printf "%.1f", (d > 0 ? d : 0) / 1e6 }')
  fi
  if [ "$proxy" != - ]; then c=$(counted "$proxy"); read -r u1 d1 <<<"$c"; fi
  T_UP=$((u1 - u0)) T_DOWN=$((d1 - d0))
  T_RSS=$(awk '/^[0-9]+$/ { m = $1 } END { printf "%.1f", m * 1024 / 1e6 }' "$work/cmd.rss")
  T_AGENT=$(awk '/^[0-9]+$/ && $1 + 0 > m { m = $1 + 0 } END { printf "%.1f", m * 1024 / 1e6 }' "$SCALE_AGENT_TIMES")
}
profile() { # profile SIDE LABEL: the next agent processes write CPU profiles to $SCALE_PROFILE/LABEL
  unset GIT_XET_CPUPROFILE
  if [ -n "${SCALE_PROFILE:-}" ] && [ "$1" = agent ]; then mkdir -p "$SCALE_PROFILE/$2"; export GIT_XET_CPUPROFILE="$SCALE_PROFILE/$2"; fi
}
rest() { # rest PATH...: a step's files go (SCALE_DEFER_DELETE: aside, until the end)
  if [ "${SCALE_DEFER_DELETE:-0}" = 1 ]; then
    local p; mkdir -p "$steps/deferred"
    for p in "$@"; do [ ! -e "$p" ] || mv "$p" "$(mktemp -u -p "$steps/deferred")"; done
  else
    rm -rf "$@"
    scratch_fs_trim
  fi
  [ "$PAUSE" = 0 ] || sleep "$PAUSE"
}
rss_of() { if [ "$1" = agent ]; then echo "$T_AGENT"; else echo "$T_RSS"; fi; }
storefiles() { find "$1" -type f | wc -l; }
storebytes() { du -sb "$1" | cut -f1; }
same_tree() { # same_tree DATA CLONE: the clone's work tree holds DATA's files, byte for byte (and the repository's own)
  local x=(-x .git -x .gitattributes -x .lfsconfig)
  diff -r -q "${x[@]}" "$1" "$2" >/dev/null || { echo "scale: FAILED: the clone $2 differs from $1" >&2; diff -r -q "${x[@]}" "$1" "$2" | head >&2; exit 1; }
}

# --- row 1: many files ---
template() { # template DIR PATTERN LFSSTAGE-ARGS...: a repository DIR/repo, git-lfs tracking PATTERN,
  # with what `lfsstage LFSSTAGE-ARGS` stages committed once (its output in DIR/staged)
  # Every step's repository is a copy of it in hard links (step_repo): one commit per size instead
  # of one per step, and a step's deletion then frees no inode of the source side. Nothing a step
  # runs writes into a file of the copy in place (git replaces its files by rename; the reflog,
  # which git appends to, is off). The staged files are not in the work tree (test/lfsstage: why);
  # a push reads git-lfs's objects, not the work tree.
  local t=$1 pattern=$2; shift 2
  use "$t" git-lfs
  mkdir -p "$t/repo"; cd "$t/repo"
  git init -q
  git config core.logAllRefUpdates false
  git lfs track "$pattern" >/dev/null
  "$work/bin/lfsstage" "$@" >"$t/staged"
  git add .gitattributes && git commit -q -m files
  rm -f .git/COMMIT_EDITMSG
  cd "$work"
}
step_repo() { # step_repo TEMPLATE DEST: the template's repository, committed, at DEST (hard links)
  cp -al "$1/repo" "$2"
}
many_files_step() { # many_files_step N CASE SIDE TEMPLATE: push and clone the template's files, keep the figures
  local n=$1 case=$2 side=$3 tpl=$4 d="$steps/mf" proxy=- store
  rm -rf "$d"; mkdir -p "$d"
  [ "$case" = server ] && start_servers "$d"
  use "$d" "$side"
  git init -q --bare "$d/remote.git"
  step_repo "$tpl" "$d/repo"; cd "$d/repo"
  if [ "$case" = server ]; then
    # The servers' ports are this step's. Linking changed the ctime of every file, which git would
    # take for a change and filter the file again: trustctime off for this one commit.
    lfs_config "$side" >.lfsconfig
    git add .lfsconfig && git -c core.trustctime=false commit -q -m "this step's servers"
  fi
  git remote add origin ../remote.git
  case $case/$side in
  server/agent) proxy=$xs_proxy store=$xs_data ;;
  server/git-lfs) proxy=$lts_proxy store=$lts_data ;;
  embedded/agent) store=$d/remote.git/xet ;;
  embedded/git-lfs) store=$d/remote.git/lfs ;;
  esac
  profile "$side" "many-files-$case-$n-push"
  run "$proxy" - git push -q origin main
  keep many-files "$case" "$side" "$n" push_s "$T_WALL"
  keep many-files "$case" "$side" "$n" push_peak_rss_mb "$(rss_of "$side")"
  [ "$proxy" != - ] && keep many-files "$case" "$side" "$n" bytes_sent "$T_UP"
  keep many-files "$case" "$side" "$n" store_files "$(storefiles "$store")"
  keep many-files "$case" "$side" "$n" store_bytes "$(storebytes "$store")"
  cd "$d"
  profile "$side" "many-files-$case-$n-clone"
  run "$proxy" - git clone -q remote.git clone
  unset GIT_XET_CPUPROFILE
  keep many-files "$case" "$side" "$n" clone_s "$T_WALL"
  keep many-files "$case" "$side" "$n" clone_peak_rss_mb "$(rss_of "$side")"
  same_tree "$tpl/data" "$d/clone"
  cd "$work"; stop_servers; rest "$d"
}
row_many_files() {
  local n runs r case side sizes largest
  for n in $(printf '%s\n' $FILES $([ "$SERVER_CASE" = 1 ] && echo "$SERVER_FILES") | sort -n -u); do
    echo "many-files: $n files of 1–64 KiB"
    rm -rf "$steps/mf-tpl"; mkdir -p "$steps/mf-tpl/data"
    python3 - "$steps/mf-tpl/data" "$n" <<'PY'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(44)
for i in range(n):
    d = os.path.join(root, "d%03d" % (i % 100))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%06d.dat" % i), "wb") as f:
        f.write(rnd.randbytes(rnd.randint(1 << 10, 64 << 10)))
PY
    template "$steps/mf-tpl" '*.dat' tree "$steps/mf-tpl/data"
    for case in embedded $([ "$SERVER_CASE" = 1 ] && echo server); do
      sizes=$FILES; [ "$case" = server ] && sizes=$SERVER_FILES
      case " $sizes " in *" $n "*) ;; *) continue ;; esac
      largest=$(printf '%s\n' $sizes | sort -n | tail -n1)
      runs=$RUNS_OTHER
      if [ "$n" = "$largest" ]; then runs=$RUNS; [ "$case" = server ] && runs=$SERVER_RUNS; fi
      for r in $(seq "$runs"); do
        for side in agent git-lfs; do
          many_files_step "$n" "$case" "$side" "$steps/mf-tpl"
          echo "  $case $side run $r: push $(last_of "many-files|$case|$side|$n|push_s") s, clone $(last_of "many-files|$case|$side|$n|clone_s") s"
        done
      done
    done
    flush files
    rest "$steps/mf-tpl"
  done
}
last_of() { printf '%s' "${V[$1]}" | tail -n1; }

# --- row 2: one big file ---
cold() { # cold: drop the page cache before a measured step of row 2 (SCALE_COLD)
  [ "$COLD" = 1 ] || return 0
  sync
  (echo 3 >/proc/sys/vm/drop_caches) 2>/dev/null && return 0
  echo "scale: the page cache could not be dropped (SCALE_COLD needs root); row 2 runs warm" >&2
  COLD=0
}
big_file_step() { # big_file_step MIB SIDE TEMPLATE
  local mib=$1 side=$2 data d="$steps/bf"
  data=$(cat "$3/staged") # the template's object
  rm -rf "$d"; mkdir -p "$d"
  use "$d" "$side"
  git init -q --bare "$d/remote.git"
  step_repo "$3" "$d/repo"; cd "$d/repo"
  git remote add origin ../remote.git
  profile "$side" "big-file-$mib-push"
  cold
  run - "$d" git push -q origin main
  keep big-file embedded "$side" "$mib" push_s "$T_WALL"
  keep big-file embedded "$side" "$mib" push_peak_rss_mb "$(rss_of "$side")"
  keep big-file embedded "$side" "$mib" push_tmp_disk_mb "$T_TMP"
  cd "$d"
  profile "$side" "big-file-$mib-clone"
  cold
  run - "$d" git clone -q remote.git clone
  keep big-file embedded "$side" "$mib" clone_s "$T_WALL"
  keep big-file embedded "$side" "$mib" clone_peak_rss_mb "$(rss_of "$side")"
  keep big-file embedded "$side" "$mib" clone_tmp_disk_mb "$T_TMP"
  cmp -s "$data" clone/big.bin || { echo "scale: FAILED: the clone of $mib MiB differs" >&2; exit 1; }
  rm -rf clone
  scratch_fs_trim # else the image keeps the clone's 2 S on the disk through the fetch (16 GiB: 86 GB)
  GIT_LFS_SKIP_SMUDGE=1 git clone -q remote.git pointers
  cd pointers
  profile "$side" "big-file-$mib-fetch"
  cold
  run - "$d" git lfs fetch
  unset GIT_XET_CPUPROFILE
  keep big-file embedded "$side" "$mib" fetch_s "$T_WALL"
  keep big-file embedded "$side" "$mib" fetch_peak_rss_mb "$(rss_of "$side")"
  cd "$work"; rest "$d"
}
row_big_file() {
  local mib r side
  for mib in $BIG; do
    echo "big-file: one file of $mib MiB"
    rm -rf "$steps/bf-tpl"
    template "$steps/bf-tpl" '*.bin' random "big-file-$mib" $((mib << 20)) big.bin
    for r in $(seq "$RUNS_OTHER"); do
      for side in agent git-lfs; do
        big_file_step "$mib" "$side" "$steps/bf-tpl"
        echo "  $side run $r: push $(last_of "big-file|embedded|$side|$mib|push_s") s, clone $(last_of "big-file|embedded|$side|$mib|clone_s") s, fetch $(last_of "big-file|embedded|$side|$mib|fetch_s") s"
      done
    done
    flush MiB
    rest "$steps/bf-tpl"
  done
}

# --- row 3: long history ---
shows() { case " $HAT $HN " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
history_side() { # history_side SIDE: push HN versions one at a time with prune, then pull and fetch --all
  local side=$1 d="$steps/hist" proxy store v prev
  rm -rf "$d"; mkdir -p "$d/data"
  start_servers "$d"
  if [ "$side" = agent ]; then proxy=$xs_proxy store=$xs_data; else proxy=$lts_proxy store=$lts_data; fi
  use "$d" "$side"
  git init -q --bare "$d/remote.git"
  git init -q "$d/repo"; cd "$d/repo"
  git lfs track '*.bin' >/dev/null
  lfs_config "$side" >.lfsconfig
  git add . && git commit -q -m init
  git remote add origin ../remote.git
  # the versions are made as they are pushed (each the last with 0.5 % rewritten: the same in every
  # run), and staged with test/lfsstage: the object is a hard link to the version, not a copy
  local edits=$(((HMIB << 20) / 200 / 65536)); [ "$edits" -ge 1 ] || edits=1
  for v in $(seq "$HN"); do
    if [ "$v" = 1 ]; then
      ln "$("$work/bin/lfsstage" random history $((HMIB << 20)) model.bin)" "$d/data/v1"
    else
      python3 "$work/edit.py" patch "$d/data/v$prev" "$d/data/v$v" "$edits" 65536
      rm -f "$d/data/v$prev"
      "$work/bin/lfsstage" file "$d/data/v$v" model.bin >/dev/null
    fi
    git commit -q -m "version $v"
    profile "$side" "history-$v-push"
    run "$proxy" - git push -q origin main
    unset GIT_XET_CPUPROFILE
    point history server "$side" "$v" versions push_s "$T_WALL" s
    point history server "$side" "$v" versions push_bytes_sent "$T_UP" bytes
    point history server "$side" "$v" versions push_peak_rss_mb "$(rss_of "$side")" MB
    [ "$side" = agent ] && point history server agent "$v" versions shard_cache_bytes "$( (find "$HOME" -type d -name shard-cache -exec du -sbc {} + 2>/dev/null || true) | awk '$2 == "total" { t = $1 } END { print t + 0 }')" bytes
    shows "$v" && echo "  $side version $v: push $T_WALL s, $T_UP bytes sent"
    git lfs prune >/dev/null 2>&1 || { echo "scale: FAILED: git lfs prune at version $v" >&2; exit 1; }
    prev=$v
  done
  point history server "$side" "$HN" versions store_bytes "$(storebytes "$store")" bytes
  # a fresh clone of pointers (a HOME of its own: no cache), the newest pulled, then every version fetched
  use "$d/puller" "$side"
  cd "$d"
  GIT_LFS_SKIP_SMUDGE=1 git clone -q remote.git clone
  cd clone
  run "$proxy" - git lfs pull
  point history server "$side" "$HN" versions pull_s "$T_WALL" s
  point history server "$side" "$HN" versions pull_bytes_received "$T_DOWN" bytes
  point history server "$side" "$HN" versions pull_peak_rss_mb "$(rss_of "$side")" MB
  cmp -s model.bin "$d/data/v$HN" || { echo "scale: FAILED: the pull of version $HN differs" >&2; exit 1; }
  # every version, in another fresh clone of pointers and HOME: what all of the history costs to fetch
  use "$d/fetcher" "$side"
  cd "$d"
  GIT_LFS_SKIP_SMUDGE=1 git clone -q remote.git fetch-clone
  cd fetch-clone
  run "$proxy" - git lfs fetch --all origin
  point history server "$side" "$HN" versions fetch_all_s "$T_WALL" s
  point history server "$side" "$HN" versions fetch_all_bytes_received "$T_DOWN" bytes
  python3 "$root/test/sha256check.py" lfs-objects .git/lfs/objects "$HN" || { echo "scale: FAILED: fetch --all of $side" >&2; exit 1; }
  echo "  $side: pull of version $HN $(last_point pull_s) s; fetch --all $T_DOWN bytes received"
  cd "$work"; stop_servers; rm -rf "$d"; scratch_fs_trim
}
last_point() { tail -n 20 "$SCALE_POINTS" | grep "\"metric\":\"$1\"" | tail -n1 | sed 's/.*"value":\([^,]*\),.*/\1/'; }
row_history() {
  cp "$root/test/editdata.py" "$work/edit.py"
  echo "history: $HN versions of $HMIB MiB, 0.5 % edited each, pushed one at a time"
  local side
  for side in agent git-lfs; do history_side "$side"; done
}

t_build=$started # SECONDS counts from this script's start: what the set-up and builds took
echo "scale: $(nproc) cores, $(awk '/MemTotal/ { printf "%.1f GB", $2 / 1e6 }' /proc/meminfo); quick=$Q; rows ${ROWS:1:-1}; scratch $work; steps in $SCRATCH_NOTE; binaries ready in ${t_build} s$([ "$COLD" = 1 ] && echo "; row 2 starts each step with the page cache dropped")"
# timed ROW FUNCTION: runs a row and keeps its wall seconds (what the default run's time is made of)
row_secs=""
timed() {
  local t=$SECONDS
  "$2"
  row_secs+=$(printf '%s"%s":%s' "${row_secs:+,}" "$1" $((SECONDS - t)))
  echo "scale: row $1 took $((SECONDS - t)) s"
}
row_server() {
  cd "$root"
  if [ -f test/scale-server.sh ]; then
    echo "server rows: test/scale-server.sh"
    (export SCALE_WORK="$steps/server" "${orig_env[@]}"; unset GIT_XET_CPUPROFILE SCALE_AGENT_TIMES; mkdir -p "$SCALE_WORK"
      bash test/scale-server.sh $([ "$Q" = 1 ] && echo --quick))
    rm -rf "$steps/server"; scratch_fs_trim
  else
    echo "server rows: test/scale-server.sh is not in this checkout; skipped"
  fi
}
case $ROWS in *,many-files,*) timed many-files row_many_files ;; esac
case $ROWS in *,big-file,*) timed big-file row_big_file ;; esac
case $ROWS in *,history,*) timed history row_history ;; esac
case $ROWS in *,server,*) timed server row_server ;; esac

cd "$root"
knobs=$(printf '{"quick":%s,"rows":"%s","files":"%s","server_case":%s,"server_files":"%s","big_mib":"%s","hist_mib":%s,"hist_n":%s,"hist_at":"%s","runs":%s,"server_runs":%s,"runs_other":%s,"seconds":%s,"row_seconds":{%s}}' \
  "$([ "$Q" = 1 ] && echo true || echo false)" "${ROWS:1:-1}" "$FILES" "$SERVER_CASE" "$SERVER_FILES" "$BIG" "$HMIB" "$HN" "$HAT" "$RUNS" "$SERVER_RUNS" "$RUNS_OTHER" $((SECONDS - started)) "$row_secs")
python3 test/scale-report.py "$SCALE_POINTS" "$OUT" "$knobs" "$(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo +dirty)"
exit
}
