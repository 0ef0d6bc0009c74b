#!/usr/bin/env bash
# go vet (which type-checks every package with its tests) for each release target, two targets at a
# time, sharing the build cache (built as scripts/release.sh builds: -trimpath, CGO_ENABLED=0, so the
# release check after it compiles only the commands). Any finding fails.
# Usage: test/crossvet.sh [--distinct [--seen GOOS/GOARCH]] [GOOS/GOARCH ...]
# --distinct vets, of the targets in their order, only those that bring a GOOS or a GOARCH not vetted
# yet (--seen: already vetted elsewhere): while no Go file of the project is built for one
# architecture only, the code vetted for darwin/arm64 and windows/amd64 is the code of darwin/amd64
# and windows/arm64, and vetting those twins costs CI a third of this step for nothing. A file
# named or constrained for one architecture (one built only under a GOEXPERIMENT aside) turns
# --distinct off.
set -euo pipefail
cd "$(dirname "$0")/.."

distinct=0 seen=()
while [ $# -gt 0 ]; do
  case "$1" in
    --distinct) distinct=1; shift ;;
    --seen) seen+=("$2"); shift 2 ;;
    *) break ;;
  esac
done
targets=("$@")
[ ${#targets[@]} -gt 0 ] || read -r -a targets <<<"$(cat scripts/targets)"

# archfiles lists the Go files built for one architecture only, the GOEXPERIMENT ones left out.
archfiles() {
  { git ls-files '*.go' | grep -E '_(amd64|arm64|386|arm|riscv64|ppc64le|s390x|loong64|wasm)(_test)?\.go$' || true
    git grep -l -E '^//go:build .*\b(amd64|arm64|386|arm|riscv64|ppc64le|s390x|loong64|wasm)\b' -- '*.go' || true
  } | sort -u | while read -r f; do
    grep -q '^//go:build.*goexperiment\.' "$f" || echo "$f"
  done
}
if [ $distinct = 1 ]; then
  if files="$(archfiles)" && [ -n "$files" ]; then
    echo "crossvet: files built for one architecture only, so every target is vetted:" $files
  else
    kept=()
    for t in "${targets[@]}"; do
      os_new=1 arch_new=1
      for s in "${seen[@]}" "${kept[@]}"; do
        [ "${s%/*}" = "${t%/*}" ] && os_new=0
        [ "${s#*/}" = "${t#*/}" ] && arch_new=0
      done
      if [ $os_new = 1 ] || [ $arch_new = 1 ]; then kept+=("$t"); else echo "skip  $t (its code is vetted with the other targets)"; fi
    done
    targets=("${kept[@]}")
  fi
fi

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
