package chunkindex

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/span"
)

func testSpans(size int64, xorbs ...hash.Hash) []span.Span {
	var out []span.Span
	per := size / int64(len(xorbs))
	for i, x := range xorbs {
		sp := span.Span{Pos: int64(i) * per, Xorb: x, Start: uint32(i)}
		for n := int64(0); n < per; n += 64 << 10 {
			sp.Chunks = append(sp.Chunks, hash.Entry{Hash: hash.Hash{byte(i), byte(n >> 16)}, Size: 64 << 10})
			sp.XorbEnd = uint64(n + 1)
		}
		out = append(out, sp)
	}
	return out
}

func oidN(n byte) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = "0123456789abcdef"[(int(n)+i)%16]
	}
	return string(b)
}

// A recorded object is found by its xorbs, with its spans and path, only while the object is
// there with its size; an entry whose map is gone is dropped.
func TestIndexRecordAndLookup(t *testing.T) {
	root := t.TempDir()
	x := Open(filepath.Join(root, "chunks"), filepath.Join(root, "objects"))
	xa, xb, xc := hash.Hash{1}, hash.Hash{2}, hash.Hash{3}
	const size = 2 << 20
	oid := oidN(1)
	in := testSpans(size, xa, xb)
	if err := x.Record(oid, size, hash.Hash{9}, in); err != nil {
		t.Fatal(err)
	}
	if got := x.Spans([]hash.Hash{xa}); len(got) != 0 {
		t.Fatalf("spans of a missing object: %d", len(got))
	}
	obj := x.ObjectPath(oid)
	os.MkdirAll(filepath.Dir(obj), 0o755)
	if err := os.WriteFile(obj, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	got := x.Spans([]hash.Hash{xb, xc})
	if len(got) != 2 || got[0].Path != obj || got[1].Xorb != xb || len(got[1].Chunks) != len(in[1].Chunks) || got[1].Chunks[3] != in[1].Chunks[3] {
		t.Fatalf("lookup: %+v", got)
	}
	if got := x.Spans([]hash.Hash{xc}); len(got) != 0 {
		t.Fatalf("spans for an unknown xorb: %d", len(got))
	}
	os.WriteFile(obj, make([]byte, size-1), 0o644)
	if got := x.Spans([]hash.Hash{xa}); len(got) != 0 {
		t.Fatal("spans of an object of another size")
	}
	os.Remove(x.mapPath(oid))
	x.Spans([]hash.Hash{xa})
	if ents, _ := os.ReadDir(filepath.Join(x.dir, "by-xorb")); len(ents) != 1 {
		t.Fatalf("entries naming a missing map: %d left, want only the other xorb's", len(ents))
	}
	if err := x.Record("../../etc", size, hash.Hash{}, in); err == nil {
		t.Fatal("a path as oid was accepted")
	}
	if err := x.Record(oidN(2), size, hash.Hash{}, testSpans(size*2, xa)); err == nil {
		t.Fatal("a span past the object's end was accepted")
	}
}

// The index keeps at most MaxMaps maps, dropping the oldest.
func TestIndexBounded(t *testing.T) {
	root := t.TempDir()
	x := Open(filepath.Join(root, "chunks"), filepath.Join(root, "objects"))
	x.MaxMaps = 3
	for i := byte(0); i < 6; i++ {
		if err := x.Record(oidN(i), 1<<20, hash.Hash{}, testSpans(1<<20, hash.Hash{i})); err != nil {
			t.Fatal(err)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(x.dir, "maps")); len(ents) != 3 {
		t.Fatalf("%d maps kept, want 3", len(ents))
	}
	// The entries naming a dropped map go with it: they would otherwise stay until a lookup asked
	// for their xorb, which for an old version's xorbs may be never, and every lookup lists them.
	if ents, _ := os.ReadDir(filepath.Join(x.dir, "by-xorb")); len(ents) != 3 {
		t.Fatalf("%d by-xorb entries kept for 3 maps, want 3", len(ents))
	}
}

// A partial record survives a torn tail, is dropped for another file, and is held by one
// process at a time.
func TestPartial(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "part")
	file := hash.Hash{7}
	p, err := OpenPartial(path, file, 4<<20)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Spans(nil)) != 0 {
		t.Fatal("a new record has spans")
	}
	if _, err := OpenPartial(path, file, 4<<20); locks && !errors.Is(err, ErrBusy) {
		t.Fatalf("second open of a held record: %v", err)
	}
	for _, sp := range testSpans(4<<20, hash.Hash{1}, hash.Hash{2}) {
		if err := p.Add(sp); err != nil {
			t.Fatal(err)
		}
	}
	p.Close(false)
	// A killed writer's torn record at the end.
	f, _ := os.OpenFile(path+".xetmap", os.O_WRONLY|os.O_APPEND, 0)
	f.Write(appendRecord(nil, testSpans(4<<20, hash.Hash{3})[0])[:100])
	f.Close()
	p, err = OpenPartial(path, file, 4<<20)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Spans(nil); len(got) != 2 || got[1].Xorb != (hash.Hash{2}) || got[0].Path != path || got[1].XorbEnd == 0 {
		t.Fatalf("spans after a torn tail: %+v", got)
	}
	p.Add(testSpans(4<<20, hash.Hash{3})[0]) // appended after the good part, not after the torn bytes
	p.Close(false)
	if p, err = OpenPartial(path, file, 4<<20); err != nil || len(p.Spans(nil)) != 3 {
		t.Fatalf("after appending past a torn tail: %v", err)
	}
	p.Close(false)
	if p, err = OpenPartial(path, hash.Hash{8}, 4<<20); err != nil || len(p.Spans(nil)) != 0 {
		t.Fatalf("record of another file: %v", err)
	}
	p.Close(true)
	if _, err := os.Stat(path + ".xetmap"); !os.IsNotExist(err) {
		t.Fatal("a finished record was left")
	}
}

