#!/usr/bin/env bash
# Builds the release archives of git-xet-transfer:
#
#   scripts/release.sh VERSION [GOOS/GOARCH ...]     # default: every target in scripts/targets
#
# For each target: the binaries (git-xet-transfer, its start-up agent git-xet-transfer-agent,
# xet-server; .exe on Windows) built with
# -trimpath, CGO_ENABLED=0, the commit recorded (-buildvcs=true) and VERSION stamped into
# internal/buildinfo, then dist/git-xet-transfer_VERSION_OS_ARCH.tar.gz (.zip on Windows) holding a
# folder of that name with the README and the documents it links to (docs/), the licence and the
# binaries; then dist/SHA256SUMS.
#
# Reproducible: the same commit, Go release and VERSION give the same bytes (entries sorted, owner
# 0/0, every mtime the commit's time, gzip without name or time, zip without extra fields). DIST
# names another output folder; GOCACHE as usual (a fresh one proves the builds do not depend on it).
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "release.sh: $*" >&2; exit 1; }
[ $# -ge 1 ] || die "usage: scripts/release.sh VERSION [GOOS/GOARCH ...]"
version="$1"; shift
[[ "$version" =~ ^v?[0-9A-Za-z][0-9A-Za-z.+_-]*$ ]] || die "VERSION $version: letters, digits and . + _ - only"
targets=("$@")
[ ${#targets[@]} -gt 0 ] || read -r -a targets <<<"$(cat scripts/targets)"
dist="${DIST:-dist}"
command -v git >/dev/null || die "git is needed (the commit and its time)"
epoch="$(git log -1 --format=%ct)" # every file's mtime in the archives
[ -n "$(git status --porcelain --untracked-files=no)" ] && echo "release.sh: WARNING: the work tree has changes; the binaries say modified" >&2
licence=""
for f in LICENSE LICENSE.md LICENCE COPYING; do [ -f "$f" ] && licence="$f" && break; done
[ -n "$licence" ] || echo "release.sh: WARNING: no LICENSE file in the repository; the archives hold none" >&2

mkdir -p "$dist"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export TZ=UTC LC_ALL=C
archives=()
for t in "${targets[@]}"; do
  goos="${t%/*}" goarch="${t#*/}" ext=""
  [ "$goos" = windows ] && ext=".exe"
  name="git-xet-transfer_${version}_${goos}_${goarch}"
  stage="$work/$name"
  mkdir -p "$stage"
  echo "building $name"
  for cmd in git-xet-transfer git-xet-transfer-agent xet-server; do
    GOOS="$goos" GOARCH="$goarch" CGO_ENABLED=0 go build -trimpath -buildvcs=true \
      -ldflags "-s -w -X github.com/git-xet-transfer/git-xet-transfer/internal/buildinfo.stamped=$version" \
      -o "$stage/$cmd$ext" "./cmd/$cmd"
  done
  cp README.md "$stage/"
  git ls-files -z docs | xargs -0 -I{} install -D -m 644 {} "$stage/{}" # tracked files only, whatever the umask
  find "$stage/docs" -type d -exec chmod 755 {} +
  [ -z "$licence" ] || cp "$licence" "$stage/"
  chmod 755 "$stage"/*"$ext" "$stage"; chmod 644 "$stage"/*.md
  [ -z "$licence" ] || chmod 644 "$stage/$licence"
  find "$stage" -exec touch -h -d "@$epoch" {} +
  if [ "$goos" = windows ]; then
    out="$name.zip"
    (cd "$work" && find "$name" | sort | zip -q -X -D -@ "$work/$out")
  else
    out="$name.tar.gz"
    tar -C "$work" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" --format=gnu -cf - "$name" |
      gzip -n -9 >"$work/$out"
  fi
  mv -f "$work/$out" "$dist/$out"
  archives+=("$out")
done
(cd "$dist" && sha256sum "${archives[@]}" | sort -k2 >SHA256SUMS.tmp && mv -f SHA256SUMS.tmp SHA256SUMS)
echo "wrote $dist/SHA256SUMS:"
cat "$dist/SHA256SUMS"
