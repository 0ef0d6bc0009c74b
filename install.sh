#!/usr/bin/env bash
# Builds git-xet-transfer, installs it on the PATH (no root needed), installs git-lfs 3.8.1 when it
# is missing, and runs `git-xet-transfer install` (global git config). Safe to run again. Linux and
# macOS; on Windows use a release archive (README).
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

echo "building git-xet-transfer and its start-up agent git-xet-transfer-agent"
version="$(git describe --tags --always --dirty 2>/dev/null || echo dev)"
tmpdir="$(mktemp -d "$bindir/.git-xet-transfer.XXXXXX")"
trap 'rm -rf "$tmpdir"' EXIT
go build -trimpath -buildvcs=true -ldflags "-X github.com/git-xet-transfer/git-xet-transfer/internal/buildinfo.stamped=$version" \
  -o "$tmpdir/" ./cmd/git-xet-transfer ./cmd/git-xet-transfer-agent
# Each is renamed into place (atomic: a running agent keeps its old file); the full agent first, so
# that a start-up agent never finds an older one beside it than the one it was built with.
for b in git-xet-transfer git-xet-transfer-agent; do
  chmod 755 "$tmpdir/$b"
  mv -f "$tmpdir/$b" "$bindir/$b"
done
rm -rf "$tmpdir"
trap - EXIT
echo "installed $bindir/git-xet-transfer and $bindir/git-xet-transfer-agent ($version)"

case ":$PATH:" in
  *":$bindir:"*) ;;
  *) echo "WARNING: $bindir is not on your PATH; add it (e.g. echo 'export PATH=\"$bindir:\$PATH\"' >> ~/.bashrc)." \
          "git-lfs runs the agent by its absolute path, so transfers work anyway; \`git xet-transfer\` needs the PATH." ;;
esac
export PATH="$bindir:$PATH"

# git-lfs: the release the README and the tests rely on (3.8.1), built with go install on every
# platform (Linux, macOS), never a distribution's package (Debian 12 ships 3.3.0). One already on the
# PATH is kept; its version is printed.
lfs_version=v3.8.1
if ! command -v git-lfs >/dev/null; then
  echo "installing git-lfs $lfs_version (go install) into $bindir"
  GOBIN="$bindir" go install "github.com/git-lfs/git-lfs/v3@$lfs_version"
else
  have="$(git-lfs version 2>/dev/null | sed -n 's|^git-lfs/\([0-9.]*\).*|\1|p')"
  [ "v$have" = "$lfs_version" ] || echo "install.sh: keeping git-lfs ${have:-of unknown version} ($(command -v git-lfs)); git-xet-transfer is tested with git-lfs ${lfs_version#v}"
fi
command -v git-lfs >/dev/null || die "git-lfs is still missing; install it (https://git-lfs.com) and run ./install.sh again"

# From a neutral directory: `git lfs install` inside a repository would also add hooks to it.
(cd / && "$bindir/git-xet-transfer" install)
