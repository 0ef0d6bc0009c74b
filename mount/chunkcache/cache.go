// Package chunkcache is the mount's cache on disk: the chunks it fetched (their raw bytes, by chunk
// hash) and the xorb footers it read (by xorb hash), for every mount and every revision of one
// repository, so that a chunk two versions of a file share is fetched once.
//
//	<dir>/chunks/<1 hex>/<chunk hash>   a chunk's raw bytes
//	<dir>/footers/<1 hex>/<xorb hash>   a xorb's footer (xorb.Footer.AppendTo)
//	<dir>/tmp/                          entries being written (temp file, then a hard link)
//	<dir>/lock                          the flock of the accounting; its first 8 bytes: the bytes in use
//
// Nothing in it is trusted: the reader hashes every chunk it gets from here and checks every footer
// against its xorb hash, and Drops an entry that does not verify.
//
// Bounded: every entry's bytes (rounded up to 4 KiB blocks, as a file system keeps them) are
// reserved under the lock before the entry is written, and when the reservation would pass the
// limit the least recently used entries (by modification time, which a read older than TouchAge
// renews) are removed first, down to the low-water mark. Several processes share the directory: the
// reservations go through the lock, entries appear whole (linked into place from a temp file), and
// an entry removed while another process reads it is read to its end or missed.
package chunkcache

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// Kind is what an entry holds.
type Kind uint8

const (
	Chunk  Kind = iota // a chunk's raw bytes, named by its chunk hash
	Footer             // a xorb's footer, named by the xorb hash
)

func (k Kind) dir() string {
	if k == Footer {
		return "footers"
	}
	return "chunks"
}

// MaxEntry is the largest entry kept (a chunk is at most 128 KiB, a footer about 330 KB); a larger
// file in the cache is not read.
const MaxEntry = 1 << 20

// MinLimit is the least bound: room for the chunks of a few reads in flight.
const MinLimit = 16 << 20

// TouchAge: an entry read whose modification time is older than this gets the current time, so the
// least recently used go first.
const TouchAge = time.Minute

// ErrMiss: the cache does not hold the entry.
var ErrMiss = errors.New("chunkcache: not cached")

// Options configure a Cache.
type Options struct {
	Limit int64 // the most bytes the cache keeps (at least MinLimit)
	Log   zerolog.Logger
}

// Stats count what a Cache did in this process.
type Stats struct {
	Hits, Misses, Puts, Evicted, Scans int64
}

// Cache is the cache in one directory. Safe for concurrent use, and for several processes at once.
type Cache struct {
	dir        string
	limit, low int64
	log        zerolog.Logger
	lock       *fileLock
	hits       atomic.Int64
	misses     atomic.Int64
	puts       atomic.Int64
	evicted    atomic.Int64
	scans      atomic.Int64
}

// Open opens (creating) the cache in dir, bounded by o.Limit.
func Open(dir string, o Options) (*Cache, error) {
	if o.Limit < MinLimit {
		return nil, fmt.Errorf("chunk cache %s: a limit of %d bytes is below the least, %d", dir, o.Limit, MinLimit)
	}
	if err := makeDirs(dir); err != nil {
		return nil, fmt.Errorf("chunk cache: %w", err)
	}
	l, err := openLock(filepath.Join(dir, "lock"))
	if err != nil {
		return nil, fmt.Errorf("chunk cache: %w", err)
	}
	c := &Cache{dir: dir, limit: o.Limit, low: o.Limit - max(o.Limit/16, 4<<20), log: o.Log, lock: l}
	return c, nil
}

// makeDirs makes the cache's directories, the 16 of each kind among them: made here, they are
// counted by every scan from the first, so the record of the bytes in use stays equal to a scan.
func makeDirs(dir string) error {
	for _, d := range []string{"tmp", "chunks", "footers"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "footers", "f")); err == nil {
		return nil
	}
	for _, k := range []Kind{Chunk, Footer} {
		for i := 0; i < 16; i++ {
			if err := os.Mkdir(filepath.Join(dir, k.dir(), fmt.Sprintf("%x", i)), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
		}
	}
	return nil
}

// Dir is the cache's directory.
func (c *Cache) Dir() string { return c.dir }

// Limit is the bound of the cache in bytes.
func (c *Cache) Limit() int64 { return c.limit }

// Close releases the lock file.
func (c *Cache) Close() error { return c.lock.close() }

// Stats returns what this process's Cache did.
func (c *Cache) Stats() Stats {
	return Stats{Hits: c.hits.Load(), Misses: c.misses.Load(), Puts: c.puts.Load(), Evicted: c.evicted.Load(), Scans: c.scans.Load()}
}

func (c *Cache) path(k Kind, h hash.Hash) string {
	s := h.String()
	return filepath.Join(c.dir, k.dir(), s[:1], s)
}

// Get returns the bytes of entry h of kind k, or ErrMiss. The caller verifies them (and Drops the
// entry when they do not).
func (c *Cache) Get(k Kind, h hash.Hash) ([]byte, error) {
	p := c.path(k, h)
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		c.misses.Add(1)
		return nil, ErrMiss
	}
	if err != nil {
		return nil, fmt.Errorf("chunk cache: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("chunk cache: %w", err)
	}
	if fi.Size() > MaxEntry || !fi.Mode().IsRegular() {
		c.Drop(k, h)
		c.misses.Add(1)
		return nil, ErrMiss
	}
	b := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		c.misses.Add(1)
		return nil, ErrMiss // removed and truncated meanwhile, or cut short: read as missing
	}
	if now := time.Now(); now.Sub(fi.ModTime()) > TouchAge {
		_ = os.Chtimes(p, now, now) // an entry removed meanwhile has nothing to touch
	}
	c.hits.Add(1)
	return b, nil
}

// Has reports whether entry h of kind k is cached (not whether it verifies).
func (c *Cache) Has(k Kind, h hash.Hash) bool {
	_, err := os.Lstat(c.path(k, h))
	return err == nil
}

// Put stores data as entry h of kind k (nothing when it is there already), making room first.
func (c *Cache) Put(k Kind, h hash.Hash, data []byte) error {
	if len(data) > MaxEntry {
		return fmt.Errorf("chunk cache: an entry of %d bytes is over the most, %d", len(data), MaxEntry)
	}
	final := c.path(k, h)
	if _, err := os.Lstat(final); err == nil {
		return nil
	}
	n := blocks(int64(len(data)))
	if err := c.reserve(n); err != nil {
		return err
	}
	stored, err := c.write(final, data)
	if !stored {
		c.release(n)
	}
	if err == nil && stored {
		c.puts.Add(1)
	}
	return err
}

// write writes data to a temp file and links it to final. stored is false when nothing was added:
// the write failed, or another writer put the entry first.
func (c *Cache) write(final string, data []byte) (stored bool, err error) {
	f, err := os.CreateTemp(filepath.Join(c.dir, "tmp"), "e-*")
	if err != nil {
		return false, fmt.Errorf("chunk cache: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, fmt.Errorf("chunk cache: writing an entry: %w", err)
	}
	err = os.Link(tmp, final)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("chunk cache: %w", err)
	}
	return true, nil
}

// Drop removes entry h of kind k (it did not verify).
func (c *Cache) Drop(k Kind, h hash.Hash) {
	p := c.path(k, h)
	fi, err := os.Lstat(p)
	if err != nil {
		return
	}
	if os.Remove(p) == nil {
		c.release(blocks(fi.Size()))
	}
}

// blockSize is the unit a file system allocates; entries count whole blocks.
const blockSize = 4096

func blocks(n int64) int64 { return (n + blockSize - 1) / blockSize * blockSize }
