package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Backend is the blob storage under a Store: named immutable blobs, each written whole and
// atomically. The filesystem implementation is FSBackend; an object store (S3) can follow with
// conditional puts (If-None-Match: *) and ranged GETs.
//
// Concurrency: every method is safe for concurrent use by goroutines and, for FSBackend, by several
// processes sharing one directory. A reader never sees a partly written blob.
type Backend interface {
	// Create stores the bytes of r under name unless a blob of that name exists. When r has a
	// Size() int64 method (see BytesBlob), it is the exact length of the blob, and the backend may
	// reserve the space up front; a *BytesBlob may be written without being read through. It returns
	// created=false (and reads r no further) when the name was taken, by this or another writer, before
	// this one became visible. On error nothing is visible under name. (Writers in two processes
	// racing on one name may both report created=true: FSBackend's packs take each process's word
	// for what it wrote; both wrote the same name, which the store only gives to equivalent content.)
	Create(ctx context.Context, name string, r io.Reader) (created bool, err error)
	// CreateBatch creates each blob as Create would, in order: a blob is visible only once every
	// blob before it in the batch is, so an entry may name one written earlier in its batch. It
	// returns, per blob, whether this call created it. On error a prefix of the batch may have been
	// created (a retry completes it). A backend that cannot do better calls CreateEach.
	CreateBatch(ctx context.Context, blobs []NewBlob) (created []bool, err error)
	// Open opens a blob for ranged reads; a missing blob gives an error matching ErrNotFound.
	Open(ctx context.Context, name string) (Blob, error)
	// Exists reports whether a blob of that name exists. It is for checks before a write, where a
	// wrong "no" costs a duplicate write of the same content: FSBackend may miss a blob another
	// process packed in the last 100 ms (Open never misses one).
	Exists(ctx context.Context, name string) (bool, error)
	// List returns the names under prefix (a "dir/" form), sorted.
	List(ctx context.Context, prefix string) ([]string, error)
	// Quarantine moves a damaged blob out of the way (kept for inspection, no longer listed or
	// opened), so that its name can be written again; ErrNotFound when there is none. A backend may
	// refuse for blobs it cannot move (FSBackend: packed ones).
	Quarantine(ctx context.Context, name string) error
}

// Blob is an open blob: ranged reads and its size.
type Blob interface {
	io.ReaderAt
	io.Closer
	Size() int64
}

// CreateEach is CreateBatch for a backend without batches: one Create after the other.
func CreateEach(ctx context.Context, be Backend, blobs []NewBlob) ([]bool, error) {
	created := make([]bool, len(blobs))
	for i, b := range blobs {
		c, err := be.Create(ctx, b.Name, bytes.NewReader(b.Data))
		if err != nil {
			return created, err
		}
		created[i] = c
	}
	return created, nil
}

// FSBackend keeps blobs under a root directory. Blobs up to packMaxBlob (1 MiB) go into pack files
// under root/packs (pack.go): appended, fsynced once per batch of concurrent writes, indexed; so a
// store of many small objects is a few files. Larger blobs are files of their own: names use '/'
// and become paths; the writer puts a blob in root/tmp first (fsynced), then hard-links it to its
// name, so that exactly one writer creates a name and readers see whole files only. Filesystems
// without hard links fall back to rename (last writer wins, still atomic). Both kinds are read
// under the same names.
type FSBackend struct {
	root  string
	packs *packSet // nil where packs are unsupported (no flock)

	wmu    sync.Mutex
	w      *packWriter // claimed on the first packed write, given up after writerIdle unused
	wUsers int         // writes between writer() and doneWriter()
	wIdle  *time.Timer
}

// NewFSBackend returns a backend on root, creating root and root/tmp.
func NewFSBackend(root string) (*FSBackend, error) {
	return newFSBackend(root, packsSupported)
}

// newFSBackend is NewFSBackend with packs on or off (tests that damage single files turn them off).
func newFSBackend(root string, packs bool) (*FSBackend, error) {
	if err := os.MkdirAll(filepath.Join(root, "tmp"), 0o755); err != nil {
		return nil, fmt.Errorf("store: creating %s: %w", root, err)
	}
	b := &FSBackend{root: root}
	if packs {
		b.packs = newPackSet(filepath.Join(root, packDir))
	}
	return b, nil
}

