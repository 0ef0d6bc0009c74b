#!/usr/bin/env bash
# Checks the import arrows of docs/ARCHITECTURE.md (non-test code): exits 1 naming every package that
# depends on one it must not. Run from anywhere; .ci/run runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
mod=$(go list -m)
all=$(go list ./...) # fails the script when the tree does not load
fail=0

# deps PKG: the project's packages PKG depends on, directly or not (test files excluded).
deps() {
  local d
  d=$(go list -deps "$mod/$1") || { echo "go list -deps $1 failed" >&2; exit 2; }
  echo "$d" | grep "^$mod/" | sed "s|^$mod/||" | grep -vx "$1" || true
}

# imports PKG: the project's packages PKG imports itself (not through another; test files excluded).
imports() {
  local d
  d=$(go list -f '{{join .Imports "\n"}}' "$mod/$1") || { echo "go list $1 failed" >&2; exit 2; }
  echo "$d" | grep "^$mod/" | sed "s|^$mod/||" || true
}

# only_imports PKG ALLOWED WHY: PKG itself may import project packages matching ALLOWED only (what
# it reaches through them is their business).
only_imports() {
  local bad
  bad=$(imports "$1" | grep -vE "^($2)$" || true)
  if [ -n "$bad" ]; then
    echo "import rule broken: $1 imports $(echo $bad | tr ' ' ',') ($3)"
    fail=1
  fi
}

# forbid PKG PATTERN WHY: PKG must not depend on any package matching the extended regex PATTERN.
forbid() {
  local bad
  bad=$(deps "$1" | grep -E "^($2)$" || true)
  if [ -n "$bad" ]; then
    echo "import rule broken: $1 depends on $(echo $bad | tr ' ' ',') ($3)"
    fail=1
  fi
}

# only PKG ALLOWED WHY: PKG may depend on project packages matching ALLOWED only.
only() {
  local bad
  bad=$(deps "$1" | grep -vE "^($2)$" || true)
  if [ -n "$bad" ]; then
    echo "import rule broken: $1 depends on $(echo $bad | tr ' ' ',') ($3)"
    fail=1
  fi
}

for p in $(echo "$all" | grep "^$mod/xet/" | sed "s|^$mod/||"); do
  forbid "$p" "agent(/.*)?|protocol|cmd/.*|localshards(/.*)?|test(/.*)?" "nothing in xet/ reaches the agent, the protocol, the CLI or the client's caches"
done
for p in xet/hash; do only "$p" "" "the hash package stands alone"; done
only xet/concurrency "" "the policy of requests in flight is told what happened; it knows no client"
for p in xet/chunk xet/xorb xet/shard xet/casapi xet/lfsbatch xet/span; do
  only "$p" "xet/hash" "a format package imports only xet/hash"
done
forbid xet/cas "xet/store(/.*)?|xet/embedded|xet/server|xet/upload|xet/download" "what clients ask of a CAS knows no implementation but HTTP"
forbid xet/store "xet/cas|xet/embedded|xet/upload|xet/download|xet/server" "the store sits under the server and the embedded CAS"
forbid xet/server/webui "xet/server|xet/cas|xet/embedded|xet/upload|xet/download" "the web view renders what the store reads; who may see a page is the server's (ui.go)"
only xet/store/blob "" "the blob storage interface knows no store, no backend"
for p in xet/store/blob/fs xet/store/blob/s3; do
  only "$p" "xet/store/blob|xet/hash|xet/xorb|xet/shard|xet/chunk|xet/casapi|internal/fsretry|internal/regfile" "a backend keeps blobs: it imports the blob interface, format packages, fsretry and regfile, never the store logic"
done
forbid xet/store/blob/blobtest "xet/store|xet/store/blob/(fs|s3)" "the backends' conformance suite tests any backend through the interface, not the store"
for p in xet/upload xet/download; do
  forbid "$p" "xet/store(/.*)?|xet/embedded|xet/server" "transfers reach a CAS only through xet/cas"
