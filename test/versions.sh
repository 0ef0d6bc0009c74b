#!/usr/bin/env bash
# Many versions of one large file in one push, and fetching them back, in one run on this machine:
#   1. VERSIONS_N (default 4) versions of a VERSIONS_MB-MiB (default 256) file of random data, each
#      the previous with 64 KiB blocks adding up to 0.5 % of the file rewritten at random places,
#      one commit each: pushed in one `git push`, against the same commits pushed one at a time, to
#      the embedded store (a local bare remote's `xet`), to xet-server and to the Hub emulator
#      (`xet-server --hub-compat`, with `install --hub`, HF_ENDPOINT and a token): what each store
#      holds afterwards (its directory's size), and the bytes sent to xet-server (counted by a proxy
#      in front of it);
#   2. CHECKPOINTS_N (default 20) versions of a CHECKPOINTS_MB-MiB (default 64) file made the same
#      way (a training run's checkpoints), one push against one at a time: stored, in the embedded
#      store and (unless CHECKPOINTS_SERVER=0) xet-server;
#   3. `git clone` + `git lfs fetch --all` of the versions of 1. from xet-server with the agent,
#      against the same with plain git-lfs (a HOME where the agent is not installed: xet-server's
#      basic transfer): bytes received;
#   4. `git lfs pull` of a version with a 1 % edit (ten patches of 0.1 % of the file at random
#      places) in the clone of 3., which holds the previous versions: bytes fetched, as a share of the file;
#   5. the peak RSS of every agent process of the run (each runs under GNU time).
# Every push, clone and agent runs in a fresh HOME of its own (no shard cache shared), and every
# store is fresh. Each row prints its target and PASS or MISS.
# Runs in a temp dir; touches nothing else. Needs go (unless XET_BINDIR), git, git-lfs, python3,
# curl, GNU time. With XET_BINDIR=DIR it runs the git-xet-transfer, xet-server and countproxy in DIR
# instead of building them from this checkout. Disk: about 14 times VERSIONS_MB × VERSIONS_N plus
# 5 times CHECKPOINTS_MB × CHECKPOINTS_N.
#
#   test/versions.sh
#   VERSIONS_MB=32 CHECKPOINTS_MB=16 CHECKPOINTS_N=6 test/versions.sh      (a quick run)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
VMB=${VERSIONS_MB:-256}
VN=${VERSIONS_N:-4}
CMB=${CHECKPOINTS_MB:-64}
CN=${CHECKPOINTS_N:-20}
CSERVER=${CHECKPOINTS_SERVER:-1}
TOKEN=hf_versionsWRITEtoken0123456789
[ -x /usr/bin/time ] || { echo "versions: needs GNU time at /usr/bin/time" >&2; exit 1; }
command -v git-lfs >/dev/null || { echo "versions: git-lfs is missing" >&2; exit 1; }
[ "$VN" -ge 2 ] && [ "$CN" -ge 2 ] || { echo "versions: VERSIONS_N and CHECKPOINTS_N must be at least 2" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/xet-versions.XXXXXX")
cleanup() { for p in $(jobs -p); do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$work/bin" "$work/data"
. test/binaries.sh
xet_binaries "$work/bin"
export GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0
unset GIT_DIR GIT_WORK_TREE GIT_TRACE GIT_XET_CPUPROFILE HF_TOKEN HF_ENDPOINT HF_HOME HF_XET_CACHE
export GIT_XET_LOG="$work/agent.log" GIT_XET_LOG_LEVEL=info
# The agent as git-lfs runs it, under GNU time: the peak RSS (KiB) of each process.
cat >"$work/bin/agent" <<WRAP
#!/bin/sh
exec /usr/bin/time -a -o "$work/agent.times" -f "%M" "$work/bin/git-xet-transfer" "\$@"
WRAP
chmod 755 "$work/bin/agent"
: >"$work/agent.times"

use() { # use NAME [xet|hub|plain]: a fresh HOME for NAME (made on first use: the agent installed, or
  # with hub also --hub and the Hub's credentials, or with plain only git-lfs), exported
  local name=$1 kind=${2:-xet} h="$work/home-$1"
  export HOME="$h" XDG_CACHE_HOME="$h/.cache"
  unset HF_ENDPOINT HF_TOKEN
  [ "$kind" = hub ] && export HF_ENDPOINT="$hub" HF_TOKEN="$TOKEN"
  [ -d "$h" ] && return 0
  mkdir -p "$h"
  git config --global user.name versions; git config --global user.email versions@example.test
  git config --global init.defaultBranch main
  case $kind in
  plain) git lfs install >/dev/null ;;
  hub)
    (cd "$h" && "$work/bin/git-xet-transfer" install --hub >/dev/null)
    # git-lfs authenticates its batch calls with git's credential helper
    git config --global credential.helper store
    echo "http://hf_user:$TOKEN@${hub#http://}" >"$h/.git-credentials" ;;
  *) (cd "$h" && "$work/bin/git-xet-transfer" install >/dev/null) ;;
  esac
  [ "$kind" = plain ] || git config --global lfs.customtransfer.xet.path "$work/bin/agent"
}

