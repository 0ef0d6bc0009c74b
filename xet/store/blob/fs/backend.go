// Package fs keeps blobs in a directory (blob.Backend): small ones in append-only pack files
// (pack.go, packwriter.go; looked up on disk through each pack's sorted index, sorted.go, and in
// memory only among the entries written since, packset.go; rewritten by packsweep.go), larger ones
// as files of their own, written with O_DIRECT where the filesystem allows it (direct_linux.go).
// Create and CreateBatch return once the blob is durable; small blobs of concurrent writes share a
// pack's fdatasync (fsbatch.go).
//
// Concurrency: a Backend is safe for concurrent use by goroutines and by several processes sharing
// one directory (each pack has one writer at a time, by flock).
package fs

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

	"github.com/git-xet-transfer/git-xet-transfer/internal/fsretry"
	"github.com/git-xet-transfer/git-xet-transfer/internal/regfile"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
)

// Backend keeps blobs under a root directory. Blobs up to packMaxBlob (1 MiB) go into pack files
// under root/packs (pack.go): appended, fsynced once per batch of concurrent writes, indexed; so a
// store of many small objects is a few files. Larger blobs are files of their own: names use '/'
// and become paths; the writer puts a blob in root/tmp first (fsynced), then hard-links it to its
// name, so that exactly one writer creates a name and readers see whole files only. Filesystems
// without hard links fall back to rename (last writer wins, still atomic). Both kinds are read
// under the same names.
type Backend struct {
	root  string
	packs *packSet // nil where packs are unsupported (no flock)

	wmu    sync.Mutex
	w      *packWriter // claimed on the first packed write, given up after writerIdle unused
	wUsers int         // writes between writer() and doneWriter()
	wIdle  *time.Timer
}

// Options configures a Backend.
type Options struct {
	// Loose keeps every blob a file of its own (no packs), as on platforms without flock: for
	// tests that damage single blobs on disk.
	Loose bool
}

// New returns a backend on root, creating root (durable: mkdirRootDurable) and root/tmp.
func New(root string, opts Options) (*Backend, error) {
	if err := mkdirRootDurable(root); err != nil {
		return nil, fmt.Errorf("store: creating %s: %w", root, err)
	}
	if err := os.MkdirAll(filepath.Join(root, "tmp"), 0o755); err != nil {
		return nil, fmt.Errorf("store: creating %s: %w", root, err)
	}
	b := &Backend{root: root}
	if packsSupported && !opts.Loose {
		b.packs = newPackSet(filepath.Join(root, packDir))
	}
	return b, nil
}

func (b *Backend) path(name string) (string, error) {
	if err := blob.CheckName(name); err != nil {
		return "", err
	}
	return filepath.Join(b.root, filepath.FromSlash(name)), nil
}

// Create implements blob.Backend.
func (b *Backend) Create(ctx context.Context, name string, r io.Reader) (bool, error) {
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
			created, err := b.CreateBatch(ctx, []blob.NewBlob{{Name: name, Data: data}})
			return err == nil && created[0], err
		}
		r = rest
		if _, ok, err := b.packs.lookup(name); ok || err != nil {
			return false, err
		}
	}
	return b.createFile(ctx, name, dst, r)
}

