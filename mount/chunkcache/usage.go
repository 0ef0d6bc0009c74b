package chunkcache

import (
	"encoding/binary"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// StaleTemp: a temp file this old was left by a writer that died; a scan removes it.
const StaleTemp = time.Hour

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

// reserve accounts n more bytes, evicting first when they would take the cache past its limit
// (or when no process recorded the bytes in use yet).
func (c *Cache) reserve(n int64) error {
	return c.lock.with(func(used int64, known bool) (int64, error) {
		if known && used+n <= c.limit {
			return used + n, nil
		}
		total, err := c.evict(n)
		return total + n, err
	})
}

// release gives back n bytes reserved for an entry that was not added, or of an entry removed.
func (c *Cache) release(n int64) {
	if err := c.lock.with(func(used int64, known bool) (int64, error) { return used - n, nil }); err != nil {
		c.log.Debug().Err(err).Msg("chunk cache: releasing room")
	}
}

// Usage is the bytes the cache's entries, temp files and directories take now (a scan).
func (c *Cache) Usage() (int64, error) {
	_, total, err := c.scan()
	return total, err
}

// entry is a file of the cache as a scan finds it.
type entry struct {
	path  string
	size  int64 // whole blocks
	mtime time.Time
}

// evict scans the cache and, when its bytes and n more pass the limit, removes the least recently
// used entries until they fit under the low-water mark. It returns the bytes left. Called under
// the lock.
func (c *Cache) evict(n int64) (int64, error) {
	ents, total, err := c.scan()
	if err != nil {
		return total, err
	}
	c.scans.Add(1)
	if total+n <= c.limit {
		return total, nil
	}
	sort.Slice(ents, func(a, b int) bool { return ents[a].mtime.Before(ents[b].mtime) })
	removed := 0
	for _, e := range ents {
		if total+n <= c.low {
			break
		}
		if err := os.Remove(e.path); err == nil || os.IsNotExist(err) {
			total -= e.size
			removed++
		}
	}
	c.evicted.Add(int64(removed))
	c.log.Debug().Int("removed", removed).Int64("bytes", total).Int64("limit", c.limit).Msg("chunk cache: evicted the least recently used")
	return total, nil
}

// scan lists the entries (chunks and footers) and adds up every file and directory of the cache;
// it removes temp files older than StaleTemp.
func (c *Cache) scan() ([]entry, int64, error) {
	var ents []entry
	var total int64
	now := time.Now()
	err := filepath.WalkDir(c.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil // removed by another process meanwhile
			}
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		size := blocks(fi.Size())
		rel, _ := filepath.Rel(c.dir, p)
		switch {
		case d.IsDir() || rel == "lock":
			total += blocks(max(fi.Size(), blockSize))
		case strings.HasPrefix(rel, "tmp"+string(filepath.Separator)):
			if now.Sub(fi.ModTime()) > StaleTemp && os.Remove(p) == nil {
				return nil
			}
			total += size
		default:
			total += size
			ents = append(ents, entry{path: p, size: size, mtime: fi.ModTime()})
		}
		return nil
	})
	if err != nil {
		return nil, total, fmt.Errorf("chunk cache: scanning %s: %w", c.dir, err)
	}
	return ents, total, nil
}
