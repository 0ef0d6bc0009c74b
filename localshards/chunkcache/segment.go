package chunkcache

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/regfile"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// indexEntrySize is the size of an index entry: kind (1 byte), 3 reserved, the entry's length (u32)
// and offset in the segment (u64), little-endian, then the hash (32 bytes).
const indexEntrySize = 48

func appendIndexEntry(b []byte, k key, off int64, n int) []byte {
	b = append(b, byte(k.kind), 0, 0, 0)
	b = binary.LittleEndian.AppendUint32(b, uint32(n))
	b = binary.LittleEndian.AppendUint64(b, uint64(off))
	return append(b, k.h[:]...)
}

// segment is a segment file and its index, as this process knows them.
type segment struct {
	name      string
	seg, idx  string // paths
	mu        sync.Mutex
	f         *os.File // opened for reading (or writing, when this process appends to it)
	idxRead   int64    // bytes of the index taken into the map
	dataEnd   int64    // where the entries taken into the map end in the segment
	damaged   bool     // the index holds an entry that is not one: nothing after it is read
	touchedAt time.Time
	// This process's own segment: where the next entry goes, and the index file it appends to.
	size int64
	ix   *os.File
}

func newSegment(dir, name string) *segment {
	return &segment{name: name, seg: filepath.Join(dir, name+".seg"), idx: filepath.Join(dir, name+".idx")}
}

// openRegular opens the cache's file at path for reading, refusing one that is not a regular file:
// a name in the listing may be a fifo, a device or a directory, which the cache never writes.
func openRegular(path string) (*os.File, error) {
	f, err := regfile.Open(path, os.O_RDONLY)
	if err != nil {
		return nil, fmt.Errorf("chunk cache: %w", err)
	}
	return f, nil
}

// readAt reads len(b) bytes at off, opening the segment on first use.
func (s *segment) readAt(b []byte, off int64) error {
	s.mu.Lock()
	if s.f == nil {
		f, err := openRegular(s.seg)
		if err != nil {
			s.mu.Unlock()
			return err
		}
		s.f = f
	}
	f := s.f
	s.mu.Unlock()
	_, err := f.ReadAt(b, off)
	return err
}

// touch renews the segment's modification time when it was last noted more than TouchAge ago.
func (s *segment) touch() {
	now := time.Now()
	s.mu.Lock()
	old := now.Sub(s.touchedAt) > TouchAge
	if old {
		s.touchedAt = now
	}
	s.mu.Unlock()
	if old {
		_ = os.Chtimes(s.seg, now, now) // a segment removed meanwhile has nothing to touch
	}
}

func (s *segment) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
	if s.ix != nil {
		s.ix.Close()
		s.ix = nil
	}
}

// refreshLocked reads the index entries the segments gained since the last refresh (every
// process's), and forgets the segments that were removed. Under c.mu.
func (c *Cache) refreshLocked() {
	c.refreshed = time.Now()
	ents, err := os.ReadDir(c.segDir)
	if err != nil {
		c.log.Debug().Err(err).Msg("chunk cache: listing segments")
		return
	}
	seen := map[string]bool{}
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".idx")
		if !ok {
			continue
		}
		seen[name] = true
		s := c.segs[name]
		if s == nil {
			s = newSegment(c.segDir, name)
			c.segs[name] = s
		}
		c.readIndexLocked(s)
	}
	for name, s := range c.segs {
		if !seen[name] && s != c.w {
			c.forgetLocked(s)
		}
	}
}

// indexReadBytes is how much of an index one read takes (21,845 entries): an index is read a
// piece at a time, so that what a read allocates does not follow the file's length, which says
// nothing of what it holds when a power loss left a tail of zeros, or the file is damaged or sparse.
const indexReadBytes = 21845 * indexEntrySize

