package chunkcache

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

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
	touchedAt time.Time
	// This process's own segment: where the next entry goes, and the index file it appends to.
	size int64
	ix   *os.File
}

func newSegment(dir, name string) *segment {
	return &segment{name: name, seg: filepath.Join(dir, name+".seg"), idx: filepath.Join(dir, name+".idx")}
}

// readAt reads len(b) bytes at off, opening the segment on first use.
func (s *segment) readAt(b []byte, off int64) error {
	s.mu.Lock()
	if s.f == nil {
		f, err := os.Open(s.seg)
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

// readIndexLocked adds the entries of s's index past what was read.
func (c *Cache) readIndexLocked(s *segment) {
	f, err := os.Open(s.idx)
	if err != nil {
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() <= s.idxRead {
		return
	}
	n := (fi.Size() - s.idxRead) / indexEntrySize * indexEntrySize // a torn last entry waits
	b := make([]byte, n)
	if _, err := f.ReadAt(b, s.idxRead); err != nil && !errors.Is(err, io.EOF) {
		return
	}
	for p := 0; p+indexEntrySize <= len(b); p += indexEntrySize {
		e := b[p : p+indexEntrySize]
		k := key{kind: Kind(e[0]), h: hash.Hash(e[16:48])}
		ln := binary.LittleEndian.Uint32(e[4:])
		off := binary.LittleEndian.Uint64(e[8:])
		if ln > MaxEntry || off > 1<<40 {
			continue // not ours to read
		}
		c.index[k] = loc{seg: s, off: int64(off), n: int32(ln)}
	}
	s.idxRead += n
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
