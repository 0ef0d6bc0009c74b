#!/usr/bin/env bash
# Many small files: SMALL_N (default 5000) random files of 1-10 KB are pushed to a local bare
# remote and cloned back, once through git-xet-transfer (the embedded Xet store) and once through
# plain git-lfs, in one run on this machine; prints wall and CPU (user+sys, the agents and git-lfs
# included) of each push, the clone's wall time, and what each remote stores (files, bytes on disk,
# apparent bytes), with the ratios xet / plain. With SMALL_PROFILE=1 the agents write CPU profiles
# (GIT_XET_CPUPROFILE) and the script prints the merged top functions. Runs in a temp HOME; touches
# nothing else. Needs go, git, git-lfs, python3, GNU time.
#
#   test/small-files.sh        SMALL_N=1000 SMALL_PROFILE=1 test/small-files.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
N=${SMALL_N:-5000}
[ -x /usr/bin/time ] || { echo "small-files: needs GNU time at /usr/bin/time" >&2; exit 1; }
command -v git-lfs >/dev/null || { echo "small-files: git-lfs is missing" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/xet-small.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/prof"
go build -o "$work/bin/git-xet-transfer" ./cmd/git-xet-transfer
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

# run MODE: push and clone in a HOME of their own; MODE xet installs the agent, plain does not.
declare -A R
run() {
  local mode=$1 home="$work/home-$1"
  mkdir -p "$home"
  (
    export HOME="$home" XDG_CACHE_HOME="$home/.cache"
    g() { git -c user.name=small -c user.email=small@example.test -c init.defaultBranch=main "$@"; }
    cd "$home"
    git lfs install --skip-repo >/dev/null
    if [ "$mode" = xet ]; then
      "$work/bin/git-xet-transfer" install >/dev/null
      [ "${SMALL_PROFILE:-0}" = 1 ] && export GIT_XET_CPUPROFILE="$work/prof"
    fi
    g init -q --bare remote.git
    g init -q repo
    cd repo
    g lfs track '*.dat' >/dev/null
    cp -r "$work/files/." .
    g add . && g commit -q -m files
    g remote add origin ../remote.git
    /usr/bin/time -f "%e %U %S" -o "$work/push-$mode" git push -q origin main
    cd ..
    unset GIT_XET_CPUPROFILE
    /usr/bin/time -f "%e %U %S" -o "$work/clone-$mode" git clone -q remote.git clone
    diff -r -q repo/d00 clone/d00 >/dev/null && diff -r -q repo/d49 clone/d49 >/dev/null || { echo "small-files: $mode clone differs" >&2; exit 1; }
  )
  local store="$home/remote.git/lfs"
  [ "$mode" = xet ] && store="$home/remote.git/xet"
  R[$mode.push_wall]=$(awk '{print $1}' "$work/push-$mode")
  R[$mode.push_cpu]=$(awk '{print $2 + $3}' "$work/push-$mode")
  R[$mode.clone_wall]=$(awk '{print $1}' "$work/clone-$mode")
  R[$mode.files]=$(find "$store" -type f | wc -l)
  R[$mode.disk]=$(du -s --block-size=1 "$store" | cut -f1)
  R[$mode.apparent]=$(du -sb "$store" | cut -f1)
  R[$mode.cache]=$(du -sb "$home/.cache" 2>/dev/null | cut -f1 || echo 0)
}
echo "pushing and cloning through xet (embedded store)"; run xet
echo "pushing and cloning through plain git-lfs"; run plain

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }'; }
mb() { awk -v b="$1" 'BEGIN { printf "%.1f MB", b / 1e6 }'; }
echo
echo "$N files, $(mb "$logical") (2 cores, one run):"
printf '%-28s %22s %22s %10s\n' "" "xet (embedded store)" "plain git-lfs" "ratio"
printf '%-28s %22s %22s %10s\n' "push wall" "${R[xet.push_wall]} s" "${R[plain.push_wall]} s" "$(ratio "${R[xet.push_wall]}" "${R[plain.push_wall]}")"
printf '%-28s %22s %22s %10s\n' "push CPU (user+sys)" "${R[xet.push_cpu]} s" "${R[plain.push_cpu]} s" "$(ratio "${R[xet.push_cpu]}" "${R[plain.push_cpu]}")"
printf '%-28s %22s %22s %10s\n' "push CPU per object" "$(awk -v c="${R[xet.push_cpu]}" -v n="$N" 'BEGIN { printf "%.2f ms", 1000 * c / n }')" "$(awk -v c="${R[plain.push_cpu]}" -v n="$N" 'BEGIN { printf "%.2f ms", 1000 * c / n }')" ""
printf '%-28s %22s %22s %10s\n' "clone wall" "${R[xet.clone_wall]} s" "${R[plain.clone_wall]} s" "$(ratio "${R[xet.clone_wall]}" "${R[plain.clone_wall]}")"
printf '%-28s %22s %22s %10s\n' "remote store files" "${R[xet.files]}" "${R[plain.files]}" "$(ratio "${R[xet.files]}" "${R[plain.files]}")"
printf '%-28s %22s %22s %10s\n' "remote store on disk" "$(mb "${R[xet.disk]}")" "$(mb "${R[plain.disk]}")" "$(ratio "${R[xet.disk]}" "${R[plain.disk]}")"
printf '%-28s %22s %22s %10s\n' "remote store apparent" "$(mb "${R[xet.apparent]}")" "$(mb "${R[plain.apparent]}")" "$(ratio "${R[xet.apparent]}" "${R[plain.apparent]}")"
printf '%-28s %22s %22s %10s\n' "client cache (HOME/.cache)" "$(mb "${R[xet.cache]}")" "$(mb "${R[plain.cache]}")" ""

if [ "${SMALL_PROFILE:-0}" = 1 ]; then
  echo
  echo "agent CPU profile, all push processes merged (top 25 by cumulative time):"
  go tool pprof -top ${SMALL_PROFILE_FLAT:+-flat} $( [ -n "${SMALL_PROFILE_FLAT:-}" ] || echo -cum) -nodecount=${SMALL_PROFILE_NODES:-25} "$work/bin/git-xet-transfer" "$work"/prof/cpu.*.pprof 2>/dev/null | sed -n "1,$((${SMALL_PROFILE_NODES:-25} + 10))p"
fi