// readIndexLocked adds the entries of s's index past what was read. The entries of a segment lie
// one after the other from its start, as its one writer appended them; an entry that does not
// (zeros, a torn write, damage) ends what is read of the index: the entries before it are kept,
// those after it could not be framed, and the segment takes no more.
func (c *Cache) readIndexLocked(s *segment) {
	if s.damaged {
		return
	}
	f, err := openRegular(s.idx)
	if err != nil {
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return
	}
	var b []byte
	for fi.Size()-s.idxRead >= indexEntrySize { // a torn last entry waits
		n := min(fi.Size()-s.idxRead, indexReadBytes) / indexEntrySize * indexEntrySize
		if int64(cap(b)) < n {
			b = make([]byte, n)
		}
		if _, err := f.ReadAt(b[:n], s.idxRead); err != nil {
			return // shorter than its stat said: read again at the next refresh
		}
		for p := 0; p < int(n); p += indexEntrySize {
			if !c.addEntryLocked(s, b[p:p+indexEntrySize]) {
				s.damaged = true
				c.log.Debug().Str("index", s.idx).Int64("at", s.idxRead).Msg("chunk cache: a damaged index entry; the rest of the index is not read")
				return
			}
			s.idxRead += indexEntrySize
		}
	}
}

// addEntryLocked lists index entry e of segment s when it lies where the entry before it ended,
// inside a segment's most bytes; it reports whether it did.
func (c *Cache) addEntryLocked(s *segment, e []byte) bool {
	kind := Kind(e[0])
	ln := int64(binary.LittleEndian.Uint32(e[4:]))
	off := int64(binary.LittleEndian.Uint64(e[8:]))
	if kind > Footer || e[1]|e[2]|e[3] != 0 || ln == 0 || ln > MaxEntry || off != s.dataEnd || off+ln > maxSegBytes+MaxEntry {
		return false
	}
	c.index[key{kind: kind, h: hash.Hash(e[16:48])}] = loc{seg: s, off: off, n: int32(ln)}
	s.dataEnd = off + ln
	return true
}

// forget drops segment s (removed) from this process's view.
func (c *Cache) forget(s *segment) {
	c.mu.Lock()
	c.forgetLocked(s)
	c.mu.Unlock()
}

func (c *Cache) forgetLocked(s *segment) {
	if c.segs[s.name] != s {
		return
	}
	delete(c.segs, s.name)
	for k, l := range c.index {
		if l.seg == s {
			delete(c.index, k)
		}
	}
	if c.w == s {
		c.w = nil
	}
	s.close()
}

// appendEntry appends data to segment s, then its index entry. Under c.wmu.
func (c *Cache) appendEntry(s *segment, k key, data []byte) error {
	off := s.size
	if _, err := s.f.WriteAt(data, off); err != nil {
		return fmt.Errorf("chunk cache: writing %s: %w", s.seg, err)
	}
	if _, err := s.ix.Write(appendIndexEntry(nil, k, off, len(data))); err != nil {
		return fmt.Errorf("chunk cache: writing %s: %w", s.idx, err)
	}
	s.size += int64(len(data))
	c.mu.Lock()
	c.index[k] = loc{seg: s, off: off, n: int32(len(data))}
	s.idxRead += indexEntrySize
	s.dataEnd = s.size
	c.mu.Unlock()
	return nil
}

// writable returns this process's segment when n more bytes fit in it and no eviction removed it,
// else nil (a new one is needed). Under c.wmu and the accounting lock, so no eviction removes it
// before the entry is written.
func (c *Cache) writable(n int64) *segment {
	c.mu.Lock()
	s := c.w
	c.mu.Unlock()
	if s != nil && s.size+n <= c.segBytes {
		if st, _ := s.f.Stat(); st != nil && linked(st) {
			return s
		}
	}
	if s != nil {
		c.mu.Lock()
		if c.w == s {
			c.w = nil
		}
		c.mu.Unlock()
	}
	return nil
}

// newWritable creates a segment of this process's (its index first, so that a scan sees both).
// Under c.wmu and the accounting lock, which accounted its overhead.
func (c *Cache) newWritable() (*segment, error) {
	var r [4]byte
	_, _ = rand.Read(r[:])
	name := fmt.Sprintf("%016x-%d-%s", time.Now().UnixNano(), os.Getpid(), hex.EncodeToString(r[:]))
	s := newSegment(c.segDir, name)
	ix, err := os.OpenFile(s.idx, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("chunk cache: %w", err)
	}
	f, err := os.OpenFile(s.seg, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	if err != nil {
		ix.Close()
		os.Remove(s.idx)
		return nil, fmt.Errorf("chunk cache: %w", err)
	}
	s.f, s.ix, s.touchedAt = f, ix, time.Now()
	c.mu.Lock()
	c.segs[name] = s
	c.w = s
	c.mu.Unlock()
	return s, nil
}