// Recording the map of a large object holds one span's record at a time, not the whole map: a
// 16 GiB object has about 260,000 chunks, a 9 MB map that its upload built in memory at its end,
// when the upload's memory peaks. Here 32 spans of 8192 chunks (one shared chunk list, as a
// caller reading them span by span has) are recorded while allocating less than a tenth of the
// map, and the map reads back whole.
func TestRecordHoldsOneSpanAtATime(t *testing.T) {
	root := t.TempDir()
	x := Open(filepath.Join(root, "chunks"), filepath.Join(root, "objects"))
	chunks := make([]hash.Entry, maxChunks)
	for i := range chunks {
		chunks[i] = hash.Entry{Hash: hash.Hash{byte(i), byte(i >> 8)}, Size: 64 << 10}
	}
	const spans = 32
	per := int64(maxChunks) * 64 << 10
	in := make([]span.Span, spans)
	for i := range in {
		in[i] = span.Span{Pos: int64(i) * per, Xorb: hash.Hash{byte(i), 1}, Chunks: chunks}
	}
	size := spans * per
	mapBytes := spans * maxChunks * entrySize
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	if err := x.Record(oidN(3), size, hash.Hash{7}, in); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&m1)
	if got := m1.TotalAlloc - m0.TotalAlloc; got > uint64(mapBytes/10) {
		t.Fatalf("recording a map of %d bytes allocated %d bytes, want under %d", mapBytes, got, mapBytes/10)
	}
	obj := x.ObjectPath(oidN(3))
	os.MkdirAll(filepath.Dir(obj), 0o755)
	f, err := os.Create(obj)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(size)
	f.Close()
	got := x.Spans([]hash.Hash{in[spans-1].Xorb})
	if len(got) != spans || got[spans-1].Pos != in[spans-1].Pos || len(got[spans-1].Chunks) != maxChunks ||
		got[spans-1].Chunks[maxChunks-1] != chunks[maxChunks-1] {
		t.Fatalf("the map read back has %d spans, want %d with their chunks", len(got), spans)
	}
}