func (b *FSBackend) path(name string) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	return filepath.Join(b.root, filepath.FromSlash(name)), nil
}

// checkName refuses blob names that could leave the store's namespace or collide with its own
// directories (every backend checks names with it).
func checkName(name string) error {
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, "\\") {
		return fmt.Errorf("store: bad blob name %q", name)
	}
	if len(name) > maxNameLen {
		return fmt.Errorf("store: blob name of %d bytes", len(name))
	}
	for i, part := range strings.Split(name, "/") {
		if part == "" || part == "." || part == ".." || (i == 0 && (part == "tmp" || part == packDir || part == "quarantine")) {
			return fmt.Errorf("store: bad blob name %q", name)
		}
	}
	return nil
}

// Create implements Backend.
func (b *FSBackend) Create(ctx context.Context, name string, r io.Reader) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	dst, err := b.path(name)
	if err != nil {
		return false, err
	}
	if b.packs != nil {
		data, rest, err := smallBlob(r)
		if err != nil {
			return false, fmt.Errorf("store: writing %s: %w", name, err)
		}
		if rest == nil {
			created, err := b.CreateBatch(ctx, []NewBlob{{name, data}})
			return err == nil && created[0], err
		}
		r = rest
		if _, ok, err := b.packs.lookup(name); ok || err != nil {
			return false, err
		}
	}
	return b.createFile(ctx, name, dst, r)
}

// streamsCreates: Create writes a blob as it reads it (copyDirect), at the memory of a buffer.
func (b *FSBackend) streamsCreates() {}

// smallBlob reads r whole when it is at most packMaxBlob long (rest nil); else rest reads all of r.
func smallBlob(r io.Reader) (data []byte, rest io.Reader, err error) {
	size := int64(-1)
	if s, ok := r.(interface{ Size() int64 }); ok {
		if size = s.Size(); size > packMaxBlob {
			return nil, r, nil
		}
	}
	if s, ok := r.(interface{ SizeAtLeast() int64 }); ok && s.SizeAtLeast() > packMaxBlob {
		return nil, r, nil // a stream of unknown length that is long whenever it is read whole
	}
	if bb, ok := r.(*BytesBlob); ok {
		data = bytes.Join(bb.parts, nil)
		if int64(len(data)) != size {
			return nil, nil, fmt.Errorf("blob of %d bytes, it said %d", len(data), size)
		}
		return data, nil, nil
	}
	data, err = io.ReadAll(io.LimitReader(r, packMaxBlob+1))
	switch {
	case err != nil:
		return nil, nil, err
	case size >= 0 && int64(len(data)) != size:
		return nil, nil, fmt.Errorf("read %d bytes, the reader said %d", len(data), size)
	case len(data) > packMaxBlob:
		return nil, io.MultiReader(bytes.NewReader(data), r), nil
	}
	return data, nil, nil
}

