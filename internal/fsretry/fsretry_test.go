package fsretry

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// errHeld stands for Windows's ERROR_SHARING_VIOLATION in these tests.
var errHeld = &os.LinkError{Op: "rename", Old: "a", New: "b", Err: syscall.Errno(32)}

func isHeld(err error) bool { return errors.Is(err, errHeld) }

// TestRetryUntilReleased: an operation refused while the file is held succeeds once it is
// released, after backoff that doubles.
func TestRetryUntilReleased(t *testing.T) {
	calls := 0
	var waits []time.Duration
	err := retry(func() error {
		if calls++; calls < 4 {
			return errHeld
		}
		return nil
	}, isHeld, func(d time.Duration) { waits = append(waits, d) })
	if err != nil || calls != 4 {
		t.Fatalf("err %v after %d calls, want success on the 4th", err, calls)
	}
	want := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond}
	if len(waits) != len(want) {
		t.Fatalf("waits %v, want %v", waits, want)
	}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("waits %v, want %v", waits, want)
		}
	}
}

// TestRetryGivesUp: a file held for good fails with the operation's own error once the waits
// would pass Budget.
func TestRetryGivesUp(t *testing.T) {
	calls := 0
	var slept time.Duration
	err := retry(func() error { calls++; return errHeld }, isHeld, func(d time.Duration) { slept += d })
	if !errors.Is(err, errHeld) {
		t.Fatalf("err %v, want the held error", err)
	}
	if slept > Budget || slept < Budget/2 {
		t.Fatalf("waited %v in all, want up to Budget %v and most of it", slept, Budget)
	}
	if calls < 10 {
		t.Fatalf("%d attempts in %v", calls, slept)
	}
}

// TestRetryOnlyHeld: other errors (a missing file, a full disk) are returned at once.
func TestRetryOnlyHeld(t *testing.T) {
	calls := 0
	err := retry(func() error { calls++; return os.ErrNotExist }, isHeld, func(time.Duration) { t.Fatal("slept") })
	if !errors.Is(err, os.ErrNotExist) || calls != 1 {
		t.Fatalf("err %v after %d calls", err, calls)
	}
}

// TestRenameRemove: the real operations, over a file held open where that is allowed (unix; on
// Windows an open file, this process's included, blocks them until closed).
func TestRenameRemove(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if runtime.GOOS != "windows" {
		f, err := os.Open(b)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
	}
	if err := Rename(a, b); err != nil {
		t.Fatalf("rename over an open file: %v", err)
	}
	if got, _ := os.ReadFile(b); string(got) != a {
		t.Fatalf("b holds %q after the rename", got)
	}
	if err := Remove(b); err != nil {
		t.Fatalf("remove: %v", err)
	}
	if err := Remove(b); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("second remove: %v, want not exist", err)
	}
}
