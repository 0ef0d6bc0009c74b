#!/usr/bin/env bash
# Many small files: SMALL_N (default 5000) random files of 1-10 KB are pushed and cloned back in one
# run on this machine, four ways:
#   xet     git-xet-transfer, standalone, to a local bare remote (the embedded Xet store)
#   plain   plain git-lfs to the same kind of remote (its standalone file transfer)
#   sxet    git-xet-transfer in batch mode against xet-server on loopback
#   sbasic  plain git-lfs basic transfers against xet-server on loopback
# (SMALL_SERVER=0 skips the last two.) It prints, per pair, wall and CPU (user+sys: git, git-lfs,
# the agents) of each push, the agents' own CPU per object, the clone's wall time, and what each
# store holds (files, bytes on disk, apparent bytes) with the ratios, and the bytes of the client's
# cache files under HOME/.cache (per object: against the 32-byte chunk hash it indexes). With SMALL_PROFILE=1 the
# agents of the embedded push write CPU and allocation profiles (GIT_XET_CPUPROFILE) and the script
# prints the merged top functions (SMALL_PROFILE_NODES, SMALL_PROFILE_FLAT=1 for flat order). Runs
# in a temp HOME; touches nothing else. Needs go, git, git-lfs, python3, curl, GNU time. Each way
# starts after a pause (SMALL_PAUSE, default 35 s): ext4 without a journal checks the deletion time
# of free inodes when it creates a file (recently_deleted), which taxes whichever way runs next after
# a mass delete. The pause eases it but does not end it: in a probe on this machine, creating 5,000
# files still took 4x as long 30 s after deleting 10,000 (docs/performance.md, test/scale.sh's
# SCALE_DEFER_DELETE).
# Each push starts after a sync and a pause (SMALL_SETTLE, default 10 s) once its repository is
# committed: without them the push ran into the writeback of the 10,000 files the commit had just
# written, which taxed the way that syncs per object (the embedded store) most: on one run its
# agents took 0.76 ms of CPU per object that way against 0.49-0.57 ms after a settled disk.
# The ways run SMALL_RUNS times (default 3), interleaved (xet, plain, sxet, sbasic, then again), and
# the tables show each figure's median over the runs (each run keeps its own HOME and server data
# until the script ends: deleting them between runs put the next clones in ext4's slow window); the ratio of a wall or CPU time is the median
# of the runs' own ratios (the two ways of a run ran one after the other), and each run's ratios
# are listed below the table: on this project's 2-core VM one push of the same code varied by
# 20-40 % from run to run. With XET_BINDIR=DIR it runs the git-xet-transfer and xet-server in DIR
# instead of building them from this checkout (test/abcompare.sh uses that).
#
#   test/small-files.sh        SMALL_N=1000 SMALL_PROFILE=1 test/small-files.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. test/median.sh
N=${SMALL_N:-5000}
[ -x /usr/bin/time ] || { echo "small-files: needs GNU time at /usr/bin/time" >&2; exit 1; }
command -v git-lfs >/dev/null || { echo "small-files: git-lfs is missing" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/xet-small.XXXXXX")
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/prof"
if [ -n "${XET_BINDIR:-}" ]; then
  cp "$XET_BINDIR/git-xet-transfer" "$XET_BINDIR/xet-server" "$work/bin/"
else
  go build -o "$work/bin/git-xet-transfer" ./cmd/git-xet-transfer
  go build -o "$work/bin/xet-server" ./cmd/xet-server
fi
# The agent runs through a wrapper that adds its CPU time to a file: the agents' own share.
cat >"$work/bin/agent" <<EOF
#!/bin/sh
exec /usr/bin/time -a -o "\$SMALL_AGENT_TIMES" -f "%U %S" "$work/bin/git-xet-transfer" "\$@"
EOF
chmod +x "$work/bin/agent"
export GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0
unset GIT_DIR GIT_WORK_TREE GIT_XET_LOG GIT_TRACE GIT_XET_CPUPROFILE

echo "making $N random files of 1-10 KB"
python3 - "$work/files" "$N" <<'PY'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(42)
for i in range(n):
    d = os.path.join(root, "d%02d" % (i % 50))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%05d.dat" % i), "wb") as f:
        f.write(rnd.randbytes(rnd.randint(1000, 10000)))
PY
logical=$(du -sb "$work/files" | cut -f1)

. test/ports.sh
server_url=""
start_server() { # start_server DIR: a fresh xet-server on loopback, at $server_url
  local port; port=$(freeport)
  "$work/bin/xet-server" --listen "127.0.0.1:$port" --data "$1" --log-level error >"$1.log" 2>&1 &
  pids+=($!)
  server_url="http://127.0.0.1:$port"
  for _ in $(seq 100); do curl -s -o /dev/null "$server_url/" && return 0; sleep 0.1; done
  echo "small-files: xet-server did not start" >&2; cat "$1.log" >&2; exit 1
}

# run MODE RUN: push and clone in a HOME of their own; the figures go to R[MODE.RUN.*].
declare -A R
run() {
  local mode=$1 n=$2 home="$work/home-$1-$2" srv="$work/server-$1-$2" store url=""
  sync
  sleep "${SMALL_PAUSE:-35}"
  mkdir -p "$home"
  case $mode in
  sxet | sbasic) mkdir -p "$srv"; start_server "$srv"; url=$server_url; store="$srv/cas" ;;
  xet) store="$home/remote.git/xet" ;;
  plain) store="$home/remote.git/lfs" ;;
  esac
  : >"$work/agent-$mode"
  (
    export HOME="$home" XDG_CACHE_HOME="$home/.cache" SMALL_AGENT_TIMES="$work/agent-$mode"
    g() { git -c user.name=small -c user.email=small@example.test -c init.defaultBranch=main "$@"; }
    cd "$home"
    git lfs install --skip-repo >/dev/null
    local gitc=()
    case $mode in
    xet | sxet)
      "$work/bin/git-xet-transfer" install >/dev/null
      git config --global lfs.customtransfer.xet.path "$work/bin/agent"
      [ "${SMALL_PROFILE:-0}" = 1 ] && [ "$mode" = xet ] && export GIT_XET_CPUPROFILE="$work/prof"
      ;;
    sbasic) gitc=(-c lfs.basictransfersonly=true) ;;
    esac
    g init -q --bare remote.git
    g init -q repo
    cd repo
    g lfs track '*.dat' >/dev/null
    [ -n "$url" ] && printf '[lfs]\n\turl = %s/team/%s.git/info/lfs\n\tlocksverify = false\n' "$url" "$mode" >.lfsconfig
    cp -r "$work/files/." .
    g add . && g commit -q -m files
    g remote add origin ../remote.git
    sync # the commit's own writeback (the objects, the work tree) is not the push's
    sleep "${SMALL_SETTLE:-10}"
    /usr/bin/time -f "%e %U %S" -o "$work/push-$mode" git "${gitc[@]}" push -q origin main
    cp "$work/agent-$mode" "$work/agent-push-$mode"
    cd ..
    unset GIT_XET_CPUPROFILE
    /usr/bin/time -f "%e %U %S" -o "$work/clone-$mode" git "${gitc[@]}" clone -q remote.git clone
    diff -r -q repo/d00 clone/d00 >/dev/null && diff -r -q repo/d49 clone/d49 >/dev/null || { echo "small-files: $mode clone differs" >&2; exit 1; }
  )
  local k=$mode.$n
  R[$k.push_wall]=$(awk '{print $1}' "$work/push-$mode")
  R[$k.push_cpu]=$(awk '{print $2 + $3}' "$work/push-$mode")
  R[$k.agent_cpu]=$(awk '{c += $1 + $2} END {print c + 0}' "$work/agent-push-$mode")
  R[$k.clone_wall]=$(awk '{print $1}' "$work/clone-$mode")
  R[$k.files]=$(find "$store" -type f | wc -l)
  R[$k.disk]=$(du -s --block-size=1 "$store" | cut -f1)
  R[$k.apparent]=$(du -sb "$store" | cut -f1)
  R[$k.cache]=$( (find "$home/.cache" -type f -printf '%s\n' 2>/dev/null || true) | awk '{ s += $1 } END { print s + 0 }')
  if [ -n "$url" ]; then kill "${pids[-1]}" 2>/dev/null; wait "${pids[-1]}" 2>/dev/null || true; fi
}