// createFile writes a blob as a file of its own.
func (b *FSBackend) createFile(ctx context.Context, name, dst string, r io.Reader) (bool, error) {
	if _, err := os.Lstat(dst); err == nil {
		return false, nil
	}
	tmp, err := os.CreateTemp(filepath.Join(b.root, "tmp"), "blob-*")
	if errors.Is(err, fs.ErrNotExist) { // tmp/ removed behind our back: recreate it once
		if err = os.MkdirAll(filepath.Join(b.root, "tmp"), 0o755); err == nil {
			tmp, err = os.CreateTemp(filepath.Join(b.root, "tmp"), "blob-*")
		}
	}
	if err != nil {
		return false, fmt.Errorf("store: writing %s: %w", name, err)
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName) // the link (or rename) keeps the data; drop the temp name
	size := int64(-1)
	if s, ok := r.(interface{ Size() int64 }); ok {
		size = s.Size()
		preallocate(tmp, size)
	}
	var n int64
	if bb, ok := r.(*BytesBlob); ok {
		n, err = bb.writeFile(tmp)
	} else {
		n, err = copyDirect(tmp, r)
	}
	if err == nil && size >= 0 && n != size {
		err = fmt.Errorf("wrote %d bytes, the reader said %d", n, size)
	}
	if err != nil {
		tmp.Close()
		return false, fmt.Errorf("store: writing %s: %w", name, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return false, fmt.Errorf("store: writing %s: sync: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return false, fmt.Errorf("store: writing %s: %w", name, err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return false, fmt.Errorf("store: writing %s: %w", name, err)
	}
	err = os.Link(tmpName, dst)
	switch {
	case err == nil:
		return true, syncDir(filepath.Dir(dst), name)
	case errors.Is(err, fs.ErrExist):
		return false, nil
	}
	// No hard links here (some network or FUSE filesystems): rename is atomic too, and blobs of one
	// name always hold equivalent content, so last-writer-wins is acceptable.
	if _, serr := os.Lstat(dst); serr == nil {
		return false, nil
	}
	if rerr := os.Rename(tmpName, dst); rerr != nil {
		return false, fmt.Errorf("store: writing %s: link: %v; rename: %w", name, err, rerr)
	}
	return true, syncDir(filepath.Dir(dst), name)
}

// syncDir makes a new directory entry durable.
func syncDir(dir, name string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("store: writing %s: %w", name, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("store: writing %s: sync dir: %w", name, err)
	}
	return nil
}

// CleanTemp removes temporary files older than age that writers killed mid-write left in root/tmp,
// and pack files whose creator died before their index was in place.
// Files of live writers are younger; pass an age well above the longest write (an hour, say).
func (b *FSBackend) CleanTemp(age time.Duration) (removed int, err error) {
	dir := filepath.Join(b.root, "tmp")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("store: cleaning %s: %w", dir, err)
	}
	cutoff := time.Now().Add(-age)
	for path, mtime := range b.strayPacks() {
		if mtime.Before(cutoff) && os.Remove(path) == nil {
			removed++
		}
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !info.ModTime().Before(cutoff) {
			continue
		}
		if os.Remove(filepath.Join(dir, e.Name())) == nil {
			removed++
		}
	}
	return removed, nil
}

type fsBlob struct {
	*os.File
	size int64
}

func (f fsBlob) Size() int64 { return f.size }

// Section streams n bytes at off; long sections skip the page cache (openDirectSection).
func (f fsBlob) Section(off, n int64) (io.ReadCloser, error) {
	if d, ok := openDirectSection(f.Name(), off, n); ok {
		return d, nil
	}
	return io.NopCloser(io.NewSectionReader(f, off, n)), nil
}

// Open implements Backend.
func (b *FSBackend) Open(ctx context.Context, name string) (Blob, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := b.path(name)
	if err != nil {
		return nil, err
	}
	if b.packs != nil {
		if err := b.packs.fresh(); err != nil {
			return nil, err
		}
		if l, ok := b.packs.get(name); ok {
			return l.blob(), nil
		}
	}
	f, err := os.Open(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if b.packs != nil {
				if l, ok, err := b.packs.lookup(name); ok || err != nil {
					if err != nil {
						return nil, err
					}
					return l.blob(), nil
				}
			}
			return nil, fmt.Errorf("store: %s: %w", name, ErrNotFound)
		}
		return nil, fmt.Errorf("store: opening %s: %w", name, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("store: opening %s: %w", name, err)
	}
	return fsBlob{File: f, size: st.Size()}, nil
}

// Exists implements Backend.
func (b *FSBackend) Exists(ctx context.Context, name string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	return b.exists(name)
}

// List implements Backend.
func (b *FSBackend) List(ctx context.Context, prefix string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := b.path(strings.TrimSuffix(prefix, "/"))
	if err != nil {
		return nil, err
	}
	var out []string
	err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, err := filepath.Rel(b.root, path)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: listing %s: %w", prefix, err)
	}
	if b.packs != nil {
		if err := b.packs.refresh(); err != nil {
			return nil, err
		}
		out = append(out, b.packs.list(prefix)...)
	}
	sort.Strings(out)
	return slices.Compact(out), nil
}
