#!/usr/bin/env bash
# Start-up of xet-server over an S3 bucket: the time from launch until /healthz answers, over an
# empty bucket and over one holding S3_N (default 100,000) objects, on a versitygw on loopback.
# An instance reads nothing of the bucket at start (every index is a direct key; nothing is listed
# or loaded), so the two should be equal. Needs go, curl, versitygw.
#
#   test/s3-startup.sh            S3_N=20000 test/s3-startup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
N=${S3_N:-100000}
work=$(mktemp -d "${TMPDIR:-/tmp}/xet-s3start.XXXXXX")
cleanup() { for p in $(jobs -p); do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
command -v versitygw >/dev/null || { echo "needs versitygw (go install github.com/versity/versitygw/cmd/versitygw@v1.8.0)"; exit 1; }
go build -o "$work/xet-server" ./cmd/xet-server
go build -o "$work/s3fill" ./test/s3fill
. test/ports.sh
port=$(freeport)
mkdir -p "$work/s3/empty" "$work/s3/full"
versitygw --access startkey --secret startsecret --port "127.0.0.1:$port" posix "$work/s3" >"$work/s3.log" 2>&1 &
export AWS_ENDPOINT_URL="http://127.0.0.1:$port" AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=startkey AWS_SECRET_ACCESS_KEY=startsecret
for _ in $(seq 100); do curl -s -o /dev/null "$AWS_ENDPOINT_URL" && break; sleep 0.1; done

startup() { # startup BUCKET: seconds from launch to a /healthz answer (best of 3)
  local best=999
  for _ in 1 2 3; do
    local sport; sport=$(freeport)
    local t0; t0=$(date +%s.%N)
    "$work/xet-server" --listen "127.0.0.1:$sport" --data "$work/data-$1" --storage "s3://$1/cas" --log-level error 2>>"$work/server.log" &
    local pid=$!
    until curl -fs "http://127.0.0.1:$sport/healthz" >/dev/null 2>&1; do
      kill -0 "$pid" 2>/dev/null || { echo "xet-server died"; cat "$work/server.log"; exit 1; }
      sleep 0.01
    done
    local t1; t1=$(date +%s.%N)
    kill "$pid"; wait "$pid" 2>/dev/null || true
    best=$(awk -v a="$t0" -v b="$t1" -v best="$best" 'BEGIN { d=b-a; print (d<best)?d:best }')
  done
  echo "$best"
}

empty=$(startup empty)
echo "putting $N objects into the bucket (S3 PUTs, 32 at a time)"
t0=$(date +%s.%N)
"$work/s3fill" -n "$N" -bucket full -prefix cas/
echo "  took $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f s", b-a }')"
listed=$("$work/xet-server" gc --dry-run --storage s3://full/cas | sed -n 's/^\([0-9]*\) xorbs.*/\1/p')
full=$(startup full)
echo
echo "xet-server start-up until /healthz answers ($(nproc) cores, versitygw on loopback, best of 3):"
printf '  empty bucket:                 %.3f s\n' "$empty"
printf '  bucket of %d objects (gc lists %d xorbs there): %.3f s (%.2fx the empty one)\n' "$N" "$listed" "$full" "$(awk -v a="$full" -v b="$empty" 'BEGIN{print a/b}')"