. test/ports.sh
proxy="" data="" hub=""
start_server() { # start_server NAME [HUBTOKENS]: a fresh xet-server (data in $work/NAME) behind a counting proxy at $proxy
  local ports sport pport extra=(); ports=$(freeports 2); read -r sport pport <<<"$ports"
  proxy="http://127.0.0.1:$pport" data="$work/$1"
  [ -n "${2:-}" ] && extra=(--hub-compat "$2")
  "$work/bin/xet-server" --listen "127.0.0.1:$sport" --data "$data" --public-url "$proxy" "${extra[@]}" --log-level error 2>"$work/$1.log" &
  "$work/bin/countproxy" -listen "127.0.0.1:$pport" -backend "http://127.0.0.1:$sport" 2>"$work/$1-proxy.log" &
  for _ in $(seq 100); do curl -fs "$proxy/__count" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "versions: xet-server $1 did not start" >&2; cat "$work/$1.log" >&2; exit 1
}
up() { curl -fs "$1/__count" | cut -d' ' -f1; }
down() { curl -fs "$1/__count" | cut -d' ' -f2; }
storebytes() { du -sb "$1" | cut -f1; }
mb() { awk -v b="$1" 'BEGIN { printf "%.1f MB", b / 1e6 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

# Versions of a random file: edit.py versions DIR PREFIX N BYTES PERCENT writes DIR/PREFIX1..N, each
# the previous with 64 KiB blocks adding up to PERCENT % of it rewritten at random places;
# edit.py patch SRC DST COUNT BYTES writes DST, SRC with COUNT blocks of BYTES rewritten at random places.
# The randomness is seeded (VERSIONS_SEED, default 1): every run makes the same files.
cp test/editdata.py "$work/edit.py"
vsize=$((VMB << 20)) csize=$((CMB << 20))
echo "making $VN versions of $VMB MiB and $CN of $CMB MiB (0.5 % edits each), and a 1 %-edit version"
python3 "$work/edit.py" versions "$work/data" v "$VN" "$vsize" 0.5
python3 "$work/edit.py" versions "$work/data" c "$CN" "$csize" 0.5
python3 "$work/edit.py" patch "$work/data/v$VN" "$work/data/vnext" 10 $((vsize / 1000))

declare -a rows=()
row() { # row LABEL VALUE TARGET OK
  rows+=("$(printf '%-56s %-44s %-16s %s' "$1" "$2" "$3" "$([ "$4" = 1 ] && echo PASS || echo MISS)")")
  echo "${rows[-1]}"
}
atmost() { awk -v a="$1" -v b="$2" 'BEGIN { print (a <= b) ? 1 : 0 }'; }

stored=0 sent=0 workdir="" remote=""
push_versions() { # push_versions NAME KIND MODE PREFIX N: push PREFIX1..N as model.bin, one commit each, to a
  # fresh KIND (embedded, server or hub) after each commit (MODE one) or once (all); sets stored, sent
  local name=$1 kind=$2 mode=$3 prefix=$4 n=$5 store
  workdir="$work/$name" remote="$work/$name-remote.git"
  case $kind in
  embedded) use "$name"; store="$remote/xet" ;;
  server) start_server "$name-server"; use "$name"; store=$data ;;
  hub)
    echo "$TOKEN:versions:write" >"$work/hub-tokens"
    start_server "$name-hub" "$work/hub-tokens"; hub=$proxy; use "$name" hub; store=$data ;;
  esac
  git init -q --bare "$remote"
  git init -q "$workdir"; cd "$workdir"
  git lfs track '*.bin' >/dev/null
  [ "$kind" = embedded ] || printf '[lfs]\n\turl = %s/%s/versions.git/info/lfs\n\tlocksverify = false\n' "$proxy" \
    "$([ "$kind" = hub ] && echo org || echo team)" >.lfsconfig
  git remote add origin "$remote"
  local u0=0; [ "$kind" = embedded ] || u0=$(up "$proxy")
  for i in $(seq "$n"); do
    cp "$work/data/$prefix$i" model.bin
    git add . && git commit -q -m "checkpoint $i"
    [ "$mode" = one ] && git push -q origin main
  done
  [ "$mode" = all ] && git push -q origin main
  stored=$(storebytes "$store") sent=0
  [ "$kind" = embedded ] || sent=$(($(up "$proxy") - u0))
  cd "$work"
}
compare_stored() { # compare_stored LABEL KIND PREFIX N TARGET: one push against one at a time, stored
  local label=$1 kind=$2 prefix=$3 n=$4 target=$5 one all
  push_versions "$prefix-$kind-one" "$kind" one "$prefix" "$n"; one=$stored sent_one=$sent
  push_versions "$prefix-$kind-all" "$kind" all "$prefix" "$n"; all=$stored sent_all=$sent
  row "$label: $kind" "$(mb "$all") vs $(mb "$one") = $(ratio "$all" "$one")×" "≤ ${target}×" "$(atmost "$(ratio "$all" "$one")" "$target")"
}