// A map written span by span takes its spans in file order only: an overlapping span fails the
// map, which is then not there, and nor is its temp file; so is one aborted.
func TestMapWriterRefusesOverlapsAndLeavesNothing(t *testing.T) {
	root := t.TempDir()
	x := Open(filepath.Join(root, "chunks"), filepath.Join(root, "objects"))
	sp := testSpans(4<<20, hash.Hash{1}, hash.Hash{2})
	m, err := x.NewMap(oidN(5), 4<<20, hash.Hash{5})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Add(sp[1]); err != nil {
		t.Fatal(err)
	}
	if err := m.Add(sp[0]); err == nil || !strings.Contains(err.Error(), "overlaps") {
		t.Fatalf("a span before the last one added: %v", err)
	}
	if err := m.Commit(); err == nil {
		t.Fatal("a failed map was committed")
	}
	m, err = x.NewMap(oidN(6), 4<<20, hash.Hash{6})
	if err != nil {
		t.Fatal(err)
	}
	m.Add(sp[0])
	m.Abort()
	ents, _ := os.ReadDir(filepath.Join(root, "chunks", "maps"))
	if len(ents) != 0 {
		t.Fatalf("%d files left in maps/ (first %s), want none", len(ents), ents[0].Name())
	}
}

// A download reports its terms again when it is fetched a second time (local copies that hashed
// right yet made a file that did not verify): Record keeps one span per position instead of
// refusing the repeat, so that download is still recorded.
func TestRecordKeepsOneOfRepeatedSpans(t *testing.T) {
	root := t.TempDir()
	x := Open(filepath.Join(root, "chunks"), filepath.Join(root, "objects"))
	const size = 2 << 20
	in := testSpans(size, hash.Hash{1}, hash.Hash{2})
	oid := oidN(7)
	if err := x.Record(oid, size, hash.Hash{7}, []span.Span{in[1], in[0], in[1], in[0]}); err != nil {
		t.Fatalf("repeated spans: %v", err)
	}
	obj := x.ObjectPath(oid)
	os.MkdirAll(filepath.Dir(obj), 0o755)
	if err := os.WriteFile(obj, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := x.Spans([]hash.Hash{{1}}); len(got) != 2 || got[0].Pos != 0 || got[1].Pos != in[1].Pos {
		t.Fatalf("read back %d spans (%+v), want the two once each", len(got), got)
	}
}

// A span before the object's start is refused, however the spans are ordered.
func TestRecordRefusesANegativePosition(t *testing.T) {
	root := t.TempDir()
	x := Open(filepath.Join(root, "chunks"), filepath.Join(root, "objects"))
	in := testSpans(2<<20, hash.Hash{1}, hash.Hash{2})
	bad := in[0]
	bad.Pos = -1
	if err := x.Record(oidN(8), 2<<20, hash.Hash{8}, []span.Span{in[0], in[1], bad}); err == nil {
		t.Fatal("a span at -1 was recorded")
	}
	if ents, _ := os.ReadDir(filepath.Join(root, "chunks", "maps")); len(ents) != 0 {
		t.Fatalf("%d files left in maps/", len(ents))
	}
}

// The temp file of a map whose writer was killed (kill -9, a crash) is removed once it is an hour
// old, by the next map recorded; a younger one may be another process's map being written and
// stays. Before, every such file stayed for good (about 0.05 % of its object's size each).
func TestKilledWritersTempMapsAreRemoved(t *testing.T) {
	root := t.TempDir()
	x := Open(filepath.Join(root, "chunks"), filepath.Join(root, "objects"))
	const size = 2 << 20
	if err := x.Record(oidN(1), size, hash.Hash{9}, testSpans(size, hash.Hash{1})); err != nil {
		t.Fatal(err)
	}
	maps := filepath.Join(x.dir, "maps")
	stale := filepath.Join(maps, "."+oidN(2)+".123456.tmp")
	fresh := filepath.Join(maps, "."+oidN(3)+".654321.tmp")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, make([]byte, 4096), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	if err := x.Record(oidN(4), size, hash.Hash{8}, testSpans(size, hash.Hash{2})); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a killed writer's temp map two hours old is still there: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a temp map being written now was removed: %v", err)
	}
	if _, err := os.Stat(x.mapPath(oidN(4))); err != nil {
		t.Errorf("the map recorded meanwhile: %v", err)
	}
}
