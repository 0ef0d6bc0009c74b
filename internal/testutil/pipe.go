package testutil

import (
	"os"
	"testing"
)

// Pipe returns the two ends of a new pipe (in the runtime's poller, so read deadlines apply),
// closed when the test ends.
func Pipe(t testing.TB) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}
