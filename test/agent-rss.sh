#!/usr/bin/env bash
# Peak memory of the agent in real use: one RSS_MB-MiB file (default 4096) of random data is pushed
# to a local bare remote through the embedded Xet store (or, with RSS_SERVER=1, through xet-server
# on loopback, over HTTP) and cloned back, with real git and git-lfs; every agent process git-lfs
# starts runs under /usr/bin/time, and the script prints each one's peak RSS. Runs in a temp HOME;
# touches nothing else. Needs go, git, git-lfs, GNU time. Disk: about five times the file.
#
# With RSS_COMPRESSIBLE=1 the file is highly compressible instead: repeated text, then a float32
# tensor of small values (the case where clients that cap xorbs by serialized size make terms of
# more than 64 MiB; see TestPeakRSSLongTerms for those terms themselves).
#
#   test/agent-rss.sh          RSS_MB=1024 RSS_SERVER=1 test/agent-rss.sh
#   RSS_MB=300 RSS_COMPRESSIBLE=1 test/agent-rss.sh
set -euo pipefail
cd "$(dirname "$0")/.."
MB=${RSS_MB:-4096}
[ -x /usr/bin/time ] || { echo "agent-rss: needs GNU time at /usr/bin/time" >&2; exit 1; }
command -v git-lfs >/dev/null || { echo "agent-rss: git-lfs is missing" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/xet-rss.XXXXXX")
server=""
trap '[ -n "$server" ] && kill $server 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/home"
go build -o "$work/bin/git-xet-transfer" ./cmd/git-xet-transfer
go build -o "$work/bin/xet-server" ./cmd/xet-server
export HOME="$work/home" GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0 XDG_CACHE_HOME="$work/home/.cache"
unset GIT_DIR GIT_WORK_TREE GIT_XET_LOG GIT_TRACE
(cd "$work" && "$work/bin/git-xet-transfer" install >/dev/null)
# The agent as git-lfs runs it, under GNU time (which writes the peak RSS, in KiB, to a file).
cat > "$work/bin/agent" <<WRAP
#!/bin/sh
exec /usr/bin/time -f %M -o "$work/rss.\$\$" "$work/bin/git-xet-transfer" "\$@"
WRAP
chmod 755 "$work/bin/agent"
git config --global lfs.customtransfer.xet.path "$work/bin/agent"
g() { git -c user.name=rss -c user.email=rss@example.test -c init.defaultBranch=main "$@"; }
peaks() { # peaks PHASE: the peak RSS of each agent process since the last call
  local f line=""
  for f in "$work"/rss.*; do [ -e "$f" ] || continue; line="$line $(( $(tail -n1 "$f") / 1024 ))"; rm -f "$f"; done
  echo "$1: agent peak RSS (MiB, one per process):${line:- none ran}"
}

cd "$work"
g init -q --bare remote.git
g init -q repo
cd repo
g lfs track '*.bin' >/dev/null
if [ "${RSS_SERVER:-0}" = 1 ]; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$work/bin/xet-server" --listen "127.0.0.1:$port" --data "$work/server" --log-level error 2>"$work/server.log" & server=$!
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
  printf '[lfs]\n\turl = http://127.0.0.1:%s/team/rss.git/info/lfs\n\tlocksverify = false\n' "$port" > .lfsconfig
  echo "through xet-server on 127.0.0.1:$port"
fi
echo "making a $MB MiB file"
if [ "${RSS_COMPRESSIBLE:-0}" = 1 ]; then
  python3 -c 'import struct,sys
n = int(sys.argv[1]); half = n // 2
out = sys.stdout.buffer
line = b"2026-11-24T12:00:00Z,sensor-07,reading ok,0.00125\n"
text = line * (65536 // len(line) + 1)
left = half
while left > 0:
    out.write(text[:min(left, 65536)]); left -= min(left, 65536)
vals = struct.pack("<4096f", *[(i % 97) / 1e4 for i in range(4096)])
left = n - half
while left > 0:
    out.write(vals[:min(left, len(vals))]); left -= min(left, len(vals))' "$((MB << 20))" > big.bin
else
  head -c $((MB << 20)) /dev/urandom > big.bin
fi
g add . && g commit -q -m big
g remote add origin ../remote.git
rm -f "$work"/rss.*
t0=$(date +%s.%N); g push -q origin main; t1=$(date +%s.%N)
echo "push: $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f s", b - a }')"
peaks push
if [ -n "$server" ]; then
  stored=$(du -sb "$work/server" | cut -f1)
  echo "xet-server stored $((stored >> 10)) KiB"
  # The file's oid must be registered there (a compressible file is stored in far less than its size).
  oid=$(g lfs ls-files -l | awk '{print $1}')
  find "$work/server" -path '*/sha256v/*' -name "$oid" | grep -q . || { echo "agent-rss: the push did not go through xet-server" >&2; exit 1; }
fi
cd "$work"
t0=$(date +%s.%N); g clone -q remote.git clone; t1=$(date +%s.%N)
echo "clone: $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f s", b - a }')"
peaks clone
cmp repo/big.bin clone/big.bin && echo "clone is byte-identical"
