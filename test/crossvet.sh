#!/usr/bin/env bash
# go vet (which type-checks every package with its tests) for each release target, two targets at a
# time, sharing the build cache (built as scripts/release.sh builds: -trimpath, CGO_ENABLED=0, so the
# release check after it compiles only the commands). Any finding fails. Usage: test/crossvet.sh [GOOS/GOARCH ...]
set -euo pipefail
cd "$(dirname "$0")/.."

targets=("$@")
[ ${#targets[@]} -gt 0 ] || read -r -a targets <<<"$(cat scripts/targets)"

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
vet() { # vet GOOS/GOARCH
  local t="$1" log="$out/${1//\//_}"
  if GOOS="${t%/*}" GOARCH="${t#*/}" CGO_ENABLED=0 go vet -trimpath ./... >"$log" 2>&1; then
    echo "ok    $t"
  else
    echo "FAIL  $t"; sed 's/^/      /' "$log"; return 1
  fi
}
failed=0
for ((i = 0; i < ${#targets[@]}; i += 2)); do
  pids=()
  for t in "${targets[@]:i:2}"; do vet "$t" & pids+=($!); done
  for p in "${pids[@]}"; do wait "$p" || failed=1; done
done
exit $failed
