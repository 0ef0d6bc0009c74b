#!/usr/bin/env bash
# Issue 44, rows 4 and 5: what one server costs as its clients and its index grow.
#
# Row 4, one server and many clients ("clients"): a repository with SCALE_CLIENT_MIB (default 256)
# MiB of LFS content in 4 files is pushed once to xet-server (fs store, batch mode, through the
# agent) and once to lfs-test-server (plain git-lfs), both with their data in the same work
# directory (same disk). Then for each N in SCALE_CLIENTS (default "1 4 16") N clones run at once,
# each its own clone directory, git-lfs, agents and cache directory, and every clone's files are
# compared with the pushed ones (a clone not byte-exact fails the script). Per N and server:
# aggregate MB/s (N × content / wall time of the slowest), the server's peak RSS during the round
# (VmHWM, reset before each round through /proc/PID/clear_refs) and its CPU seconds per GB served
# (utime+stime of /proc/PID/stat before and after), and the CPU seconds per GB of all the round's
# client processes (git, git-lfs, agents: GNU time's user+sys of the waited-for tree). The two
# servers run side by side and the rounds alternate (N clones of one, then of the other).
#
# Row 5, a large global index ("index"): test/scaleindex writes a store with SCALE_INDEX_ENTRIES
# (default 10^7) global-dedupe entries and SCALE_INDEX_FILES (default a tenth of them) files
# through the store's own registration (store.PutShardWithXorbs, the path of an in-process upload
# session: shards of 1000 files, their xorbs in the same batch); then xet-server is started on it
# and timed until its first answer, SCALE_INDEX_QUERIES (default 2000) global-dedupe queries
# (GET /v1/chunks/default-merkledb/{chunk}: indexed chunks, and as many chunks not indexed) and
# reconstructions (GET /v2/reconstructions/{file}) are asked one at a time, with GET /healthz (which
# reads nothing) as the same run's baseline, and `xet-server gc` is timed on the store. Disk bytes per entry: the store's bytes (du) over the entries.
#
# SCALE_PROFILE=DIR: CPU profiles of xet-server (row 4: DIR/xet-server.pprof; row 5:
# DIR/xet-server-index.pprof), its heap profiles (the same names with .mem.pprof:
# XET_SERVER_MEMPROFILE, written at its exit) and the agents' CPU profiles of each round
# (DIR/agents-SIDE-N/, GIT_XET_CPUPROFILE), to name a missed target's cause.
# SCALE_QUICK=1 or --quick: 1 and 4 clients of 16 MiB, 10^5 entries of 5·10^4 files (CI; about a
# minute, and 40 s more for the builds).
# SCALE_SERVER_ROWS: "clients index" (default), or one of them.
# SCALE_POINTS=FILE: append one JSON object per figure (test/scale.sh's contract); unset: print a
# table. SCALE_WORK=DIR: where the work directory goes (removed at exit). XET_BINDIR=DIR: take the
# binaries from DIR (test/binaries.sh). Exits nonzero only when something failed (a clone not
# byte-exact, a server that did not start), never on a missed target. Needs go, git, git-lfs,
# lfs-test-server (test/install-lfs-test-server.sh), curl, GNU time.
#
#   bash test/scale-server.sh [--quick]     SCALE_CLIENTS="16" SCALE_SERVER_ROWS=clients bash test/scale-server.sh
# The script is one brace group, which bash reads whole before it runs any of it: an edit that
# rewrites this file in place during a run (a default run takes minutes) does not change the run.
{
set -euo pipefail
# A command that fails outside run() ends the script through set -e, which says nothing: name it.
set -E
trap 'echo "scale-server: FAILED (exit $?) at line $LINENO: $BASH_COMMAND" >&2' ERR
[ "${1:-}" = --quick ] && SCALE_QUICK=1
cd "$(dirname "$0")/.."
root=$(pwd)
QUICK=${SCALE_QUICK:-0}
if [ "$QUICK" = 1 ]; then
  CLIENTS=${SCALE_CLIENTS:-1 4} MIB=${SCALE_CLIENT_MIB:-16}
  ENTRIES=${SCALE_INDEX_ENTRIES:-100000} QUERIES=${SCALE_INDEX_QUERIES:-500}
else
  CLIENTS=${SCALE_CLIENTS:-1 4 16} MIB=${SCALE_CLIENT_MIB:-256}
  ENTRIES=${SCALE_INDEX_ENTRIES:-10000000} QUERIES=${SCALE_INDEX_QUERIES:-2000}
fi
# Each file's first chunk is indexed; the other entries are mined chunks (fill's main cost): quick
# mode mines fewer.
if [ "$QUICK" = 1 ]; then FILES=${SCALE_INDEX_FILES:-$((ENTRIES / 2))}; else FILES=${SCALE_INDEX_FILES:-$((ENTRIES / 10))}; fi
ROWS=${SCALE_SERVER_ROWS:-clients index}
lts_bin=$(command -v lfs-test-server || echo "$(go env GOPATH)/bin/lfs-test-server")
if [[ " $ROWS " == *" clients "* ]]; then
  [ -x "$lts_bin" ] || { echo "scale-server: lfs-test-server is missing (test/install-lfs-test-server.sh builds it)" >&2; exit 1; }
  [ -x /usr/bin/time ] || { echo "scale-server: GNU time (/usr/bin/time) is missing" >&2; exit 1; }
fi

mkdir -p "${SCALE_WORK:-${TMPDIR:-/tmp}}"
work=$(mktemp -d "${SCALE_WORK:-${TMPDIR:-/tmp}}/scale-server.XXXXXX")
cleanup() { for p in $(jobs -p); do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$work/bin" "$work/home"
. test/binaries.sh
xet_binaries "$work/bin" >/dev/null
# GOEXPERIMENT=simd: the fill's miner tries eight chunks at once with AVX2 (about 4.7x faster than
# one at a time; the plain build where the toolchain lacks the experiment).
if ! GOEXPERIMENT=simd go build -o "$work/bin/scaleindex" ./test/scaleindex 2>"$work/simd.err"; then
  # said, not silent: a compile error in the lanes' file would otherwise only slow the fill
  echo "scale-server: the GOEXPERIMENT=simd build failed ($(grep -v "^#" "$work/simd.err" | head -n1)); the fill mines one chunk at a time" >&2
  go build -o "$work/bin/scaleindex" ./test/scaleindex
fi
points="$work/points.jsonl"
: >"$points"

# point ROW CASE SIDE X X_UNIT METRIC VALUE UNIT: one figure, as test/scale.sh's contract says.
point() {
  printf '{"row":"%s","case":"%s","side":"%s","x":%s,"x_unit":"%s","metric":"%s","value":%s,"unit":"%s"}\n' "$@" >>"$points"
}
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
cpu_s() { awk -v t="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / t }' "/proc/$1/stat"; }
hwm_mb() { awk '/^VmHWM/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
. test/ports.sh

export HOME="$work/home" GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0 XDG_CACHE_HOME="$work/home/.cache"
export PATH="$work/bin:$PATH"
unset GIT_DIR GIT_WORK_TREE GIT_XET_LOG GIT_TRACE GIT_XET_CPUPROFILE

# --- row 4 -------------------------------------------------------------------------------------
declare -A srv_pid=() lfs_url=()
start_xet() { # a fresh open xet-server on loopback
  local port; port=$(freeport)
  local prof=(); [ -n "${SCALE_PROFILE:-}" ] && prof=(XET_SERVER_CPUPROFILE="$SCALE_PROFILE/xet-server.pprof" XET_SERVER_MEMPROFILE="$SCALE_PROFILE/xet-server.mem.pprof")
  env "${prof[@]}" xet-server --listen "127.0.0.1:$port" --data "$work/xet-data" --log-level error --ui=false 2>"$work/xet.log" &
  srv_pid[xet-server]=$!
  lfs_url[xet-server]="http://127.0.0.1:$port/team/scale.git/info/lfs"
  for _ in $(seq 200); do curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && return 0; sleep 0.05; done
  echo "scale-server: xet-server did not start" >&2; cat "$work/xet.log" >&2; exit 1
}
start_lts() { # lfs-test-server on loopback with one user
  local port; port=$(freeport)
  mkdir -p "$work/lts-data"
  LFS_LISTEN="tcp://127.0.0.1:$port" LFS_HOST="127.0.0.1:$port" LFS_SCHEME=http LFS_ADMINUSER=admin LFS_ADMINPASS=adminpass \
    LFS_CONTENTPATH="$work/lts-data/content" LFS_METADB="$work/lts-data/lfs.db" "$lts_bin" >"$work/lts.log" 2>&1 &
  srv_pid[lfs-test-server]=$!
  lfs_url[lfs-test-server]="http://127.0.0.1:$port/"
  printf 'http://scale:scalepass@127.0.0.1:%s\n' "$port" >"$HOME/.git-credentials"
  for _ in $(seq 200); do
    curl -fs -u admin:adminpass -d "name=scale&password=scalepass" "http://127.0.0.1:$port/mgmt/add" -o /dev/null && return 0
    sleep 0.05
  done
  echo "scale-server: lfs-test-server did not start" >&2; cat "$work/lts.log" >&2; exit 1
}

clients_setup() {
  git config --global user.name scale; git config --global user.email scale@example.test
  git config --global init.defaultBranch main
  git config --global credential.helper store
  git config --global lfs.locksverify false
  (cd "$work" && git-xet-transfer install >/dev/null)
  mkdir -p "$work/data"
  for i in 1 2 3 4; do head -c $((MIB * 256 * 1024)) /dev/urandom >"$work/data/f$i.bin"; done
  (cd "$work/data" && python3 "$root/test/sha256check.py" sums f*.bin >"$work/sums")
}

# gitc SIDE: git's options for a side (plain git-lfs for lfs-test-server)
gitc() { [ "$1" = lfs-test-server ] && echo "-c lfs.basictransfersonly=true"; true; }

# push_repo SIDE: a repository with the content, its LFS objects pushed to the side's server
push_repo() {
  local side=$1
  git init -q --bare "$work/$side.git"
  git init -q "$work/$side-src"
  # shellcheck disable=SC2046
  (cd "$work/$side-src" && git lfs track '*.bin' >/dev/null && printf '[lfs]\n\turl = %s\n' "${lfs_url[$side]}" >.lfsconfig &&
    cp "$work"/data/*.bin . && git add . && git commit -q -m content && git remote add origin "$work/$side.git" &&
    git $(gitc "$side") push -q origin main) >"$work/push.log" 2>&1 || { echo "scale-server: push to $side failed" >&2; cat "$work/push.log" >&2; exit 1; }
  rm -rf "$work/$side-src"
}

# clone_round SIDE N: N clones at once, each its own directory, git-lfs, agents and cache, timed
# together (GNU time: the wall time of the slowest, and the CPU of every client process), checked,
# measured, removed
clone_round() {
  local side=$1 n=$2 pid=${srv_pid[$1]} k
  local prof=""; [ -n "${SCALE_PROFILE:-}" ] && prof="$SCALE_PROFILE/agents-$side-$n" && mkdir -p "$prof"
  echo 5 >"/proc/$pid/clear_refs" # resets VmHWM: the round's own peak
  local c0 c1
  c0=$(cpu_s "$pid")
  # shellcheck disable=SC2016
  /usr/bin/time -f '%e %U %S' -o "$work/time" env GIT_XET_CPUPROFILE="$prof" bash -c '
    for k in $(seq "$1"); do XDG_CACHE_HOME="$2/c$k/cache" git $3 clone -q "$2/$4.git" "$2/c$k/repo" >"$2/c$k.log" 2>&1 & done
    failed=0; for p in $(jobs -p); do wait "$p" || failed=1; done; exit $failed' _ "$n" "$work" "$(gitc "$side")" "$side" ||
    { echo "scale-server: a clone of $n from $side failed:" >&2; cat "$work"/c*.log >&2; exit 1; }
  c1=$(cpu_s "$pid")
  for k in $(seq "$n"); do
    (cd "$work/c$k/repo" && python3 "$root/test/sha256check.py" check "$work/sums") || { echo "scale-server: clone $k of $n from $side is not byte-exact" >&2; exit 1; }
  done
  local bytes=$((n * MIB * 1024 * 1024)) wall ucpu
  read -r wall ucpu < <(awk '{ print $1, $2 + $3 }' "$work/time")
  point clients "$n-clones" "$side" "$n" clients aggregate_mb_s "$(awk -v b=$bytes -v w="$wall" 'BEGIN { printf "%.1f", b / 1e6 / w }')" MB/s
  point clients "$n-clones" "$side" "$n" clients wall_s "$wall" s
  point clients "$n-clones" "$side" "$n" clients server_peak_rss_mb "$(hwm_mb "$pid")" MB
  point clients "$n-clones" "$side" "$n" clients server_cpu_s_per_gb "$(awk -v a="$c0" -v b="$c1" -v g=$bytes 'BEGIN { printf "%.2f", (b - a) / (g / 1e9) }')" s/GB
  point clients "$n-clones" "$side" "$n" clients clients_cpu_s_per_gb "$(awk -v c="$ucpu" -v g=$bytes 'BEGIN { printf "%.2f", c / (g / 1e9) }')" s/GB
  for k in $(seq "$n"); do rm -rf "$work/c$k" "$work/c$k.log"; done
}

# row_clients: both servers up, each with the content; then for each N a round of each, in turn
# (xet-server first, then lfs-test-server), so that load from elsewhere falls on both alike
row_clients() {
  clients_setup
  echo "row 4: pushing $MIB MiB to xet-server and to lfs-test-server, then $CLIENTS concurrent clones of each, in turn" >&2
  start_xet; push_repo xet-server
  start_lts; push_repo lfs-test-server
  local side n
  for n in $CLIENTS; do
    for side in xet-server lfs-test-server; do clone_round "$side" "$n"; done
  done
  for side in xet-server lfs-test-server; do kill "${srv_pid[$side]}"; wait "${srv_pid[$side]}" 2>/dev/null || true; done
  rm -rf "$work/data" "$work"/*.git "$work/xet-data" "$work/lts-data"
}

# --- row 5 -------------------------------------------------------------------------------------
row_index() {
  local data="$work/index-data" t0 t1 line
  mkdir -p "$data"
  echo "row 5: writing $ENTRIES global-dedupe entries of $FILES files ($(df -h --output=avail "$work" | tail -1 | tr -d ' ') free)" >&2
  t0=$(now)
  scaleindex fill "$data/cas" "$ENTRIES" "$FILES" "$work/samples" >/dev/null
  t1=$(now)
  point index "$ENTRIES-entries" store "$ENTRIES" entries fill_s "$(secs "$t0" "$t1")" s
  point index "$ENTRIES-entries" store "$ENTRIES" entries disk_bytes_per_entry "$(du -sb "$data/cas" | awk -v n="$ENTRIES" '{ printf "%.1f", $1 / n }')" B
  local prof=(); [ -n "${SCALE_PROFILE:-}" ] && prof=(XET_SERVER_CPUPROFILE="$SCALE_PROFILE/xet-server-index.pprof" XET_SERVER_MEMPROFILE="$SCALE_PROFILE/xet-server-index.mem.pprof")
  env "${prof[@]}" scaleindex serve "$work/bin/xet-server" "$data" "$work/samples" "$QUERIES" >"$work/serve.out"
  while read -r metric value; do
    case $metric in
      start_s) unit=s ;; *_ms) unit=ms ;; *_mb) unit=MB ;; *) unit="" ;;
    esac
    point index "$ENTRIES-entries" xet-server "$ENTRIES" entries "$metric" "$value" "$unit"
  done <"$work/serve.out"
  t0=$(now)
  xet-server gc "$data" >"$work/gc.log" 2>&1 || { echo "scale-server: gc failed" >&2; cat "$work/gc.log" >&2; exit 1; }
  t1=$(now)
  point index "$ENTRIES-entries" xet-server "$ENTRIES" entries gc_s "$(secs "$t0" "$t1")" s
  rm -rf "$data" "$work/samples"
}

start=$(now)
for row in $ROWS; do
  t_row=$(now)
  case $row in
    clients) row_clients ;;
    index) row_index ;;
    *) echo "scale-server: unknown row $row (clients, index)" >&2; exit 1 ;;
  esac
  echo "scale-server: row $row took $(secs "$t_row" "$(now)") s" >&2
done
echo "scale-server: rows $ROWS in $(secs "$start" "$(now)") s ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
if [ -n "${SCALE_POINTS:-}" ]; then
  cat "$points" >>"$SCALE_POINTS"
else
  printf '%-8s %-18s %-16s %-22s %12s\n' row case side metric value
  sed -E 's/.*"row":"([^"]*)","case":"([^"]*)","side":"([^"]*)".*"metric":"([^"]*)","value":([^,]*),"unit":"([^"]*)".*/\1 \2 \3 \4 \5 \6/' "$points" |
    while read -r r c s m v u; do printf '%-8s %-18s %-16s %-22s %12s %s\n' "$r" "$c" "$s" "$m" "$v" "$u"; done
fi
exit
}