echo "1. $VN versions of $VMB MiB: one push vs one at a time"
compare_stored "stored, $VN×$VMB MiB in one push / one at a time" embedded v "$VN" 1.1
compare_stored "stored, $VN×$VMB MiB in one push / one at a time" hub v "$VN" 1.1
compare_stored "stored, $VN×$VMB MiB in one push / one at a time" server v "$VN" 1.1
row "sent to xet-server, one push / one at a time" "$(mb "$sent_all") vs $(mb "$sent_one") = $(ratio "$sent_all" "$sent_one")×" "≤ 1.15×" \
  "$(atmost "$(ratio "$sent_all" "$sent_one")" 1.15)"
vserver=$proxy vsrc=$workdir vremote=$remote

echo "2. $CN checkpoints of $CMB MiB: one push vs one at a time"
compare_stored "stored, $CN×$CMB MiB in one push / one at a time" embedded c "$CN" 1.2
[ "$CSERVER" = 0 ] || compare_stored "stored, $CN×$CMB MiB in one push / one at a time" server c "$CN" 1.2

echo "3. git clone + git lfs fetch --all of the $VN versions from xet-server: agent vs plain git-lfs"
fetch_all() { # fetch_all HOME KIND: clone the versions of 1. in HOME and fetch every version; sets got
  use "$1" "$2"
  local d0; d0=$(down "$vserver")
  git clone -q "$vremote" "$work/$1-clone"
  (cd "$work/$1-clone" && git lfs fetch --all origin >/dev/null)
  got=$(($(down "$vserver") - d0))
  cmp "$work/$1-clone/model.bin" "$work/data/v$VN"
  python3 "$root/test/sha256check.py" lfs-objects "$work/$1-clone/.git/lfs/objects" "$VN" || { echo "versions: $1's fetch --all" >&2; exit 1; }
}
fetch_all clone-xet xet; got_xet=$got
fetch_all clone-lfs plain; got_lfs=$got
row "clone + fetch --all of $VN×$VMB MiB: agent / plain git-lfs" "$(mb "$got_xet") vs $(mb "$got_lfs") = $(ratio "$got_xet" "$got_lfs")×" "≤ 0.3×" \
  "$(atmost "$(ratio "$got_xet" "$got_lfs")" 0.3)"

echo "4. git lfs pull of a 1 %-edit version in that clone"
use v-server-all
cd "$vsrc"; cp "$work/data/vnext" model.bin; git commit -q -am "1 % edit"; git push -q origin main
use clone-xet
cd "$work/clone-xet-clone"
GIT_LFS_SKIP_SMUDGE=1 git pull -q
d0=$(down "$vserver"); git lfs pull; d1=$(down "$vserver")
cmp model.bin "$work/data/vnext"
cd "$work"
pct=$(awk -v b=$((d1 - d0)) -v s="$vsize" 'BEGIN { printf "%.2f", 100 * b / s }')
row "git lfs pull of a 1 %-edit version over the previous" "$(mb $((d1 - d0))) = $pct % of the file" "≤ 1.4 %" "$(atmost "$pct" 1.4)"

# (GNU time adds a line before the figure when the agent exits non-zero: only the figures count)
peak=$(awk '/^[0-9]+$/ && $1 + 0 > m { m = $1 + 0 } END { printf "%d", m }' "$work/agent.times")
procs=$(awk '/^[0-9]+$/ { n++ } END { print n + 0 }' "$work/agent.times")
row "peak RSS of an agent process (max of $procs)" "$(awk -v k="$peak" 'BEGIN { printf "%.1f MB", k * 1024 / 1e6 }')" "≤ 256 MB" \
  "$(atmost $((peak * 1024)) 256000000)"

echo
echo "summary ($(nproc) cores; $VN×$VMB MiB versions, $CN×$CMB MiB checkpoints; stores fresh for each push, xet-server and the Hub emulator on loopback):"
printf '%s\n' "${rows[@]}"
