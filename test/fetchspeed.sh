#!/usr/bin/env bash
# Download speed from the embedded store against the disk (issue 44's fetch target), in one run:
# `git lfs fetch` of FETCH_MB MiB as FETCH_FILES files (each followed by sync) against `cp` of the
# same files on the same disk, read from the disk too (then sync), FETCH_ROUNDS rounds alternating, medians. With the CPU of
# the agents alone and of the whole fetch (git-lfs, which hashes every byte it is handed, and the
# agents), each set against the floor of verification measured in the same run (BenchmarkVerifyFloor on one
# core: the chunk hashes, keyed BLAKE3, and SHA-256 of every byte; no I/O).
#
# Targets: fetch ≤ 2.0× cp + sync; the agents' CPU ≤ 1.5× the floor.
#
#   test/fetchspeed.sh                 FETCH_MB=256 FETCH_ROUNDS=1 test/fetchspeed.sh
#   XET_BINDIR=/path/to/old/bin test/fetchspeed.sh   # the agent of another build (its git-xet-transfer)
#   FETCH_PROFILE=/tmp/prof test/fetchspeed.sh        # CPU profiles of the agents (GIT_XET_CPUPROFILE)
#
# Runs in a temp HOME; touches nothing else. Needs go, git, git-lfs, GNU time.
set -euo pipefail
cd "$(dirname "$0")/.."
. test/median.sh
MB=${FETCH_MB:-1024}
FILES=${FETCH_FILES:-4}
ROUNDS=${FETCH_ROUNDS:-3}
[ -x /usr/bin/time ] || { echo "fetchspeed: needs GNU time at /usr/bin/time" >&2; exit 1; }
command -v git-lfs >/dev/null || { echo "fetchspeed: git-lfs is missing" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/xet-fetchspeed.XXXXXX")
trap '[ -n "${FETCH_KEEP:-}" ] && cp "$work/agent.times" "$FETCH_KEEP"; rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/home"
if [ -n "${XET_BINDIR:-}" ]; then
  cp "$XET_BINDIR/git-xet-transfer" "$work/bin/"
else
  go build -o "$work/bin/git-xet-transfer" ./cmd/git-xet-transfer
fi
# The floors, measured before HOME moves (the user's build cache), on one core.
floors=$(GOMAXPROCS=1 go test ./xet/download -run '^$' -bench '^BenchmarkVerifyFloor$' -benchtime 10x)
floor() { echo "$floors" | awk -v n="BenchmarkVerifyFloor/$1" '$1 ~ "^" n && $NF == "ns/B" { print $(NF-1) }'; }
f_both=$(floor both) f_blake=$(floor blake3) f_sha=$(floor sha256)
export HOME="$work/home" GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0 XDG_CACHE_HOME="$work/home/.cache"
unset GIT_DIR GIT_WORK_TREE GIT_TRACE GIT_XET_CPUPROFILE GIT_XET_LOG
(cd "$work" && "$work/bin/git-xet-transfer" install >/dev/null)
# The agent as git-lfs runs it, under GNU time: user and system CPU of each process.
cat >"$work/bin/agent" <<WRAP
#!/bin/sh
exec /usr/bin/time -a -o "$work/agent.times" -f "%U %S %M" "$work/bin/git-xet-transfer" "\$@"
WRAP
chmod 755 "$work/bin/agent"
git config --global lfs.customtransfer.xet.path "$work/bin/agent"
git config --global user.name fetchspeed; git config --global user.email fetchspeed@example.test
git config --global init.defaultBranch main

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
size=$((MB << 20))

repo="$work/src"; git init -q "$repo"; cd "$repo"; git lfs track '*.bin' >/dev/null
for i in $(seq "$FILES"); do head -c $((size / FILES)) /dev/urandom >"f$i.bin"; done
git add .; git commit -q -m fetchspeed
git init -q --bare "$repo.git"; git remote add origin "$repo.git"; git push -q origin main

: >"$work/fetch" >"$work/cp" >"$work/agents" >"$work/whole" >"$work/rss"
for round in $(seq "$ROUNDS"); do
  rm -rf "$repo-clone" "$work/copy"; GIT_LFS_SKIP_SMUDGE=1 git clone -q "$repo.git" "$repo-clone"; sync
  : >"$work/agent.times"; t0=$(now)
  (cd "$repo-clone" && GIT_XET_CPUPROFILE="${FETCH_PROFILE:-}" /usr/bin/time -o "$work/whole.time" -f "%U %S" git lfs fetch >/dev/null && sync); t1=$(now)
  echo "$(secs "$t0" "$t1")" >>"$work/fetch"
  awk '{ u += $1; s += $2 } END { printf "%.3f\n", u + s }' "$work/agent.times" >>"$work/agents"
  awk '{ printf "%.3f\n", $1 + $2 }' "$work/whole.time" >>"$work/whole"
  awk '$3 > m { m = $3 } END { printf "%d\n", m / 1024 }' "$work/agent.times" >>"$work/rss"
  for i in $(seq "$FILES"); do cmp -s "f$i.bin" "$repo-clone/.git/lfs/objects/$(sha256sum "f$i.bin" | cut -c1-2)/$(sha256sum "f$i.bin" | cut -c3-4)/$(sha256sum "f$i.bin" | cut -c1-64)" ||
    { echo "fetchspeed: f$i.bin fetched wrong" >&2; exit 1; }; done
  # The store's xorbs are written with O_DIRECT and read from the disk; cp's sources are dropped
  # from the page cache too (dd iflag=nocache), so both read the disk.
  mkdir -p "$work/copy"; sync; for f in f*.bin; do dd if="$f" iflag=nocache count=0 status=none; done; t0=$(now)
  cp f*.bin "$work/copy/" && sync; t1=$(now)
  echo "$(secs "$t0" "$t1")" >>"$work/cp"
done
tf=$(median <"$work/fetch") tc=$(median <"$work/cp") ca=$(median <"$work/agents") cw=$(median <"$work/whole")
nsb() { awk -v c="$1" -v b="$size" 'BEGIN { printf "%.3f", c * 1e9 / b }'; }
echo
echo "git lfs fetch of $MB MiB ($FILES files) from the embedded store, $(nproc) cores, medians of $ROUNDS"
printf '%-44s %s\n' "fetch + sync" "$tf s (runs: $(paste -sd' ' "$work/fetch"))"
printf '%-44s %s\n' "cp + sync" "$tc s (runs: $(paste -sd' ' "$work/cp"))"
printf '%-44s %s×   target ≤ 2.0×\n' "fetch / cp" "$(ratio "$tf" "$tc")"
printf '%-44s %s ns/B (BLAKE3 %s, SHA-256 %s; 1 core, no I/O)\n' "floor: chunk hashes + SHA-256" "$f_both" "$f_blake" "$f_sha"
printf '%-44s %s s = %s ns/B = %s× the floor   target ≤ 1.5×\n' "the agents' CPU" "$ca" "$(nsb "$ca")" "$(ratio "$(nsb "$ca")" "$f_both")"
# The whole fetch against the same floor: every byte chunk-hashed and SHA-256'd once, whoever does
# it (git-lfs hashes every file the agent hands it; the agent hashes it too only where the oid's
# mapping was not verified on upload, and an older build always).
printf '%-44s %s s = %s ns/B = %s× the floor\n' "the whole fetch's CPU (git-lfs + agents)" "$cw" "$(nsb "$cw")" "$(ratio "$(nsb "$cw")" "$f_both")"
printf '%-44s %s MiB\n' "the agents' peak RSS" "$(sort -n "$work/rss" | tail -1)"
printf '%-44s %s\n' "the agents' CPU per round (s)" "$(paste -sd' ' "$work/agents")"
