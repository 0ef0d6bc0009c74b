package chunkindex

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/span"
)

// putObject writes a local object of size bytes, modified at t.
func putObject(t *testing.T, x *Index, oid string, size int64, at time.Time) {
	t.Helper()
	p := x.ObjectPath(oid)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, at, at); err != nil {
		t.Fatal(err)
	}
}

// A lost index is rebuilt once from the objects here: newest first within the bounds, skipping
// small objects, objects already mapped and objects the indexer fails on; later calls do nothing.
func TestRebuildOnce(t *testing.T) {
	root := t.TempDir()
	x := Open(filepath.Join(root, "chunks"), filepath.Join(root, "objects"))
	now := time.Now()
	const mb = 1 << 20
	putObject(t, x, oidN(1), 2*mb, now.Add(-4*time.Hour)) // oldest: past the byte bound
	putObject(t, x, oidN(2), 2*mb, now.Add(-3*time.Hour))
	putObject(t, x, oidN(3), 2*mb, now.Add(-2*time.Hour)) // the indexer fails on it
	putObject(t, x, oidN(4), 2*mb, now.Add(-1*time.Hour)) // already mapped
	putObject(t, x, oidN(5), mb/2, now)                   // too small to map
	if err := x.Record(oidN(4), 2*mb, hash.Hash{4}, testSpans(2*mb, hash.Hash{44})); err != nil {
		t.Fatal(err)
	}
	var asked []string
	index := func(o Object) (hash.Hash, []span.Span, error) {
		asked = append(asked, o.Oid)
		if o.Path != x.ObjectPath(o.Oid) || o.Size != 2*mb {
			t.Errorf("object %+v", o)
		}
		if o.Oid == oidN(3) {
			return hash.Hash{}, nil, errors.New("not on the CAS")
		}
		return hash.Hash{9}, testSpans(o.Size, hash.Hash{99}), nil
	}
	n, err := x.Rebuild(4*mb+1, 10, index)
	if err != nil || n != 1 {
		t.Fatalf("Rebuild = %d, %v; want 1 object recorded", n, err)
	}
	if len(asked) != 2 || asked[0] != oidN(3) || asked[1] != oidN(2) {
		t.Fatalf("asked for %v, want objects 3 then 2 (newest unmapped first, 4 MiB)", asked)
	}
	if got := x.Spans([]hash.Hash{{99}}); len(got) != 1 || got[0].Path != x.ObjectPath(oidN(2)) {
		t.Fatalf("spans after the rebuild: %+v", got)
	}
	asked = nil
	if n, err := x.Rebuild(1<<40, 100, index); n != 0 || err != nil || len(asked) != 0 {
		t.Fatalf("second Rebuild = %d, %v, asked %v: want nothing done", n, err, asked)
	}
}

// A rebuild stopped half-way (Ctrl-C or SIGTERM end the agent's context, and the indexer fails
// with its error) is not marked done: the next process rebuilds the objects it did not reach. It
// failed with the index marked rebuilt after the first object, so the objects after it were never
// indexed and their next versions downloaded whole.
func TestRebuildStoppedIsNotMarked(t *testing.T) {
	root := t.TempDir()
	x := Open(filepath.Join(root, "chunks"), filepath.Join(root, "objects"))
	now := time.Now()
	const mb = 1 << 20
	putObject(t, x, oidN(1), 2*mb, now.Add(-2*time.Hour))
	putObject(t, x, oidN(2), 2*mb, now.Add(-1*time.Hour))
	ctx, cancel := context.WithCancel(context.Background())
	var asked []string
	index := func(o Object) (hash.Hash, []span.Span, error) {
		asked = append(asked, o.Oid)
		if err := ctx.Err(); err != nil {
			return hash.Hash{}, nil, err
		}
		cancel() // the user presses Ctrl-C while the first object is indexed
		return hash.Hash{9}, testSpans(o.Size, hash.Hash{byte(len(asked))}), nil
	}
	if _, err := x.Rebuild(1<<30, 10, index); !errors.Is(err, context.Canceled) {
		t.Fatalf("Rebuild stopped by its context: %v, want context.Canceled", err)
	}
	if len(asked) != 2 {
		t.Fatalf("asked for %v, want object 2, then 1 (which found the context ended)", asked)
	}
	asked = nil
	ctx = context.Background()
	if n, err := x.Rebuild(1<<30, 10, index); err != nil || n != 1 || len(asked) != 1 || asked[0] != oidN(1) {
		t.Fatalf("Rebuild after the stopped one = %d, %v, asked %v: want object 1 indexed", n, err, asked)
	}
}

// Two processes do not rebuild at once: the second one is told the index is busy.
func TestRebuildBusy(t *testing.T) {
	if !locks {
		t.Skip("no file locks on this platform")
	}
	root := t.TempDir()
	x := Open(filepath.Join(root, "chunks"), filepath.Join(root, "objects"))
	if err := os.MkdirAll(filepath.Join(root, "chunks"), 0o755); err != nil {
		t.Fatal(err)
	}
	lf, err := os.OpenFile(filepath.Join(root, "chunks", "rebuild.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if err := lockFile(lf); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Rebuild(1<<30, 10, nil); !errors.Is(err, ErrBusy) {
		t.Fatalf("Rebuild while another holds the lock: %v, want ErrBusy", err)
	}
}
