#!/usr/bin/env bash
# Checks the owners table of docs/ARCHITECTURE.md where text can show it: a shape or a name with one
# owner is not spelled again in another package. Looks at non-test Go code (comments ignored), prints
# each offending file:line under the rule it breaks, and exits 1 when any rule is broken. Run from
# anywhere; .ci/run runs it.
#
# A rule is a function named rule_*, run in name order: it calls `report WHY "$(offenders OWNER
# PATTERN)"`. To add one, append a function below.
set -euo pipefail
cd "$(dirname "$0")/.."

code=$(mktemp)
trap 'rm -f "$code"' EXIT

# The non-test Go files (tracked or new, not ignored), each line as "file:line:code" with its
# comments blanked: block comments, line comments, not "//" inside string or rune literals.
git ls-files -z --cached --others --exclude-standard -- '*.go' ':!:*_test.go' | sort -zu |
  xargs -0 -r awk '
  FNR == 1 { st = 0 } # 0: code, 1: in a block comment, 2: in a raw string
  {
    line = $0; n = length(line); out = ""; i = 1
    while (i <= n) {
      c = substr(line, i, 1); c2 = substr(line, i, 2)
      if (st == 1) { if (c2 == "*/") { st = 0; out = out "  "; i += 2 } else { out = out " "; i++ }; continue }
      if (st == 2) { out = out c; if (c == "`") st = 0; i++; continue }
      if (c2 == "//") break
      if (c2 == "/*") { st = 1; out = out "  "; i += 2; continue }
      if (c == "`") { st = 2; out = out c; i++; continue }
      if (c == "\"" || c == "'"'"'") { # an interpreted string or a rune, closed on this line
        q = c; out = out c; i++
        while (i <= n) {
          d = substr(line, i, 1); out = out d; i++
          if (d == "\\") { out = out substr(line, i, 1); i++ } else if (d == q) break
        }
        continue
      }
      out = out c; i++
    }
    print FILENAME ":" FNR ":" out
  }' >"$code"

# offenders OWNER PATTERN: the file:line of every code line outside directory OWNER (a path prefix)
# that matches the extended regex PATTERN, case-insensitively.
offenders() {
  grep -iE "^[^:]+:[0-9]+:.*($2)" "$code" | grep -v "^$1/" | cut -d: -f1,2 || true
}

fail=0
# report WHY OFFENDERS: WHY and the offenders (file:line, one a line), when there are any; the
# run then fails.
report() {
  if [ -n "$2" ]; then
    echo "owner rule broken: $1"
    echo "$2" | sed 's/^/  /'
    fail=1
  fi
}

# The LFS batch JSON has one definition: only xet/lfsbatch declares a field tagged "transfers".
rule_lfs_batch_shapes() {
  report 'the LFS batch shapes are defined in xet/lfsbatch only (a struct field tagged json:"transfers")' \
    "$(offenders xet/lfsbatch 'json:\\?"transfers(,|\\?")')"
}

# The X-Xet-* header names are spelled once: lfsbatch's constants (no literal "X-Xet-…" elsewhere).
rule_xet_header_names() {
  report 'X-Xet-* header names are spelled in xet/lfsbatch only (use its Header* constants)' \
    "$(offenders xet/lfsbatch 'x-xet-')"
}

# How a request reaches a URL (proxy, TLS, client certificates, extra headers) is internal/gitnet's:
# no other package picks a proxy or builds a TLS client configuration (xet/cas keeps a plain default
# transport for callers that give no client; servers configure their own listeners).
rule_http_transport() {
  report 'proxies and client TLS settings are chosen by internal/gitnet only (give its client)' \
    "$(offenders internal/gitnet 'ProxyFromEnvironment|ProxyURL\(|httpproxy\.|InsecureSkipVerify|RootCAs')"
}

rules=$(declare -F | awk '$3 ~ /^rule_/ {print $3}')
for r in $rules; do "$r"; done
if [ $fail = 0 ]; then echo "owner rules: ok ($(echo $rules | wc -w) rules, $(cut -d: -f1 "$code" | sort -u | wc -l) files)"; fi
exit $fail