# runs_median MODE FIELD: the median of the field over the runs, into R[MODE.FIELD].
runs_median() {
  local vals=() r
  for r in $(seq "$RUNS"); do vals+=("${R[$1.$r.$2]}"); done
  R[$1.$2]=$(printf '%s\n' "${vals[@]}" | median)
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }'; }
# mratio A B FIELD: the median over the runs of each run's ratio A/B of the field (the two ways of
# a run ran one after the other, so their ratio is taken before the median).
mratio() {
  local r
  for r in $(seq "$RUNS"); do
    awk -v a="${R[$1.$r.$3]}" -v b="${R[$2.$r.$3]}" 'BEGIN { if (b > 0) print a / b }'
  done >"$work/ratios"
  if [ -s "$work/ratios" ]; then awk '{ printf "%.2fx", $1 }' <<<"$(median <"$work/ratios")"; else echo "-"; fi
}
mb() { awk -v b="$1" 'BEGIN { printf "%.1f MB", b / 1e6 }'; }
kb() { awk -v b="$1" 'BEGIN { printf "%.1f KB", b / 1e3 }'; }
perobjb() { awk -v b="$1" -v n="$N" 'BEGIN { printf "%.1f B", b / n }'; }
perobj() { awk -v c="$1" -v n="$N" 'BEGIN { printf "%.2f ms", 1000 * c / n }'; }
row() { printf '%-30s %22s %22s %10s\n' "$@"; }
table() { # table A B TITLE_A TITLE_B
  local a=$1 b=$2 f r
  for f in push_wall push_cpu agent_cpu clone_wall files disk apparent cache; do runs_median "$a" $f; runs_median "$b" $f; done
  echo
  echo "$N files, $(mb "$logical") ($(nproc) cores; medians of $RUNS interleaved runs):"
  row "" "$3" "$4" "ratio"
  row "push wall" "${R[$a.push_wall]} s" "${R[$b.push_wall]} s" "$(mratio "$a" "$b" push_wall)"
  row "push CPU (git, git-lfs, agents)" "${R[$a.push_cpu]} s" "${R[$b.push_cpu]} s" "$(mratio "$a" "$b" push_cpu)"
  row "  per object" "$(perobj "${R[$a.push_cpu]}")" "$(perobj "${R[$b.push_cpu]}")" ""
  row "  agents' CPU per object" "$(perobj "${R[$a.agent_cpu]}")" "-" ""
  row "clone wall" "${R[$a.clone_wall]} s" "${R[$b.clone_wall]} s" "$(mratio "$a" "$b" clone_wall)"
  row "store files" "${R[$a.files]}" "${R[$b.files]}" "$(ratio "${R[$a.files]}" "${R[$b.files]}")"
  row "store on disk" "$(mb "${R[$a.disk]}")" "$(mb "${R[$b.disk]}")" "$(ratio "${R[$a.disk]}" "${R[$b.disk]}")"
  row "store apparent" "$(mb "${R[$a.apparent]}")" "$(mb "${R[$b.apparent]}")" "$(ratio "${R[$a.apparent]}" "${R[$b.apparent]}")"
  row "client cache (file bytes)" "$(kb "${R[$a.cache]}")" "$(kb "${R[$b.cache]}")" ""
  row "  per object (hash: 32 B)" "$(perobjb "${R[$a.cache]}")" "$(perobjb "${R[$b.cache]}")" ""
  for r in $(seq "$RUNS"); do
    printf '  run %d: push %s (%s s / %s s), agents %s per object, clone %s (%s s / %s s)\n' "$r" \
      "$(ratio "${R[$a.$r.push_wall]}" "${R[$b.$r.push_wall]}")" "${R[$a.$r.push_wall]}" "${R[$b.$r.push_wall]}" \
      "$(perobj "${R[$a.$r.agent_cpu]}")" \
      "$(ratio "${R[$a.$r.clone_wall]}" "${R[$b.$r.clone_wall]}")" "${R[$a.$r.clone_wall]}" "${R[$b.$r.clone_wall]}"
  done
}

