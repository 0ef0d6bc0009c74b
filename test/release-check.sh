#!/usr/bin/env bash
# Runs scripts/release.sh twice for linux/amd64 and windows/amd64 (.tar.gz and .zip) into two
# folders and fails unless the SHA256SUMS agree, then checks that the linux binary in the archive
# says the version and the commit it was built from. The full six-target build is the release's;
# CI builds these two to stay within its time.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v zip >/dev/null || { echo "release-check: zip is missing (apt-get install zip)"; exit 1; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
targets=(linux/amd64 windows/amd64)
DIST="$out/a" bash scripts/release.sh v0.0.0-check "${targets[@]}" >/dev/null
DIST="$out/b" bash scripts/release.sh v0.0.0-check "${targets[@]}" >/dev/null
if ! cmp -s "$out/a/SHA256SUMS" "$out/b/SHA256SUMS"; then
  echo "release-check: two runs gave different archives:"; diff "$out/a/SHA256SUMS" "$out/b/SHA256SUMS"; exit 1
fi
(cd "$out/a" && sha256sum -c --quiet SHA256SUMS)
[ "$(wc -l <"$out/a/SHA256SUMS")" = 2 ] || { echo "release-check: SHA256SUMS lists $(wc -l <"$out/a/SHA256SUMS") archives, want 2"; exit 1; }
tar -C "$out" -xzf "$out/a/git-xet-transfer_v0.0.0-check_linux_amd64.tar.gz"
dir="$out/git-xet-transfer_v0.0.0-check_linux_amd64"
unzip -Z1 "$out/a/git-xet-transfer_v0.0.0-check_windows_amd64.zip" | sort >"$out/zip.list"
printf '%s\n' git-xet-transfer_v0.0.0-check_windows_amd64/{README.md,git-xet-transfer.exe,xet-server.exe} | sort >"$out/zip.want"
grep -vx 'git-xet-transfer_v0.0.0-check_windows_amd64/LICENSE' "$out/zip.list" | cmp -s - "$out/zip.want" ||
  { echo "release-check: the zip holds:"; cat "$out/zip.list"; exit 1; }
rev="$(git rev-parse HEAD)"
for c in "git-xet-transfer version" "xet-server --version"; do
  got="$("$dir"/$c)"
  case "$got" in
    *"v0.0.0-check (commit $rev"*) echo "ok: $got" ;;
    *) echo "release-check: \`$c\` printed \"$got\", want v0.0.0-check and commit $rev"; exit 1 ;;
  esac
done
echo "release-check: two runs, identical SHA256SUMS:"; cat "$out/a/SHA256SUMS"
