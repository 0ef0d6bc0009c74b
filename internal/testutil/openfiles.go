package testutil

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// OpenFilesUnder lists the files under dir this process holds open (read from /proc/self/fd; the
// test is skipped where there is none). dir is resolved first, as /proc names files by their real
// paths.
func OpenFilesUnder(t testing.TB, dir string) []string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/fd")
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var open []string
	for _, e := range ents {
		p, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && strings.HasPrefix(p, real+string(filepath.Separator)) {
			open = append(open, p)
		}
	}
	return open
}
