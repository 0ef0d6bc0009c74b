#!/usr/bin/env bash
# A/B comparison of two revisions on the three end-to-end scripts: test/bench.sh,
# test/small-files.sh and test/demo.sh. It builds git-xet-transfer, xet-server and countproxy of
# each revision from a `git archive` copy in a temp dir (the checkout it runs from is not touched),
# then runs the three scripts of this checkout with BEFORE's binaries and with AFTER's, AB_ROUNDS
# times (default 2), alternating: round 1 runs BEFORE then AFTER, round 2 AFTER then BEFORE, and so
# on, so that drift of the machine's load falls on both sides. Each side runs bench.sh, then
# small-files.sh, then demo.sh, so that a small-files.sh run never starts right after the previous
# one deleted its files (ext4's slow window: see test/small-files.sh). bench.sh and small-files.sh
# are given the binaries with XET_BINDIR; demo.sh runs in a fresh HOME where the side's agent was
# installed. At the end it prints, for each headline figure, the median of each side's runs, the
# AFTER/BEFORE ratio of the medians and every run's value. The byte and store figures and the CPU
# figures are the ones to compare at few rounds: the wall times of steps of a second or two vary by
# tens of percent between runs of the same binaries on a shared 2-core machine (more rounds, or the
# full sizes, narrow that). The scripts are this checkout's; the revisions give only the binaries.
#
# The scripts' own knobs pass through (BENCH_MB, SMALL_N, SMALL_RUNS, SMALL_PAUSE, SMALL_SETTLE, ...).
# AB_QUICK=1 sets the ones not set to BENCH_MB=256 SMALL_N=1000 SMALL_RUNS=1 SMALL_PAUSE=5
# SMALL_SETTLE=3: about 9 minutes with the builds for the default 2 rounds on 2 cores (the scripts'
# defaults: about an hour). After the builds it syncs and waits AB_SETTLE seconds (default 20), so
# that the first run starts on a settled disk. AB_KEEP=1 keeps the work dir (the binaries
# and every run's output). Needs what the three scripts need.
#
#   test/abcompare.sh main HEAD        AB_QUICK=1 AB_ROUNDS=4 test/abcompare.sh HEAD~3 HEAD
set -euo pipefail
[ $# = 2 ] || { echo "usage: test/abcompare.sh BEFORE_REV AFTER_REV" >&2; exit 2; }
cd "$(dirname "$0")/.."
root=$(pwd)
ROUNDS=${AB_ROUNDS:-2}
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "abcompare: AB_ROUNDS must be a positive number" >&2; exit 2; }
declare -A rev
rev[before]=$(git rev-parse --verify --quiet "$1^{commit}") || { echo "abcompare: $1 is not a commit" >&2; exit 2; }
rev[after]=$(git rev-parse --verify --quiet "$2^{commit}") || { echo "abcompare: $2 is not a commit" >&2; exit 2; }
if [ "${AB_QUICK:-0}" = 1 ]; then
  export BENCH_MB=${BENCH_MB:-256} SMALL_N=${SMALL_N:-1000} SMALL_RUNS=${SMALL_RUNS:-1} \
    SMALL_PAUSE=${SMALL_PAUSE:-5} SMALL_SETTLE=${SMALL_SETTLE:-3}
fi
unset GIT_DIR GIT_WORK_TREE GIT_XET_LOG GIT_TRACE XET_BINDIR

