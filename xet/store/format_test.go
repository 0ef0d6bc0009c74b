package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
)

// A new store records this release's format; a store recording a newer one is refused, naming
// both versions; a damaged format blob is refused, naming it.
func TestFormatVersion(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(dir, Options{})
	if err != nil || st.Format() != FormatVersion {
		t.Fatalf("new store: format %v, %v", st, err)
	}
	st.Close()
	st, err = Open(dir, Options{})
	if err != nil || st.Format() != FormatVersion {
		t.Fatalf("reopened: %v", err)
	}
	st.Close()
	newer := t.TempDir()
	if err := os.WriteFile(filepath.Join(newer, formatName), []byte("xet-store-format 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(newer, Options{})
	if !errors.Is(err, ErrNewerFormat) || !strings.Contains(err.Error(), "format version 7") || !strings.Contains(err.Error(), "versions 1 to 3") {
		t.Fatalf("newer format: %v", err)
	}
	if err := os.WriteFile(filepath.Join(newer, formatName), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(newer, Options{}); err == nil || !strings.Contains(err.Error(), "format blob") {
		t.Fatalf("damaged format blob: %v", err)
	}
}

// parseFormat never panics and accepts only "xet-store-format N" with N ≥ 1.
func FuzzParseFormat(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := parseFormat(b)
		if err == nil && (v < 1 || !strings.HasPrefix(strings.TrimSpace(string(b)), formatPrefix)) {
			t.Fatalf("%q: version %d accepted", b, v)
		}
	})
}

type recordingObserver struct {
	mu       sync.Mutex
	ops      map[string]int
	files    int
	deduped  uint64
	gcRuns   int
	gcBytes  int64
	failures int
}

func (o *recordingObserver) BackendOp(op string, _ time.Duration, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ops[op]++
	if err != nil && !errors.Is(err, ErrNotFound) {
		o.failures++
	}
}

func (o *recordingObserver) Registered(files int, deduped uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.files += files
	o.deduped += deduped
}

func (o *recordingObserver) Collected(b int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.gcRuns++
	o.gcBytes += b
}

// The Observer hears the backend calls, the files a shard registers and the bytes it names in
// xorbs stored before it, and each gc run.
func TestObserver(t *testing.T) {
	obs := &recordingObserver{ops: map[string]int{}}
	st, err := Open(t.TempDir(), Options{Observe: obs})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	f := testutil.NewOneXorbFile([][]byte{testutil.RandomBytes(3000, 1), testutil.RandomBytes(2000, 2)})
	if _, err := st.PutXorb(ctx, f.Xorb, strings.NewReader(string(f.Body))); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutShard(ctx, "org/a", f.Shard); err != nil {
		t.Fatal(err)
	}
	if obs.files != 1 || obs.deduped != 0 {
		t.Fatalf("first registration: %d files, %d deduplicated", obs.files, obs.deduped)
	}
	sh, _, err := shard.ParseUpload(f.Shard)
	if err != nil {
		t.Fatal(err)
	}
	sh.Xorbs = nil // what a client sends whose chunks were all stored: the file's terms alone
	if _, err := st.PutShard(ctx, "org/b", sh.AppendUpload(nil)); err != nil {
		t.Fatal(err)
	}
	if obs.deduped != 5000 {
		t.Fatalf("a shard naming a stored xorb: %d bytes deduplicated, want 5000", obs.deduped)
	}
	if _, err := NewMaint(st).Collect(ctx, GCOptions{Grace: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if obs.gcRuns != 1 || obs.ops["create_batch"] == 0 || obs.ops["open"]+obs.ops["exists"] == 0 || obs.failures != 0 {
		t.Fatalf("observed %+v", obs)
	}
	u, err := st.RepoUsage(ctx, "org/b")
	if err != nil || u.Files != 1 || u.Stored != 5000 || u.Logical != 5000 {
		t.Fatalf("usage of org/b: %+v %v", u, err)
	}
}
