package chunkindex

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/fsretry"
	"github.com/git-xet-transfer/git-xet-transfer/internal/lfsobject"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/span"
)

// Index is the chunk index of one repository:
//
//	<dir>/maps/<oid>            the map of object oid (temp file, then rename)
//	<dir>/by-xorb/<xorb>.<oid>  an empty file: the map of oid names chunks of xorb
//
// Concurrency: any number of processes may record and look up at once. A map appears whole (by
// rename) before the entries naming it; an entry whose map is gone is ignored and removed, a map
// whose object is missing or of another size is not used. Nothing in it is trusted: the download
// hash-checks every chunk it copies.
type Index struct {
	dir     string
	objects string // git-lfs's object directory: the object oid is objects/oid[0:2]/oid[2:4]/oid
	// MaxMaps bounds the maps kept (default 4096, at most ~40 bytes per chunk each: a 1 GiB object's
	// map is ~0.6 MB); recording past it removes the oldest.
	MaxMaps int
	// MaxLoad bounds the maps read by one lookup (default 8), those naming the most of the xorbs
	// asked for first.
	MaxLoad int
}

// MinBytes: objects smaller than this are not recorded (a small file is one or two chunks; its
// next version shares nothing worth a map).
const MinBytes = 1 << 20

// Open returns the index at dir for the objects under objects. Nothing is created until the first
// Record.
func Open(dir, objects string) *Index {
	return &Index{dir: dir, objects: objects, MaxMaps: 4096, MaxLoad: 8}
}

func (x *Index) mapPath(oid string) string { return filepath.Join(x.dir, "maps", oid) }

// ObjectPath is where git-lfs keeps object oid.
func (x *Index) ObjectPath(oid string) string {
	return filepath.Join(x.objects, oid[0:2], oid[2:4], oid)
}

// Record writes the map of object oid (size bytes, Xet file hash file): spans say where its chunks
// lie (their Path is ignored), in any order. A span that starts inside one before it is left out:
// a download fetched a second time reports its terms again. It replaces an older map of the same
// object.
func (x *Index) Record(oid string, size int64, file hash.Hash, spans []span.Span) error {
	sorted := append([]span.Span(nil), spans...)
	sort.SliceStable(sorted, func(a, b int) bool { return sorted[a].Pos < sorted[b].Pos })
	m, err := x.NewMap(oid, size, file)
	if err != nil || m == nil {
		return err
	}
	for _, sp := range sorted {
		if sp.Pos >= 0 && sp.Pos < m.end {
			continue // a repeat: the span added last covers where it starts
		}
		if err := m.Add(sp); err != nil { // a span that does not fit drops the map
			return err
		}
	}
	return m.Commit()
}

// fits checks that sp lies inside object oid of size bytes.
func fits(oid string, size int64, sp span.Span) error {
	if sp.Pos < 0 || sp.Pos+sp.Bytes() > size || len(sp.Chunks) == 0 {
		return fmt.Errorf("chunk index: span at %d of %d bytes does not fit object %s", sp.Pos, sp.Bytes(), oid)
	}
	return nil
}

// A MapWriter writes the map of one object span by span, in file order, straight to its temp file:
// what it holds is one span's record, never the whole map (36 bytes a chunk: 9 MB for a 16 GiB
// object, which its upload would otherwise build when its memory peaks). Commit makes the map
// visible; Abort, or an Add that fails, drops it.
type MapWriter struct {
	x      *Index
	oid    string
	size   int64
	f      *os.File
	w      *bufio.Writer
	end    int64 // where the last span added ends
	xorbs  map[hash.Hash]bool
	rec    []byte
	closed bool
}