// smallBlob reads r whole when it is at most packMaxBlob long (rest nil); else rest reads all of r.
func smallBlob(r io.Reader) (data []byte, rest io.Reader, err error) {
	size := int64(-1)
	if s, ok := r.(blob.Sized); ok {
		if size = s.Size(); size > packMaxBlob {
			return nil, r, nil
		}
	}
	if s, ok := r.(blob.LongStream); ok && s.SizeAtLeast() > packMaxBlob {
		return nil, r, nil // a stream of unknown length that is long whenever it is read whole
	}
	if bb, ok := r.(*blob.BytesBlob); ok {
		data = bytes.Join(bb.Parts(), nil)
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
func (b *Backend) createFile(ctx context.Context, name, dst string, r io.Reader) (bool, error) {
	if _, err := os.Lstat(dst); err == nil {
		return false, b.durableExisting(name, dst)
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
	defer fsretry.Remove(tmpName) // the link (or rename) keeps the data; drop the temp name
	size := int64(-1)
	if s, ok := r.(blob.Sized); ok {
		size = s.Size()
		preallocate(tmp, size)
	}
	var n int64
	if bb, ok := r.(*blob.BytesBlob); ok {
		n, err = writeParts(tmp, bb)
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
	if err := mkdirDurable(filepath.Dir(dst), b.root); err != nil {
		return false, fmt.Errorf("store: writing %s: %w", name, err)
	}
	err = os.Link(tmpName, dst)
	switch {
	case err == nil:
		return true, syncDir(filepath.Dir(dst), name)
	case errors.Is(err, fs.ErrExist):
		return false, b.durableExisting(name, dst)
	}
	// No hard links here (some network or FUSE filesystems): rename is atomic too, and blobs of one
	// name always hold equivalent content, so last-writer-wins is acceptable.
	if _, serr := os.Lstat(dst); serr == nil {
		return false, b.durableExisting(name, dst)
	}
	if rerr := fsretry.Rename(tmpName, dst); rerr != nil {
		return false, fmt.Errorf("store: writing %s: link: %v; rename: %w", name, err, rerr)
	}
	return true, syncDir(filepath.Dir(dst), name)
}

// durableExisting returns once the blob another writer stored at dst is durable: that writer may have
// linked it and not yet synced its directory, and the caller reports the blob stored.
func (b *Backend) durableExisting(name, dst string) error {
	if err := mkdirDurable(filepath.Dir(dst), b.root); err != nil {
		return fmt.Errorf("store: writing %s: %w", name, err)
	}
	return syncDir(filepath.Dir(dst), name)
}

// writeParts writes the whole blob to f, a new empty file: an aligned bulk of the first part with
// O_DIRECT when possible, the rest through f. It returns the bytes written.
func writeParts(f *os.File, bb *blob.BytesBlob) (int64, error) {
	var off int64
	for i, p := range bb.Parts() {
		if i == 0 && len(p) > 0 {
			d := writeDirect(f.Name(), p)
			p = p[d:]
			off += int64(d)
		}
		for len(p) > 0 {
			k, err := f.WriteAt(p, off)
			off += int64(k)
			p = p[k:]
			if err != nil {
				return off, err
			}
		}
	}
	return off, nil
}

// syncDirHook, when set (by tests), sees each directory syncDir syncs.
var syncDirHook func(dir string)

// syncDir makes the entries of dir durable; name is the blob they are for, for errors.
func syncDir(dir, name string) error {
	if syncDirHook != nil {
		syncDirHook(dir)
	}
	if err := flushDir(dir); err != nil {
		return fmt.Errorf("store: writing %s: sync dir: %w", name, err)
	}
	return nil
}

// CleanTemp implements blob.Backend: it removes the temporary files in root/tmp and the pack
// files without an index (their creator died before the index was in place) older than age.
func (b *Backend) CleanTemp(ctx context.Context, age time.Duration) (removed int, err error) {
	dir := filepath.Join(b.root, "tmp")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("store: cleaning %s: %w", dir, err)
	}
	cutoff := time.Now().Add(-age)
	for path, mtime := range b.strayPacks() {
		if err := ctx.Err(); err != nil {
			return removed, err
		}
		if mtime.Before(cutoff) && fsretry.Remove(path) == nil {
			removed++
		}
	}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return removed, err
		}
		info, err := e.Info()
		if err != nil || !info.ModTime().Before(cutoff) {
			continue
		}
		if fsretry.Remove(filepath.Join(dir, e.Name())) == nil {
			removed++
		}
	}
	return removed, nil
}

// Features implements blob.Backend: Create writes a blob as it reads it (copyDirect), at the memory
// of a buffer, and reads go through the page cache.
func (b *Backend) Features() blob.Features {
	return blob.Features{StreamsCreates: true, CachedReads: true}
}

// Check implements blob.Checker: packed blobs whose bytes no longer match their checksums, and
// the files in root/tmp and stray packs (interrupted writes).
func (b *Backend) Check(ctx context.Context) (damaged map[string]string, temp int, err error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	if ents, err := os.ReadDir(filepath.Join(b.root, "tmp")); err == nil {
		temp = len(ents)
	}
	if b.packs == nil {
		return nil, temp, nil
	}
	damaged, err = b.packs.verify()
	if err != nil {
		return nil, 0, err
	}
	return damaged, temp + b.strayPackFiles(), nil
}

// fsBlob is a blob that is a file of its own.
type fsBlob struct {
	f    *os.File
	size int64
}

func (b fsBlob) Size() int64  { return b.size }
func (b fsBlob) Close() error { return b.f.Close() }

// File implements blob.Filer.
func (b fsBlob) File() *os.File { return b.f }

// ReadAt implements blob.Blob.
func (b fsBlob) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	return b.f.ReadAt(p, off)
}

// Section streams n bytes at off; long sections skip the page cache (openDirectSection).
func (b fsBlob) Section(_ context.Context, off, n int64) (io.ReadCloser, error) {
	if d, ok := openDirectSection(b.f.Name(), off, n); ok {
		return d, nil
	}
	return io.NopCloser(io.NewSectionReader(b.f, off, n)), nil
}

// Open implements blob.Backend.
func (b *Backend) Open(ctx context.Context, name string) (blob.Blob, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := blob.CheckName(name); err != nil {
		return nil, err
	}
	if b.packs != nil {
		if err := b.packs.fresh(); err != nil {
			return nil, err
		}
		if l, ok, err := b.packs.get(name); ok || err != nil {
			if err != nil {
				return nil, err
			}
			return l.blob(), nil
		}
	}
	p, err := b.path(name) // after the packs: joining it costs a small blob's lookup a tenth
	if err != nil {
		return nil, err
	}
	f, err := regfile.Open(p, os.O_RDONLY)
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
			return nil, fmt.Errorf("store: %s: %w", name, blob.ErrNotFound)
		}
		return nil, fmt.Errorf("store: opening %s: %w", name, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("store: opening %s: %w", name, err)
	}
	return fsBlob{f: f, size: st.Size()}, nil
}

// Exists implements blob.Backend.
func (b *Backend) Exists(ctx context.Context, name string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	return b.exists(name)
}

// List implements blob.Backend.
func (b *Backend) List(ctx context.Context, prefix string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out, err := b.listFiles(ctx, prefix)
	if err != nil {
		return nil, err
	}
	if b.packs != nil {
		packed, err := b.packs.all(prefix)
		if err != nil {
			return nil, err
		}
		for _, p := range packed {
			out = append(out, p.name)
		}
	}
	sort.Strings(out)
	return slices.Compact(out), nil
}

// listFiles lists the blobs under prefix that are files of their own.
func (b *Backend) listFiles(ctx context.Context, prefix string) ([]string, error) {
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
	return out, nil
}
