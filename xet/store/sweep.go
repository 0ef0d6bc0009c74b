package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
)

// Sweeper is a Backend whose blobs can be listed with their ages, moved and deleted: what garbage
// collection (Store.Collect) needs. Both backends implement it.
type Sweeper interface {
	Backend
	// ListInfo is List with each blob's size and last write time. FSBackend reports a packed blob
	// with its pack's modification time (never earlier than the blob's own write) and Packed set.
	ListInfo(ctx context.Context, prefix string) ([]BlobInfo, error)
	// Move gives the blob from the name to (replacing a blob there, which the store only does with
	// the same content) and stamps it with the current time. ErrNotFound when from is missing;
	// ErrPacked for a packed blob.
	Move(ctx context.Context, from, to string) error
	// Delete removes a blob. ErrNotFound when it is missing; ErrPacked for a packed blob.
	Delete(ctx context.Context, name string) error
}

// TempCleaner is a backend that removes what writers killed mid-write left: FSBackend's temp files
// and stray packs, S3Backend's unfinished multipart uploads.
type TempCleaner interface {
	CleanTemp(age time.Duration) (removed int, err error)
}

// BlobInfo is one listed blob.
type BlobInfo struct {
	Name    string
	Size    int64
	ModTime time.Time
	Packed  bool // in an FSBackend pack: cannot be moved or deleted one by one
}

// ErrPacked: the blob lives in a pack file, which gc does not rewrite (see Collect).
var ErrPacked = errors.New("packed blob: not moved or deleted one by one")

// ListInfo implements Sweeper.
func (b *FSBackend) ListInfo(ctx context.Context, prefix string) ([]BlobInfo, error) {
	names, err := b.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	out := make([]BlobInfo, 0, len(names))
	packMtime := map[*packReader]time.Time{}
	for _, name := range names {
		p, _ := b.path(name)
		if fi, err := os.Lstat(p); err == nil {
			out = append(out, BlobInfo{Name: name, Size: fi.Size(), ModTime: fi.ModTime()})
			continue
		}
		l, ok := b.packs.get(name)
		if !ok {
			continue // removed since it was listed
		}
		mt, seen := packMtime[l.r]
		if !seen {
			if fi, err := l.r.pack.Stat(); err == nil {
				mt = fi.ModTime()
			} else {
				mt = time.Now()
			}
			packMtime[l.r] = mt
		}
		out = append(out, BlobInfo{Name: name, Size: l.n, ModTime: mt, Packed: true})
	}
	return out, nil
}

// Move implements Sweeper: a rename within the store's directory.
func (b *FSBackend) Move(ctx context.Context, from, to string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	src, err := b.loose(from)
	if err != nil {
		return err
	}
	dst, err := b.path(to)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("store: moving %s: %w", from, err)
	}
	now := time.Now()
	if err := os.Chtimes(src, now, now); err != nil {
		return fmt.Errorf("store: moving %s: %w", from, err)
	}
	if err := os.Rename(src, dst); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("store: %s: %w", from, ErrNotFound)
		}
		return fmt.Errorf("store: moving %s: %w", from, err)
	}
	return syncDir(filepath.Dir(dst), to)
}

// Delete implements Sweeper.
func (b *FSBackend) Delete(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p, err := b.loose(name)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("store: %s: %w", name, ErrNotFound)
		}
		return fmt.Errorf("store: deleting %s: %w", name, err)
	}
	return nil
}

// loose returns the path of a blob that is a file of its own: ErrPacked for a packed one,
// ErrNotFound for none.
func (b *FSBackend) loose(name string) (string, error) {
	p, err := b.path(name)
	if err != nil {
		return "", err
	}
	if _, err := os.Lstat(p); err == nil {
		return p, nil
	}
	if b.packs != nil {
		if _, ok, err := b.packs.lookup(name); ok || err != nil {
			if err == nil {
				err = fmt.Errorf("store: %s: %w", name, ErrPacked)
			}
			return "", err
		}
	}
	return "", fmt.Errorf("store: %s: %w", name, ErrNotFound)
}

// ListInfo implements Sweeper (ListObjectsV2 gives size and last-modified time).
func (b *S3Backend) ListInfo(ctx context.Context, prefix string) ([]BlobInfo, error) {
	var out []BlobInfo
	for o := range b.c.ListObjects(ctx, b.bucket, minio.ListObjectsOptions{Prefix: b.prefix + prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, fmt.Errorf("store: listing %s: %w", prefix, o.Err)
		}
		out = append(out, BlobInfo{Name: strings.TrimPrefix(o.Key, b.prefix), Size: o.Size, ModTime: o.LastModified})
	}
	return out, nil
}

// Move implements Sweeper: a server-side COPY (the copy's last-modified time is now), then DELETE
// of the source.
func (b *S3Backend) Move(ctx context.Context, from, to string) error {
	src, err := b.key(from)
	if err != nil {
		return err
	}
	dst, err := b.key(to)
	if err != nil {
		return err
	}
	return b.moveKey(ctx, from, src, dst)
}

// moveKey is Move by keys (Quarantine's destination is outside the blob namespace).
func (b *S3Backend) moveKey(ctx context.Context, from, src, dst string) error {
	_, err := b.c.CopyObject(ctx, minio.CopyDestOptions{Bucket: b.bucket, Object: dst}, minio.CopySrcOptions{Bucket: b.bucket, Object: src})
	if notFound(err) {
		return fmt.Errorf("store: %s: %w", from, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("store: moving %s: %w", from, err)
	}
	if err := b.c.RemoveObject(ctx, b.bucket, src, minio.RemoveObjectOptions{}); err != nil {
		return fmt.Errorf("store: moving %s: %w", from, err)
	}
	return nil
}

// Delete implements Sweeper. S3's DELETE succeeds on a missing key, so it asks HEAD first to
// report ErrNotFound.
func (b *S3Backend) Delete(ctx context.Context, name string) error {
	k, err := b.key(name)
	if err != nil {
		return err
	}
	if ok, err := b.Exists(ctx, name); err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("store: %s: %w", name, ErrNotFound)
		}
		return err
	}
	if err := b.c.RemoveObject(ctx, b.bucket, k, minio.RemoveObjectOptions{}); err != nil {
		return fmt.Errorf("store: deleting %s: %w", name, err)
	}
	return nil
}

// CleanTemp aborts multipart uploads begun more than age ago (PUTs of large blobs by an instance
// that died mid-write): their parts are stored, and billed, until aborted. An object with a
// younger upload in progress is left alone. It is FSBackend.CleanTemp's counterpart.
func (b *S3Backend) CleanTemp(age time.Duration) (removed int, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cutoff := time.Now().Add(-age)
	old := map[string]bool{}
	for u := range b.c.ListIncompleteUploads(ctx, b.bucket, b.prefix, true) {
		if u.Err != nil {
			return 0, fmt.Errorf("store: listing unfinished uploads: %w", u.Err)
		}
		if stale, seen := old[u.Key]; !seen || stale {
			old[u.Key] = u.Initiated.Before(cutoff)
		}
	}
	for key, stale := range old {
		if !stale {
			continue
		}
		if err := b.c.RemoveIncompleteUpload(ctx, b.bucket, key); err != nil {
			return removed, fmt.Errorf("store: aborting an unfinished upload: %w", err)
		}
		removed++
	}
	return removed, nil
}