// NewMap starts the map of object oid (size bytes, Xet file hash file). It returns nil, nil for an
// object too small to be recorded (MinBytes).
func (x *Index) NewMap(oid string, size int64, file hash.Hash) (*MapWriter, error) {
	if !lfsobject.ValidOid(oid) {
		return nil, fmt.Errorf("chunk index: %q is not an oid", oid)
	}
	if size < MinBytes {
		return nil, nil
	}
	dir := filepath.Join(x.dir, "maps")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("chunk index: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+oid+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("chunk index: %w", err)
	}
	m := &MapWriter{x: x, oid: oid, size: size, f: f, w: bufio.NewWriterSize(f, 64<<10), xorbs: make(map[hash.Hash]bool)}
	if _, err := m.w.Write(header{size: size, file: file}.append(nil)); err != nil {
		m.Abort()
		return nil, fmt.Errorf("chunk index: %w", err)
	}
	return m, nil
}

// Add appends the record of sp, which starts at or after the end of the span added before it. sp's
// chunks are copied: the caller may reuse them.
func (m *MapWriter) Add(sp span.Span) error {
	if m.closed {
		return errors.New("chunk index: map already committed or aborted")
	}
	err := fits(m.oid, m.size, sp)
	if err == nil && sp.Pos < m.end {
		err = fmt.Errorf("chunk index: span at %d of object %s overlaps the one before it (ends at %d)", sp.Pos, m.oid, m.end)
	}
	if err == nil && len(sp.Chunks) > maxChunks {
		err = fmt.Errorf("chunk index: span at %d of object %s has %d chunks, more than a xorb holds", sp.Pos, m.oid, len(sp.Chunks))
	}
	if err != nil {
		m.Abort()
		return err
	}
	if need := recHead + spanHead + len(sp.Chunks)*entrySize; cap(m.rec) < need {
		m.rec = make([]byte, 0, need)
	}
	m.rec = appendRecord(m.rec[:0], sp)
	if _, err := m.w.Write(m.rec); err != nil {
		m.Abort()
		return fmt.Errorf("chunk index: %w", err)
	}
	m.end = sp.Pos + sp.Bytes()
	m.xorbs[sp.Xorb] = true
	return nil
}

// Commit makes the map visible (rename over an older map of the object), then names it under each
// of its xorbs.
func (m *MapWriter) Commit() error {
	if m.closed {
		return errors.New("chunk index: map already committed or aborted")
	}
	if len(m.xorbs) == 0 {
		m.Abort()
		return nil
	}
	m.closed = true
	err := m.w.Flush()
	if cerr := m.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsretry.Rename(m.f.Name(), m.x.mapPath(m.oid))
	}
	if err != nil {
		fsretry.Remove(m.f.Name())
		return fmt.Errorf("chunk index: %w", err)
	}
	bx := filepath.Join(m.x.dir, "by-xorb")
	if err := os.MkdirAll(bx, 0o755); err != nil {
		return fmt.Errorf("chunk index: %w", err)
	}
	for h := range m.xorbs {
		f, err := os.OpenFile(filepath.Join(bx, h.String()+"."+m.oid), os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return fmt.Errorf("chunk index: %w", err)
		}
		f.Close()
	}
	return m.x.prune()
}

// Abort drops the map being written. It may be called after Commit (it then does nothing).
func (m *MapWriter) Abort() {
	if m.closed {
		return
	}
	m.closed = true
	m.f.Close()
	fsretry.Remove(m.f.Name())
}

// writeFile writes dir/name through a temp file and a rename (no fsync: a map lost in a crash is
// only a delta not taken).
func writeFile(dir, name string, b []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+name+".*.tmp")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsretry.Rename(f.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		fsretry.Remove(f.Name())
	}
	return err
}

