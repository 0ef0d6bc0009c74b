package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
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
	// this one became visible. On error nothing is visible under name.
	Create(ctx context.Context, name string, r io.Reader) (created bool, err error)
	// Open opens a blob for ranged reads; a missing blob gives an error matching ErrNotFound.
	Open(ctx context.Context, name string) (Blob, error)
	// Exists reports whether a blob of that name exists.
	Exists(ctx context.Context, name string) (bool, error)
	// List returns the names under prefix (a "dir/" form), sorted.
	List(ctx context.Context, prefix string) ([]string, error)
}

// Blob is an open blob: ranged reads and its size.
type Blob interface {
	io.ReaderAt
	io.Closer
	Size() int64
}

// FSBackend keeps blobs as files under a root directory. Names use '/' and become paths; the writer
// puts a blob in root/tmp first (fsynced), then hard-links it to its name, so that exactly one writer
// creates a name and readers see whole files only. Filesystems without hard links fall back to
// rename (last writer wins, still atomic).
type FSBackend struct {
	root string
}

// NewFSBackend returns a backend on root, creating root and root/tmp.
func NewFSBackend(root string) (*FSBackend, error) {
	if err := os.MkdirAll(filepath.Join(root, "tmp"), 0o755); err != nil {
		return nil, fmt.Errorf("store: creating %s: %w", root, err)
	}
	return &FSBackend{root: root}, nil
}

func (b *FSBackend) path(name string) (string, error) {
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, "\\") {
		return "", fmt.Errorf("store: bad blob name %q", name)
	}
	for i, part := range strings.Split(name, "/") {
		if part == "" || part == "." || part == ".." || (i == 0 && part == "tmp") {
			return "", fmt.Errorf("store: bad blob name %q", name)
		}
	}
	return filepath.Join(b.root, filepath.FromSlash(name)), nil
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
		n, err = io.Copy(tmp, r)
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

// CleanTemp removes temporary files older than age that writers killed mid-write left in root/tmp.
// Files of live writers are younger; pass an age well above the longest write (an hour, say).
func (b *FSBackend) CleanTemp(age time.Duration) (removed int, err error) {
	dir := filepath.Join(b.root, "tmp")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("store: cleaning %s: %w", dir, err)
	}
	cutoff := time.Now().Add(-age)
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

// Open implements Backend.
func (b *FSBackend) Open(ctx context.Context, name string) (Blob, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := b.path(name)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
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
	p, err := b.path(name)
	if err != nil {
		return false, err
	}
	_, err = os.Lstat(p)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("store: checking %s: %w", name, err)
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
	sort.Strings(out)
	return out, nil
}
