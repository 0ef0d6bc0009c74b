#!/usr/bin/env bash
# Runs scripts/release.sh twice for windows/amd64 and darwin/arm64 (a .zip and a .tar.gz) into two
# folders and fails unless the SHA256SUMS agree, then checks each archive's entries and that its
# binaries record the version and the commit (go version -m and the binary's bytes: they are not for
# this machine). These
# two targets because test/crossvet.sh, run before it in CI, has compiled their packages the same
# way (-trimpath, CGO_ENABLED=0); the release itself builds all six.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v zip >/dev/null || { echo "release-check: zip is missing (apt-get install zip)"; exit 1; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
targets=(windows/amd64 darwin/arm64)
v=v0.0.0-check
DIST="$out/a" bash scripts/release.sh $v "${targets[@]}" >/dev/null
DIST="$out/b" bash scripts/release.sh $v "${targets[@]}" >/dev/null
if ! cmp -s "$out/a/SHA256SUMS" "$out/b/SHA256SUMS"; then
  echo "release-check: two runs gave different archives:"; diff "$out/a/SHA256SUMS" "$out/b/SHA256SUMS"; exit 1
fi
(cd "$out/a" && sha256sum -c --quiet SHA256SUMS)
[ "$(wc -l <"$out/a/SHA256SUMS")" = 2 ] || { echo "release-check: SHA256SUMS lists $(wc -l <"$out/a/SHA256SUMS") archives, want 2"; exit 1; }
win="git-xet-transfer_${v}_windows_amd64" mac="git-xet-transfer_${v}_darwin_arm64"
unzip -q -d "$out/x" "$out/a/$win.zip"
tar -C "$out/x" -xzf "$out/a/$mac.tar.gz"
for d in "$win" "$mac"; do
  want="LICENSE README.md docs git-xet-transfer git-xet-transfer-agent xet-server"
  [ "$d" = "$win" ] && want="LICENSE README.md docs git-xet-transfer-agent.exe git-xet-transfer.exe xet-server.exe"
  got="$(cd "$out/x/$d" && ls | tr '\n' ' ')"
  [ "$got" = "$want " ] || { echo "release-check: $d holds $got, want $want"; exit 1; }
  # The README and the documents it links to are read from the archive: every relative link resolves there.
  for md in "$out/x/$d/README.md" "$out/x/$d"/docs/*.md; do
    for l in $(grep -o '](\([^)#]*\)' "$md" | sed 's/^](//' | grep -v '^[a-z]*:' | sort -u); do
      [ -e "$(dirname "$md")/$l" ] || { echo "release-check: ${md#"$out"/x/} links to $l, which $d lacks"; exit 1; }
    done
  done
done
rev="$(git rev-parse HEAD)"
for b in "$out/x/$win/"*.exe "$out/x/$mac/git-xet-transfer" "$out/x/$mac/git-xet-transfer-agent" "$out/x/$mac/xet-server"; do
  info="$(go version -m "$b")"
  # -trimpath leaves -ldflags out of the build information: the stamped string is looked for in the binary.
  # The start-up agent links no internal/buildinfo (nothing but the protocol): no stamped string.
  stamped=true
  case "$b" in *git-xet-transfer-agent*) ;; *) grep -qa -- "$v" "$b" || stamped=false ;; esac
  grep -q "vcs.revision=$rev" <<<"$info" && grep -q "vcs.modified=false" <<<"$info" && grep -q -- "-trimpath=true" <<<"$info" &&
    $stamped ||
    { echo "release-check: ${b#"$out"/x/} does not record commit $rev, version $v and -trimpath:"; echo "$info"; exit 1; }
done
echo "release-check: the binaries record $v and commit $rev; two runs, identical SHA256SUMS:"; cat "$out/a/SHA256SUMS"