// prune removes the oldest maps past MaxMaps with their by-xorb entries, and the temp maps of
// writers killed mid-map (older than staleTemp).
func (x *Index) prune() error {
	ents, err := os.ReadDir(filepath.Join(x.dir, "maps"))
	if err != nil {
		return nil
	}
	for _, e := range ents {
		if name := e.Name(); strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".tmp") {
			if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > staleTemp {
				fsretry.Remove(filepath.Join(x.dir, "maps", name))
			}
		}
	}
	if len(ents) <= x.MaxMaps {
		return nil
	}
	type aged struct {
		name string
		t    time.Time
	}
	var ms []aged
	for _, e := range ents {
		if info, err := e.Info(); err == nil && lfsobject.ValidOid(e.Name()) {
			ms = append(ms, aged{e.Name(), info.ModTime()})
		}
	}
	sort.Slice(ms, func(a, b int) bool { return ms[a].t.Before(ms[b].t) })
	for _, m := range ms[:max(0, len(ms)-x.MaxMaps)] {
		x.drop(m.name)
	}
	return nil
}

// drop removes the map of oid, then the by-xorb entries it named: left, they would stay until a
// lookup asked for their xorb (for an old version's xorbs perhaps never) and lengthen every
// lookup's listing. A map that cannot be read leaves its entries to the lookups, which drop an
// entry whose map is gone.
func (x *Index) drop(oid string) {
	var xorbs map[hash.Hash]bool
	if f, err := os.Open(x.mapPath(oid)); err == nil {
		if _, spans, err := readMap(f, maxMapBytes); err == nil {
			xorbs = make(map[hash.Hash]bool, len(spans))
			for _, sp := range spans {
				xorbs[sp.Xorb] = true
			}
		}
		f.Close()
	}
	fsretry.Remove(x.mapPath(oid))
	for h := range xorbs {
		fsretry.Remove(filepath.Join(x.dir, "by-xorb", h.String()+"."+oid))
	}
}

// maxMapBytes bounds what is read of a map: the most a map of an object of 4096 spans of the most
// chunks holds.
const maxMapBytes = headerSize + (maxChunks*entrySize+recHead+spanHead)*4096

// staleTemp is the age past which a temp map is a killed writer's: a live writer writes to it every
// 64 KiB of records (about 115 MB of its object) as the transfer goes, so an hour without a write is
// no live writer's.
const staleTemp = time.Hour

// Spans returns the spans of local objects holding chunks of xorbs (span.Local).
func (x *Index) Spans(xorbs []hash.Hash) []span.Span {
	want := make(map[string]bool, len(xorbs))
	for _, h := range xorbs {
		want[h.String()] = true
	}
	bx := filepath.Join(x.dir, "by-xorb")
	ents, err := os.ReadDir(bx)
	if err != nil {
		return nil
	}
	hits := make(map[string]int) // oid → xorbs asked for that its map names
	entries := make(map[string][]string)
	for _, e := range ents {
		xh, oid, ok := strings.Cut(e.Name(), ".")
		if ok && want[xh] && lfsobject.ValidOid(oid) {
			hits[oid]++
			entries[oid] = append(entries[oid], e.Name())
		}
	}
	oids := make([]string, 0, len(hits))
	for oid := range hits {
		oids = append(oids, oid)
	}
	sort.Slice(oids, func(a, b int) bool { return hits[oids[a]] > hits[oids[b]] })
	var out []span.Span
	loaded := 0
	for _, oid := range oids {
		if loaded >= x.MaxLoad {
			break
		}
		spans, err := x.load(oid)
		if errors.Is(err, fs.ErrNotExist) {
			for _, name := range entries[oid] {
				fsretry.Remove(filepath.Join(bx, name))
			}
			continue
		}
		if err != nil || len(spans) == 0 {
			continue
		}
		loaded++
		out = append(out, spans...)
	}
	return out
}

// load reads the map of oid and returns its spans, with Path set to the object, when the object is
// there with the map's size.
func (x *Index) load(oid string) ([]span.Span, error) {
	f, err := os.Open(x.mapPath(oid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h, spans, err := readMap(f, maxMapBytes)
	if err != nil {
		return nil, err
	}
	obj := x.ObjectPath(oid)
	if fi, err := os.Stat(obj); err != nil || fi.Size() != h.size {
		return nil, errors.New("object missing or of another size")
	}
	for i := range spans {
		spans[i].Path = obj
	}
	return spans, nil
}