work=$(mktemp -d "${TMPDIR:-/tmp}/xet-ab.XXXXXX")
if [ "${AB_KEEP:-0}" = 1 ]; then trap 'echo "abcompare: kept $work" >&2' EXIT; else trap 'rm -rf "$work"' EXIT; fi
mkdir -p "$work/log"
: >"$work/results"
note() { printf '[%3d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*" >&2; }

build() { # build SIDE: the side's binaries into $work/bin-SIDE
  local src="$work/src-$1" pkgs=(./cmd/git-xet-transfer ./cmd/xet-server)
  mkdir -p "$src" "$work/bin-$1"
  git archive "${rev[$1]}" | tar -x -C "$src"
  [ -d "$src/test/countproxy" ] && pkgs+=(./test/countproxy)
  [ -d "$src/cmd/git-xet-transfer-agent" ] && pkgs+=(./cmd/git-xet-transfer-agent)
  note "building ${rev[$1]:0:10} ($1)"
  (cd "$src" && go build -trimpath -o "$work/bin-$1/" "${pkgs[@]}")
  rm -rf "$src"
}

# The parsers read a script's output and print "FIGURE<tab>VALUE" lines of its headline figures.
parse_bench() { # the summary's rows: wall of each step, bytes of the re-push, and xet/basic walls
  awk '
    /^summary/ { s = 1; next }
    s && $NF == "MB/s" && NF > 10 {
      l = $1; for (i = 2; i <= NF - 10; i++) l = l " " $i
      sub(/ [0-9]+ MiB$/, "", l); sub(/ after 1% edit$/, "", l); sub(/:/, "", l)
      w[l] = $(NF - 9); printf "bench %s wall (s)\t%s\n", l, $(NF - 9)
      if (l ~ /^xet re-push/) { printf "bench %s sent (MB)\t%s\n", l, $(NF - 7); printf "bench %s store grew (MB)\t%s\n", l, $(NF - 3) }
    }
    END {
      if (w["basic push"] > 0) printf "bench xet/basic push wall\t%.3f\n", w["xet push"] / w["basic push"]
      if (w["basic clone"] > 0) printf "bench xet/basic clone wall\t%.3f\n", w["xet clone"] / w["basic clone"]
      if (w["basic re-push"] > 0) printf "bench xet/basic re-push wall\t%.3f\n", w["xet re-push"] / w["basic re-push"]
    }' "$1"
}
parse_small() { # both tables (embedded store, then xet-server): the xet way's figures and the ratios
  awk '
    function nums(s,   n) { n = 0; while (match(s, /[0-9]+(\.[0-9]+)?/)) { v[++n] = substr(s, RSTART, RLENGTH); s = substr(s, RSTART + RLENGTH) } return n }
    function row(label, names,   k, n, i, nm) {
      if (index($0, label) != 1) return
      n = nums(substr($0, length(label) + 1)); k = split(names, nm, "|")
      for (i = 1; i <= k && i <= n; i++) if (nm[i] != "") printf "small %s %s\t%s\n", t, nm[i], v[i]
    }
    /^[0-9]+ files, / { t = (t == "") ? "embedded:" : "server:"; next }
    t != "" {
      row("push wall ", "xet push wall (s)|other push wall (s)|xet/other push wall")
      row("push CPU (git, git-lfs, agents) ", "xet push CPU (s)||xet/other push CPU")
      row("  agents'\'' CPU per object ", "agents'\'' CPU per object (ms)")
      row("clone wall ", "xet clone wall (s)|other clone wall (s)|xet/other clone wall")
      row("store on disk ", "xet store on disk (MB)")
      row("  per object (hash: 32 B) ", "xet client cache per object (B)")
    }' "$1"
}
parse_demo() {
  awk '
    /^push v1: / { printf "demo push v1 (s)\t%s\n", $3 }
    /^store after v1: / { printf "demo store after v1 (MB)\t%s\n", $4 }
    /^clone: / { printf "demo clone (s)\t%s\n", $2 }
    /^push v2: / { printf "demo push v2 (s)\t%s\n", $3 }
    /^store grew by / { printf "demo store grew for v2 (MB)\t%s\n", $4 }' "$1"
}

run() { # run SCRIPT SIDE ROUND: one run of test/SCRIPT with the side's binaries; figures to results
  local script=$1 side=$2 round=$3 log="$work/log/$1-$2-$3" t0=$SECONDS ok=1
  note "round $round/$ROUNDS: $script with ${side^^} (${rev[$side]:0:10})"
  case $script in
  demo.sh)
    local home="$work/home-$side-$round"
    mkdir -p "$home"
    (
      export HOME="$home" XDG_CACHE_HOME="$home/.cache" GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0
      cd "$home" && "$work/bin-$side/git-xet-transfer" install >/dev/null && "$root/test/demo.sh"
    ) >"$log" 2>&1 || ok=0
    rm -rf "$home"
    ;;
  *) XET_BINDIR="$work/bin-$side" "$root/test/$script" >"$log" 2>&1 || ok=0 ;;
  esac
  if [ $ok = 0 ]; then
    echo "abcompare: $script FAILED with ${side^^} (${rev[$side]}) in round $round; the end of its output:" >&2
    tail -n 30 "$log" >&2
    exit 1
  fi
  local parser=parse_${script%%[-.]*} n
  "$parser" "$log" | awk -F '\t' -v s="$side" -v r="$round" '{ print $1 "\t" s "\t" r "\t" $2 }' >"$work/figures"
  n=$(wc -l <"$work/figures")
  cat "$work/figures" >>"$work/results"
  note "  $((SECONDS - t0)) s, $n figures"
  [ "$n" -gt 0 ] || { echo "abcompare: no figures found in the output of $script; its end:" >&2; tail -n 30 "$log" >&2; exit 1; }
}

# table: for each figure in order of first appearance, each side's median, AFTER/BEFORE, the runs.
table() {
  awk -F '\t' '
    function median(s,   n, i, j, x, a) {
      n = split(s, a, " ")
      for (i = 2; i <= n; i++) { x = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
      if (n == 0) return ""
      return sprintf("%.4g", (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2)
    }
    !($1 in seen) { seen[$1] = 1; order[++nf] = $1 }
    { vals[$1, $2] = vals[$1, $2] (vals[$1, $2] == "" ? "" : " ") $4 }
    END {
      printf "%-48s %9s %9s %12s   %s\n", "", "BEFORE", "AFTER", "AFTER/BEFORE", "runs: BEFORE | AFTER"
      for (i = 1; i <= nf; i++) {
        f = order[i]; b = median(vals[f, "before"]); a = median(vals[f, "after"])
        r = (b != "" && a != "" && b + 0 > 0) ? sprintf("%.3f", a / b) : "-"
        printf "%-48s %9s %9s %12s   %s | %s\n", f, b, a, r, vals[f, "before"], vals[f, "after"]
      }
    }' "$work/results"
}

note "BEFORE ${rev[before]} ($1), AFTER ${rev[after]} ($2), $ROUNDS rounds; work in $work"
build before
build after
sync
sleep "${AB_SETTLE:-20}"
for round in $(seq "$ROUNDS"); do
  sides=(before after)
  [ $((round % 2)) = 0 ] && sides=(after before)
  for side in "${sides[@]}"; do
    for script in bench.sh small-files.sh demo.sh; do run "$script" "$side" "$round"; done
  done
done

echo
echo "A/B: BEFORE ${rev[before]:0:10} ($1), AFTER ${rev[after]:0:10} ($2); $ROUNDS rounds alternating, medians;" \
  "$(nproc) cores; BENCH_MB=${BENCH_MB:-1024} SMALL_N=${SMALL_N:-5000} SMALL_RUNS=${SMALL_RUNS:-3}" \
  "SMALL_PAUSE=${SMALL_PAUSE:-35} SMALL_SETTLE=${SMALL_SETTLE:-10}; $((SECONDS / 60)) min"
echo "(small: \"other\" is plain git-lfs for the embedded store, git-lfs basic for xet-server)"
table