RUNS=${SMALL_RUNS:-3}
for r in $(seq "$RUNS"); do
  echo "run $r of $RUNS: pushing and cloning through xet (embedded store)"; run xet "$r"
  echo "run $r of $RUNS: pushing and cloning through plain git-lfs"; run plain "$r"
  if [ "${SMALL_SERVER:-1}" = 1 ]; then
    echo "run $r of $RUNS: pushing and cloning through xet against xet-server (batch mode)"; run sxet "$r"
    echo "run $r of $RUNS: pushing and cloning through plain git-lfs basic against xet-server"; run sbasic "$r"
  fi
done
table xet plain "xet (embedded store)" "plain git-lfs"
[ "${SMALL_SERVER:-1}" = 1 ] && table sxet sbasic "xet, xet-server" "basic, xet-server"

if [ "${SMALL_PROFILE:-0}" = 1 ]; then
  echo
  echo "agent CPU profile of the embedded push, all processes merged:"
  go tool pprof -top ${SMALL_PROFILE_FLAT:+-flat} $([ -n "${SMALL_PROFILE_FLAT:-}" ] || echo -cum) -nodecount="${SMALL_PROFILE_NODES:-25}" \
    "$work/bin/git-xet-transfer" "$work"/prof/cpu.*.pprof 2>/dev/null | sed -n "1,$((${SMALL_PROFILE_NODES:-25} + 10))p"
fi
exit 0