done
only agent/share "internal/rawio" "sharing relays requests; what an upload is stays in the agent"
forbid localshards "xet/cas|xet/store(/.*)?|xet/embedded|xet/upload|xet/download|xet/server|agent(/.*)?" "the shard cache holds shards, nothing else"
forbid localshards/chunkindex "xet/cas|xet/store(/.*)?|xet/embedded|xet/upload|xet/download|xet/server|localshards|agent(/.*)?|protocol" "the chunk index holds maps of local files (xet/span's Span and Local), nothing else"
forbid cmd/xet-server "localshards(/.*)?|agent(/.*)?|protocol" "the server links no client-side code"
forbid protocol "agent(/.*)?|xet/.*|localshards(/.*)?" "the protocol package only encodes and decodes messages"
forbid agent "cmd/.*|xet/server" "the agent is wired by the CLI and talks to a CAS, never to the server's code"
only internal/fsretry "" "renames and removals that wait out another process's hold stand alone"
only internal/regfile "" "opening only regular files stands alone"
only internal/buildinfo "" "what build this is comes from the Go build information alone"
only internal/lfspointer "internal/lfsobject" "reading a pointer file needs only what an oid looks like"
for p in agent/mount agent/mount/xetfile; do
  forbid "$p" "agent|agent/(client|leader|share|hub|credentials|migrate|xetlog)|protocol|cmd/.*|localshards|localshards/chunkindex|xet/store(/.*)?|xet/embedded|xet/server|xet/upload" "the mount reads through a CAS client and the Local chunks it is given; which endpoint, credential and index is the command's wiring of agent/client"
done
only localshards/chunkcache "xet/hash|internal/regfile" "the mount's chunk cache keeps bytes by hash, nothing else"
only internal/gittree "internal/lfspointer|internal/lfsobject" "a revision's tree is git's objects and pointers"
only internal/gitnet "" "how a request reaches a URL is git-lfs's lfshttp over a config the caller gives; it knows no project package"
only internal/netem "" "the link emulator is a TCP forwarder, it knows nothing of what it carries"
only internal/lazy "" "the one find-once primitive stands alone"
only internal/gitrepo "internal/lazy|internal/redact" "the repository's config and LFS endpoint stand alone (git-lfs's config, go-git, the find-once primitive; URLs shown through internal/redact)"
only internal/redact "" "how a URL is shown stands alone"
only internal/summary "" "the summary line (figures, wording, the terminal) stands alone"
only agent/credentials "internal/gitrepo|internal/lazy|internal/redact" "credential lookup stands on the repository's config (and git-lfs's helpers) only"
only agent/hub "agent/credentials|internal/gitrepo|internal/lazy|internal/redact|xet/casapi|xet/lfsbatch|xet/hash|xet/retry" "the Hub client knows its routes, the batch and token shapes and the credential chain, no transfer code"
only agent "agent/share|internal/lfsobject|internal/rawio|internal/redact|protocol|xet/lfsbatch|xet/hash" "the agent package is the loop: the protocol, hand-offs, and the shape of a batch action; what a transfer is lives in agent/client"
forbid agent/client "agent/leader|agent/migrate|cmd/.*|xet/server(/.*)?" "the Xet client is given requests by the loop and talks to a CAS, never to the server's code"
only_imports agent/leader "agent|agent/client|agent/share|xet/chunk|xet/hash|xet/span|xet/upload" "the leader decorates the client: what a transfer does, and where it goes, is the client's"
forbid agent "agent/migrate" "migration is built on the agent, not part of it"
forbid agent/xetlog "cmd/.*|xet/server(/.*)?" "log is a client: wired by the CLI, it reaches a remote through agent/client"
forbid agent/migrate "cmd/.*|xet/server(/.*)?|xet/store/blob/s3" "migrate is a client: wired by the CLI, never the server (it reaches the filesystem store through xet/embedded)"
only internal/handover "" "the start-up agent's hand-over value stands alone"
only internal/lfsobject "" "what an LFS object is (its oid, its verified bytes) stands alone"
# The start-up agent git-lfs runs answers idle processes at about the cost of a git command: it links
# the protocol's decoder, the hand-over and the standard library, nothing else (no module outside
# the standard library either).
only cmd/git-xet-transfer-agent "protocol|internal/handover|internal/lfsobject" "the start-up agent links only what answers init and hands over"
outside=$(go list -deps "$mod/cmd/git-xet-transfer-agent" | grep -v "^$mod/" | grep -v "^vendor/" | grep '\.' || true)
if [ -n "$outside" ]; then
  echo "import rule broken: cmd/git-xet-transfer-agent links modules outside the standard library: $(echo $outside)"
  fail=1
fi

# git-lfs's lfsapi and lfs run git commands in their package init: an agent process linking them pays
# for three git runs before it reads a line (see "Start-up" in docs/internals.md).
for p in cmd/git-xet-transfer cmd/xet-server; do
  if go list -deps "$mod/$p" | grep -qxE 'github.com/git-lfs/git-lfs/v3/(lfsapi|lfs)'; then
    echo "import rule broken: $p links git-lfs's lfsapi or lfs, whose init runs git in every process"
    fail=1
  fi
done

if [ $fail = 0 ]; then echo "import rules: ok ($(echo "$all" | wc -l) packages)"; fi
exit $fail
