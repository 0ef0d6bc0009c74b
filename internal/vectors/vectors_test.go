package vectors

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Without reference data a test is skipped with a message saying where the data was looked for;
// under CI=true it fails. Run as a child process, so that the skip or failure is observed from
// outside.
func TestMissingDataSkipsOrFailsUnderCI(t *testing.T) {
	if os.Getenv("VECTORS_CHILD") == "1" {
		Dir(t)
		return
	}
	for _, ci := range []string{"", "true"} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestMissingDataSkipsOrFailsUnderCI$", "-test.v")
		cmd.Env = append(os.Environ(), "VECTORS_CHILD=1", "XET_REFERENCE_DIR="+t.TempDir(), "CI="+ci)
		out, err := cmd.CombinedOutput()
		switch {
		case ci == "" && (err != nil || !strings.Contains(string(out), "--- SKIP") || !strings.Contains(string(out), "reference data not found")):
			t.Errorf("without CI: err %v, want a skip naming the missing data:\n%s", err, out)
		case ci == "true" && (err == nil || !strings.Contains(string(out), "--- FAIL") || !strings.Contains(string(out), "CI=true")):
			t.Errorf("under CI=true: err %v, want a failure:\n%s", err, out)
		}
	}
}

// With the data present, Dir finds it.
func TestDirFindsTheData(t *testing.T) {
	if _, err := os.Stat(Dir(t)); err != nil {
		t.Fatal(err)
	}
}
