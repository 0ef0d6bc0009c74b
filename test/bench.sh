#!/usr/bin/env bash
# Benchmark: push and clone BENCH_MB (default 1024 = 1 GiB) of LFS files through Xet (git-xet-transfer,
# batch mode) and through plain git-lfs (basic transfer), each against its own fresh xet-server (same
# binary, empty data directory, so neither run dedupes against the other's data) on loopback, then
# re-push after a 1 % edit. Prints wall time and bytes sent/received for each (counted by a
# proxy in front of the server), and the server's store growth. Runs in a temp HOME; touches nothing
# else. Needs go, git, git-lfs. With XET_BINDIR=DIR it runs the git-xet-transfer, xet-server and
# countproxy in DIR instead of building them from this checkout (test/abcompare.sh uses that).
#
# With --s3, the second run is not plain git-lfs but Xet again, against a xet-server whose CAS is
# in an S3 bucket (a versitygw on loopback, as in the tests) instead of its data directory, and the
# S3/filesystem ratios of push and clone are printed (needs versitygw: see .ci/run).
#
#   test/bench.sh            BENCH_MB=256 test/bench.sh            test/bench.sh --s3
set -euo pipefail
S3=""
[ "${1:-}" = --s3 ] && S3=1
cd "$(dirname "$0")/.."
root=$(pwd)
MB=${BENCH_MB:-1024}
FILES=4

work=$(mktemp -d "${TMPDIR:-/tmp}/xet-bench.XXXXXX")
cleanup() { for p in $(jobs -p); do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

mkdir -p "$work/bin" "$work/home"
. test/binaries.sh
xet_binaries "$work/bin"

export HOME="$work/home" GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0 XDG_CACHE_HOME="$work/home/.cache"
export PATH="$work/bin:$PATH"
unset GIT_DIR GIT_WORK_TREE GIT_XET_LOG GIT_TRACE
git config --global user.name bench; git config --global user.email bench@example.test
git config --global init.defaultBranch main
(cd "$work" && git-xet-transfer install >/dev/null)

. test/ports.sh
if [ -n "$S3" ]; then # a real S3 server on loopback, one bucket
  command -v versitygw >/dev/null || { echo "--s3 needs versitygw (go install github.com/versity/versitygw/cmd/versitygw@v1.8.0)"; exit 1; }
  s3port=$(freeport)
  mkdir -p "$work/s3/bench"
  versitygw --access benchkey --secret benchsecret --port "127.0.0.1:$s3port" posix "$work/s3" >"$work/s3.log" 2>&1 &
  export AWS_ENDPOINT_URL="http://127.0.0.1:$s3port" AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=benchkey AWS_SECRET_ACCESS_KEY=benchsecret
  for _ in $(seq 100); do curl -s -o /dev/null "$AWS_ENDPOINT_URL" && break; sleep 0.1; done
fi
proxy="" server_data="" store_dir=""
start_server() { # start_server NAME: a fresh xet-server (data in $work/server-NAME) behind a counting proxy
  local ports sport pport; ports=$(freeports 2); read -r sport pport <<<"$ports"
  proxy="http://127.0.0.1:$pport" server_data="$work/server-$1" store_dir="$work/server-$1/cas"
  local storage=()
  if [ "$1" = s3 ]; then storage=(--storage "s3://bench/$1"); store_dir="$work/s3/bench/$1"; fi
  xet-server --listen "127.0.0.1:$sport" --data "$server_data" "${storage[@]}" --public-url "$proxy" --log-level error 2>"$work/server-$1.log" &
  countproxy -listen "127.0.0.1:$pport" -backend "http://127.0.0.1:$sport" 2>"$work/proxy-$1.log" &
  for _ in $(seq 100); do curl -fs "$proxy/__count" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "xet-server for $1 did not start"; cat "$work/server-$1.log"; exit 1
}
count() { curl -fs "$proxy/__count"; }
storebytes() { du -sb "$store_dir" 2>/dev/null | cut -f1 || echo 0; }

echo "making $MB MiB of random data in $FILES files"
mkdir -p "$work/data"
per=$((MB / FILES))
for i in $(seq $FILES); do head -c $((per << 20)) /dev/urandom > "$work/data/f$i.bin"; done

declare -a rows=()
declare -A walls=()
measure() { # measure LABEL COMMAND...: time it, count the proxy's bytes and the store growth
  local label=$1; shift
  read -r up0 down0 < <(count); local s0; s0=$(storebytes)
  local t0; t0=$(date +%s.%N)
  "$@" >"$work/last.log" 2>&1 || { echo "FAILED: $label"; cat "$work/last.log"; exit 1; }
  local t1; t1=$(date +%s.%N)
  walls[$label]=$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')
  read -r up1 down1 < <(count); local s1; s1=$(storebytes)
  rows+=("$(awk -v l="$label" -v t=$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}') -v u=$((up1-up0)) -v d=$((down1-down0)) -v s=$((s1-s0)) \
    'BEGIN { printf "%-34s %8.2f s %10.1f MB %10.1f MB %10.1f MB %8.1f MB/s", l, t, u/1e6, d/1e6, s/1e6, (u+d)/1e6/t }')")
  echo "${rows[-1]}"
}

run() { # run MODE: xet, basic (plain git-lfs) or s3 (xet, the server's CAS on S3)
  local mode=$1 gitc=()
  [ "$mode" = basic ] && gitc=(-c lfs.basictransfersonly=true)
  local repo="$work/$mode"
  start_server "$mode"
  git init -q --bare "$repo-remote.git"
  git init -q "$repo"
  cd "$repo"
  git lfs track '*.bin' >/dev/null
  printf '[lfs]\n\turl = %s/team/%s.git/info/lfs\n\tlocksverify = false\n' "$proxy" "$mode" > .lfsconfig
  cp "$work"/data/*.bin .
  git add . && git commit -q -m v1
  git remote add origin "$repo-remote.git"
  measure "$mode: push $MB MiB" git "${gitc[@]}" push -q origin main
  cd "$work"
  measure "$mode: clone" git "${gitc[@]}" clone -q "$repo-remote.git" "$repo-clone"
  cmp "$repo/f1.bin" "$repo-clone/f1.bin"
  cd "$repo"
  # 1 % edit: 4 places of (size/400) bytes in every file.
  for i in $(seq $FILES); do
    for k in 1 3 5 7; do
      head -c $(((per << 20) / 400)) /dev/urandom | dd of=f$i.bin bs=1M seek=$((per * k / 8)) conv=notrunc status=none iflag=fullblock
    done
  done
  git commit -q -am v2
  measure "$mode: re-push after 1% edit" git "${gitc[@]}" push -q origin main
  cd "$work"
}

printf '%-34s %10s %13s %13s %13s %13s\n' "" "wall" "sent" "received" "store grew" "throughput"
run xet
if [ -n "$S3" ]; then run s3; else run basic; fi
echo
echo "summary ($(nproc) cores; bytes counted at a proxy in front of a fresh xet-server per mode on loopback):"
printf '%-34s %10s %13s %13s %13s %13s\n' "" "wall" "sent" "received" "store grew" "throughput"
printf '%s\n' "${rows[@]}"
if [ -n "$S3" ]; then
  echo "(with S3 the clone's xorb ranges go straight to the bucket with presigned URLs, past the counting proxy)"
  for step in "push $MB MiB" clone "re-push after 1% edit"; do
    awk -v s="${walls[s3: $step]}" -v f="${walls[xet: $step]}" -v l="$step" 'BEGIN { printf "S3 / filesystem, %-24s %.2f (%.2f s vs %.2f s)\n", l":", s/f, s, f }'
  done
fi
