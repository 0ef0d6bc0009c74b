package upload

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/internal/logbuf"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

func testEntries(n int) []hash.Entry {
	out := make([]hash.Entry, n)
	for i := range out {
		out[i] = hash.Entry{Hash: hash.Hash{byte(i), byte(i >> 8), 7}, Size: uint64(8<<10 + i)}
	}
	return out
}

// An EntryLog reads back what was added from any chunk on, across what went to its temp file and
// what is still buffered; with no temp file it keeps everything in memory and says so; reads past
// its end or after Close fail with an error.
func TestEntryLogReadsBackAcrossItsTempFile(t *testing.T) {
	old := entryFlushBytes
	entryFlushBytes = 10 * entryRecord
	t.Cleanup(func() { entryFlushBytes = old })
	want := testEntries(57)
	for _, missing := range []bool{false, true} {
		dir := t.TempDir()
		if missing {
			dir = filepath.Join(dir, "missing")
		}
		var logs logbuf.Buffer
		l := newEntryLog(dir, zerolog.New(&logs))
		for _, e := range want {
			l.add(e)
		}
		if (l.f == nil) != missing || strings.Contains(logs.String(), "keeping it in memory") != missing {
			t.Fatalf("missing dir %v: temp file %v, log %q", missing, l.f != nil, logs.String())
		}
		if l.Len() != len(want) {
			t.Fatalf("Len %d, want %d", l.Len(), len(want))
		}
		for _, r := range [][2]int{{0, 57}, {3, 20}, {49, 8}, {50, 7}, {56, 1}, {9, 2}, {57, 0}} {
			got := make([]hash.Entry, r[1])
			if err := l.Read(got, r[0]); err != nil {
				t.Fatalf("missing dir %v: read %v: %v", missing, r, err)
			}
			for k := range got {
				if got[k] != want[r[0]+k] {
					t.Fatalf("missing dir %v: read %v: chunk %d is %v, want %v", missing, r, r[0]+k, got[k], want[r[0]+k])
				}
			}
		}
		if err := l.Read(make([]hash.Entry, 2), 56); err == nil {
			t.Fatal("a read past the end succeeded")
		}
		l.Close()
		if err := l.Read(make([]hash.Entry, 1), 0); err == nil {
			t.Fatal("a read after Close succeeded")
		}
	}
}
