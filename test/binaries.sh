# Sourced by the benchmark scripts: xet_binaries DIR puts git-xet-transfer (and its start-up agent
# git-xet-transfer-agent, when the build has one), xet-server and countproxy
# in DIR, copied from $XET_BINDIR when it is set (test/abcompare.sh runs two builds that way), else
# built from this checkout.
xet_binaries() {
  if [ -n "${XET_BINDIR:-}" ]; then
    echo "binaries from $XET_BINDIR"
    cp "$XET_BINDIR/git-xet-transfer" "$XET_BINDIR/xet-server" "$XET_BINDIR/countproxy" "$1/"
    if [ -f "$XET_BINDIR/git-xet-transfer-agent" ]; then cp "$XET_BINDIR/git-xet-transfer-agent" "$1/"; fi
  else
    echo "building into $1"
    go build -o "$1/git-xet-transfer" ./cmd/git-xet-transfer
    go build -o "$1/git-xet-transfer-agent" ./cmd/git-xet-transfer-agent
    go build -o "$1/xet-server" ./cmd/xet-server
    go build -o "$1/countproxy" ./test/countproxy
  fi
}
