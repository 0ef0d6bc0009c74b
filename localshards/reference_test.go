package localshards

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// xet/internal/vectors cannot be imported from outside xet/ (Go's internal rule), so this is the
// same lookup of the shared reference data: $XET_REFERENCE_DIR, else ../shared/testdata/reference
// beside the checkout.

func referenceDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("XET_REFERENCE_DIR"); d != "" {
		return d
	}
	_, file, _, _ := runtime.Caller(0) // <repo>/localshards/reference_test.go
	d := filepath.Join(filepath.Dir(file), "..", "..", "shared", "testdata", "reference")
	if _, err := os.Stat(d); err != nil {
		t.Fatalf("reference data not found at %s (set XET_REFERENCE_DIR): %v", d, err)
	}
	return d
}

func readReference(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(referenceDir(t), name))
	if err != nil {
		t.Fatalf("reading reference file: %v", err)
	}
	return b
}

type refChunk struct {
	Hash string
	Size uint64
}

// referenceChunks parses ev-population.csv.chunks: "<hash string> <length>" per line.
func referenceChunks(t testing.TB) []refChunk {
	t.Helper()
	var out []refChunk
	for i, line := range strings.Split(strings.TrimSpace(string(readReference(t, "ev-population.csv.chunks"))), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			t.Fatalf("ev-population.csv.chunks line %d: %q", i+1, line)
		}
		size, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			t.Fatalf("ev-population.csv.chunks line %d: %v", i+1, err)
		}
		out = append(out, refChunk{f[0], size})
	}
	return out
}
