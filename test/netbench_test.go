package test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// test/netbench.sh at a smoke setting (4 MiB, every row on a fast 400 Mbit/s, 2 ms link) runs to its
// end and prints every row of issue 35's Targets table with both sides' figures; the bytes the
// rows moved went through the link emulators (counted by the proxies behind them). Whether the
// emulator shapes is internal/netem's tests; the figures here are not asserted, only that they are
// there.
func TestNetbenchSmoke(t *testing.T) {
	for _, tool := range []string{"lfs-test-server", "python3", "curl", "/usr/bin/time"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("test/netbench.sh needs %s (required under CI=true; .ci/run installs lfs-test-server)", tool)
			}
			t.Skipf("test/netbench.sh needs %s", tool)
		}
	}
	cmd := exec.Command("bash", filepath.Join(repoRoot(t), "test", "netbench.sh"))
	cmd.Env = append(os.Environ(), "NETBENCH_MIB=4", "NETBENCH_LINK=400/2", "NETBENCH_PROBE_MIB=16", "TMPDIR="+t.TempDir())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("test/netbench.sh: %v\n%s", err, out.String())
	}
	text := out.String()
	_, summary, ok := strings.Cut(text, "\nsummary (")
	if !ok {
		t.Fatalf("no summary in netbench's output:\n%s", text)
	}
	// Each row: its label, its link, the agent's and plain git-lfs's figures ("S s, N MB").
	fig := `[0-9.]+ s, ([0-9.]+) MB`
	for _, r := range []struct {
		label, link string
		minMB       float64 // the least plain git-lfs must have moved through the link
	}{
		{"clone + fetch --all, 4×1 MiB versions", "home", 4 * 1.04},
		{"git lfs pull after a 1 % edit of 4 MiB", "home", 4.1},
		{"first push of 4 MiB of random data", "home", 4.1},
		{"first push of 4 MiB of random data", "far", 4.1},
		{"one download of 4 MiB (% of the link)", "far", 4.1},
		{"Hub emulator: clone", "home", 4 * 1.04},
		{"Hub emulator: pull", "home", 4.1},
		{"clone of 4 MiB", "thin", 4.1},
		{"clone of 48 unrelated files of 1 MiB", "home", 48 * 1.04},
		{"push of 50 files of 1–10 KB", "home", 50 * 1000e-6},
		{"clone of 50 files of 1–10 KB", "far", 50 * 1000e-6},
	} {
		re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(r.label) + `.*?\s` + r.link + `\s+` + fig + `.*?\s` + fig)
		m := re.FindStringSubmatch(summary)
		if m == nil {
			t.Errorf("no %s row %q with both sides' figures in the summary:\n%s", r.link, r.label, summary)
			continue
		}
		if plain, _ := strconv.ParseFloat(m[2], 64); plain < r.minMB {
			t.Errorf("row %q: plain git-lfs moved %s MB through the link, want at least %.1f", r.label, m[2], r.minMB)
		}
	}
	labels := []string{"link emulator alone", "longest spell without progress", "longest spell without a byte over the link",
		"link emulators' CPU while shaping", "peak RSS of an agent process"}
	if _, err := exec.LookPath("fusermount3"); err == nil || os.Getenv("CI") == "true" {
		labels = append(labels, "mount + ls -lR", "first 1 MiB at a random offset", "cat of 16 MiB through the mount",
			"CPU: the mount process vs git lfs fetch's", "v2 (0.5 % edit) whole after v1", "mount cache after both", "peak RSS of the mount process")
	}
	for _, label := range labels {
		if !regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(label) + `.*(PASS|MISS)$`).MatchString(summary) {
			t.Errorf("no row %q in the summary:\n%s", label, summary)
		}
	}
}
