#!/usr/bin/env bash
# Benchmark: clone a repository holding one HUB_MB (default 1024 = 1 GiB) file from the Hub emulator
# (xet-server --hub-compat) two ways, in one run:
#   - through the agent with `git-xet-transfer install --hub` (standalone mode: bridge URL -> Xet
#     hash -> CAS reconstruction -> parallel ranged xorb fetches), and
#   - through plain git-lfs (basic transfer: one whole-file GET of the bridge URL, which the server
#     reconstructs), as every Hub user without a Xet-aware download gets today;
# then a pull of a version with a 1 % edit, both ways. Prints wall time and bytes received (counted by
# a proxy in front of the emulator) and the ratios. Runs in a temp HOME; touches nothing else.
# Needs go, git, git-lfs, curl.
#
#   test/hub-bench.sh            HUB_MB=256 test/hub-bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
MB=${HUB_MB:-1024}
TOKEN=hf_benchWRITEtoken0123456789

work=$(mktemp -d "${TMPDIR:-/tmp}/xet-hub-bench.XXXXXX")
KEEP=${HUB_KEEP:-}
cleanup() { [ -n "$KEEP" ] && return; for p in $(jobs -p); do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

echo "building into $work/bin"
mkdir -p "$work/bin" "$work/home-xet" "$work/home-lfs"
go build -o "$work/bin/git-xet-transfer" ./cmd/git-xet-transfer
go build -o "$work/bin/xet-server" ./cmd/xet-server
go build -o "$work/bin/countproxy" ./test/countproxy
export PATH="$work/bin:$PATH" GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0
unset GIT_DIR GIT_WORK_TREE GIT_XET_LOG GIT_TRACE HF_TOKEN HF_ENDPOINT

. test/ports.sh
ports=$(freeports 2); read -r sport pport <<<"$ports"
hub="http://127.0.0.1:$pport"
echo "$TOKEN:bench:write" > "$work/tokens"
xet-server --listen "127.0.0.1:$sport" --data "$work/server" --public-url "$hub" --hub-compat "$work/tokens" --log-level error 2>"$work/server.log" &
countproxy -listen "127.0.0.1:$pport" -backend "http://127.0.0.1:$sport" 2>"$work/proxy.log" &
for _ in $(seq 100); do curl -fs "$hub/__count" >/dev/null 2>&1 && break; sleep 0.1; done
count() { curl -fs "$hub/__count"; }

as() { # as xet|lfs COMMAND...: run in that user's HOME
  local who=$1; shift
  HOME="$work/home-$who" XDG_CACHE_HOME="$work/home-$who/.cache" HF_ENDPOINT="$hub" HF_TOKEN="$TOKEN" "$@"
}
for who in xet lfs; do
  as $who git config --global user.name bench; as $who git config --global user.email bench@example.test
  as $who git config --global init.defaultBranch main
  # plain git-lfs authenticates its batch calls with git's credential helper
  as $who git config --global credential.helper store
  echo "http://hf_user:$TOKEN@127.0.0.1:$pport" > "$work/home-$who/.git-credentials"
done
as xet git-xet-transfer install --hub >/dev/null
as lfs git lfs install >/dev/null

echo "making a $MB MiB file and pushing it through the agent"
git init -q --bare -b main "$work/remote.git"
as xet git init -q "$work/src"
cd "$work/src"
as xet git lfs track '*.bin' >/dev/null
printf '[lfs]\n\turl = %s/org/bench.git/info/lfs\n\tlocksverify = false\n' "$hub" > .lfsconfig
head -c $((MB << 20)) /dev/urandom > model.bin
as xet git add . && as xet git commit -q -m v1
as xet git remote add origin "$work/remote.git"
as xet git push -q origin main

declare -a rows=()
declare -A secs bytes
measure() { # measure KEY LABEL COMMAND...
  local key=$1 label=$2; shift 2
  sync
  read -r _ d0 < <(count)
  local t0; t0=$(date +%s.%N)
  "$@" >"$work/last.log" 2>&1 || { echo "FAILED: $label"; cat "$work/last.log"; exit 1; }
  local t1; t1=$(date +%s.%N)
  read -r _ d1 < <(count)
  secs[$key]=$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}'); bytes[$key]=$((d1 - d0))
  rows+=("$(printf '%-42s %8.2f s %10.1f MB' "$label" "${secs[$key]}" "$(awk -v d="${bytes[$key]}" 'BEGIN{print d/1e6}')")")
  echo "${rows[-1]}"
}

cd "$work"
measure xclone "agent (--hub): clone" as xet git clone -q "$work/remote.git" "$work/clone-xet"
measure lclone "plain git-lfs (bridge): clone" as lfs git clone -q "$work/remote.git" "$work/clone-lfs"
cmp "$work/src/model.bin" "$work/clone-xet/model.bin"
cmp "$work/src/model.bin" "$work/clone-lfs/model.bin"

echo "editing 1 % (ten scattered $((MB * 1024 / 1000)) KiB patches) and pushing"
cd "$work/src"
for k in $(seq 0 9); do
  head -c $(((MB << 20) / 1000)) /dev/urandom | dd of=model.bin bs=1M seek=$((MB * k / 10 + 1)) conv=notrunc status=none iflag=fullblock
done
as xet git commit -q -am v2 && as xet git push -q origin main
cd "$work/clone-xet"; measure xpull "agent (--hub): pull after 1% edit" as xet git pull -q origin main
cd "$work/clone-lfs"; measure lpull "plain git-lfs (bridge): pull after 1% edit" as lfs git pull -q origin main
cmp "$work/src/model.bin" "$work/clone-xet/model.bin"
cmp "$work/src/model.bin" "$work/clone-lfs/model.bin"

echo
echo "summary ($(nproc) cores, $MB MiB file, Hub emulator on loopback; bytes received counted at a proxy):"
printf '%s\n' "${rows[@]}"
awk -v a="${secs[lclone]}" -v b="${secs[xclone]}" -v c="${bytes[lclone]}" -v d="${bytes[xclone]}" \
  'BEGIN { printf "clone: agent takes %.2fx the time of plain git-lfs, receives %.2fx the bytes\n", b/a, d/c }'
awk -v a="${secs[lpull]}" -v b="${secs[xpull]}" -v c="${bytes[lpull]}" -v d="${bytes[xpull]}" \
  'BEGIN { printf "pull:  agent takes %.2fx the time of plain git-lfs, receives %.2fx the bytes\n", b/a, d/c }'
