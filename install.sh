#!/usr/bin/env bash
# Builds git-xet-transfer, installs it on the PATH (no root needed), installs git-lfs when it is
# missing, and runs `git-xet-transfer install` (global git config). Safe to run again.
#
#   ./install.sh            # ~/.local/bin, or /usr/local/bin when writable
#   PREFIX=/opt/bin ./install.sh
set -euo pipefail
cd "$(dirname "$0")"

die() { echo "install.sh: $*" >&2; exit 1; }
command -v go >/dev/null || die "Go is not installed (https://go.dev/dl/); it is needed to build git-xet-transfer"
command -v git >/dev/null || die "git is not installed (e.g. apt-get install git)"

# Where to put the binary.
if [ -n "${PREFIX:-}" ]; then
  bindir="$PREFIX"
elif [ -w /usr/local/bin ]; then
  bindir=/usr/local/bin
else
  bindir="$HOME/.local/bin"
fi
mkdir -p "$bindir"

echo "building git-xet-transfer"
version="$(git describe --tags --always --dirty 2>/dev/null || echo dev)"
tmp="$(mktemp "$bindir/.git-xet-transfer.XXXXXX")"
trap 'rm -f "$tmp"' EXIT
go build -trimpath -buildvcs=true -ldflags "-X github.com/git-xet-transfer/git-xet-transfer/internal/buildinfo.stamped=$version" -o "$tmp" ./cmd/git-xet-transfer
chmod 755 "$tmp"
mv -f "$tmp" "$bindir/git-xet-transfer"   # atomic: a running agent keeps its old file
trap - EXIT
echo "installed $bindir/git-xet-transfer ($version)"

case ":$PATH:" in
  *":$bindir:"*) ;;
  *) echo "WARNING: $bindir is not on your PATH; add it (e.g. echo 'export PATH=\"$bindir:\$PATH\"' >> ~/.bashrc)." \
          "git-lfs runs the agent by its absolute path, so transfers work anyway; \`git xet-transfer\` needs the PATH." ;;
esac
export PATH="$bindir:$PATH"

# git-lfs
if ! command -v git-lfs >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing git-lfs (apt-get)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq git-lfs
  else
    echo "installing git-lfs 3.8.1 (go install) into $bindir"
    GOBIN="$bindir" go install github.com/git-lfs/git-lfs/v3@v3.8.1
  fi
fi
command -v git-lfs >/dev/null || die "git-lfs is still missing; install it (https://git-lfs.com) and run ./install.sh again"

# From a neutral directory: `git lfs install` inside a repository would also add hooks to it.
(cd / && "$bindir/git-xet-transfer" install)
