#!/usr/bin/env bash
# Builds git-lfs's reference LFS server, github.com/git-lfs/lfs-test-server v0.4.0, into
# $(go env GOPATH)/bin (the migrate tests push a plain-LFS history to it). `go install …@v0.4.0` is
# refused (the module has no version list), so: download the module, build a copy. Its go.rice
# v1.0.0 panics at start-up on binaries of current Go (it probes the executable for an appended zip
# through a debug/elf section with no reader); go.rice v1.0.3 with go.zipexe v1.0.2 fixes that.
set -euo pipefail
gobin="$(go env GOPATH)/bin"
if [ -x "$gobin/lfs-test-server" ]; then exit 0; fi
dir=$(go mod download -json github.com/git-lfs/lfs-test-server@v0.4.0 | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -n "$dir" ] || { echo "could not download github.com/git-lfs/lfs-test-server@v0.4.0"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$dir" "$tmp/src"
chmod -R u+w "$tmp/src"
cd "$tmp/src"
[ -f go.mod ] || go mod init github.com/git-lfs/lfs-test-server
go get github.com/GeertJohan/go.rice@v1.0.3 github.com/daaku/go.zipexe@v1.0.2 >/dev/null 2>&1
go mod tidy >/dev/null 2>&1
mkdir -p "$gobin"
go build -o "$gobin/lfs-test-server" .
echo "built $gobin/lfs-test-server"
