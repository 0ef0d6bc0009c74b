package chunkcache

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// fileLock is the lock of the accounting: a mutex for the goroutines of this process, an flock for
// the other processes (where there is flock), and the bytes in use in the file's first 8 bytes.
type fileLock struct {
	mu sync.Mutex
	f  *os.File
}

func openLock(path string) (*fileLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return &fileLock{f: f}, nil
}

func (l *fileLock) close() error { return l.f.Close() }

// with runs fn under the lock with the bytes in use (known false when the file does not say) and
// records what fn returns.
func (l *fileLock) with(fn func(used int64, known bool) (int64, error)) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := flock(l.f); err != nil {
		return fmt.Errorf("chunk cache: locking: %w", err)
	}
	defer funlock(l.f)
	var b [8]byte
	n, _ := l.f.ReadAt(b[:], 0)
	used := int64(binary.LittleEndian.Uint64(b[:]))
	next, err := fn(used, n == 8 && used >= 0)
	if err != nil {
		return err
	}
	binary.LittleEndian.PutUint64(b[:], uint64(max(next, 0)))
	if _, err := l.f.WriteAt(b[:], 0); err != nil {
		return fmt.Errorf("chunk cache: recording its size: %w", err)
	}
	return nil
}

// addLocked appends data as entry k, first making room when it (and a new segment's overhead, when
// one is needed) would take the cache past its limit, or when no process recorded the bytes in use
// yet. It returns the bytes in use after it. Under c.wmu and the accounting lock.
func (c *Cache) addLocked(k key, data []byte, used int64, known bool) (int64, error) {
	n := int64(len(data)) + indexEntrySize
	s := c.writable(int64(len(data)))
	if s == nil {
		n += segOverhead
	}
	if !known || used+n > c.limit {
		total, err := c.evict(n)
		if err != nil {
			return used, err
		}
		used = total
	}
	if s == nil {
		var err error
		if s, err = c.newWritable(); err != nil {
			return used, err
		}
		used, n = used+segOverhead, n-segOverhead
	}
	if err := c.appendEntry(s, k, data); err != nil {
		return used, err
	}
	return used + n, nil
}

// Usage is the bytes the cache's files and directories take now (a scan).
func (c *Cache) Usage() (int64, error) {
	_, total, err := c.scan()
	return total, err
}

// segFiles is a segment as a scan finds it: its two files' bytes and its modification time.
type segFiles struct {
	name  string
	size  int64
	mtime time.Time
}

// evict scans the cache and, when its bytes and n more pass the limit, removes the least recently
// used segments until they fit under the low-water mark. It returns the bytes left. Called under
// the lock.
func (c *Cache) evict(n int64) (int64, error) {
	segs, total, err := c.scan()
	if err != nil {
		return total, err
	}
	c.scans.Add(1)
	if total+n <= c.limit {
		return total, nil
	}
	sort.Slice(segs, func(a, b int) bool { return segs[a].mtime.Before(segs[b].mtime) })
	c.mu.Lock()
	var mine string // this process's segment, being written: not the least recently used
	if c.w != nil {
		mine = c.w.name
	}
	c.mu.Unlock()
	removed := 0
	for _, s := range segs {
		if total+n <= c.low {
			break
		}
		if s.name == mine {
			continue
		}
		seg, idx := filepath.Join(c.segDir, s.name+".seg"), filepath.Join(c.segDir, s.name+".idx")
		err1, err2 := os.Remove(seg), os.Remove(idx)
		if (err1 == nil || os.IsNotExist(err1)) && (err2 == nil || os.IsNotExist(err2)) {
			total -= s.size
			removed++
			c.mu.Lock()
			if sg := c.segs[s.name]; sg != nil {
				c.forgetLocked(sg) // its file goes when this process lets go of it
			}
			c.mu.Unlock()
		}
	}
	c.evicted.Add(int64(removed))
	c.log.Debug().Int("segments", removed).Int64("bytes", total).Int64("limit", c.limit).Msg("chunk cache: evicted the least recently used")
	return total, nil
}

// scan lists the segments and adds up the bytes of every file and directory of the cache.
func (c *Cache) scan() ([]segFiles, int64, error) {
	total := int64(3 * blockSize) // the cache's directory, segments/ and the lock file
	ents, err := os.ReadDir(c.segDir)
	if err != nil {
		return nil, total, fmt.Errorf("chunk cache: scanning %s: %w", c.segDir, err)
	}
	byName := map[string]*segFiles{}
	var out []segFiles
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		name, ext := strings.TrimSuffix(e.Name(), filepath.Ext(e.Name())), filepath.Ext(e.Name())
		s := byName[name]
		if s == nil {
			s = &segFiles{name: name, size: segOverhead}
			byName[name] = s
			total += segOverhead
		}
		s.size += fi.Size()
		total += fi.Size()
		if ext == ".seg" || s.mtime.IsZero() {
			s.mtime = fi.ModTime()
		}
	}
	for _, s := range byName {
		out = append(out, *s)
	}
	return out, total, nil
}

// blockSize is the unit a file system allocates.
const blockSize = 4096

// segOverhead is what a segment takes beyond its bytes: the last block of each of its two files.
// Counted once per segment (reserved when it is made), not per entry, so the record of the bytes
// in use equals a scan's count exactly, and a scan's count is at least what du finds.
const segOverhead = 2 * blockSize
