package s3

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
)

// ListInfo implements blob.Backend (ListObjectsV2 gives size and last-modified time).
func (b *Backend) ListInfo(ctx context.Context, prefix string) ([]blob.Info, error) {
	var out []blob.Info
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // a return on an error stops minio's listing goroutine
	for o := range b.c.ListObjects(ctx, b.bucket, minio.ListObjectsOptions{Prefix: b.prefix + prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, fmt.Errorf("store: listing %s: %w", prefix, o.Err)
		}
		out = append(out, blob.Info{Name: strings.TrimPrefix(o.Key, b.prefix), Size: o.Size, ModTime: o.LastModified})
	}
	return out, nil
}

// Move implements blob.Backend: a server-side COPY (the copy's last-modified time is now), then DELETE
// of the source.
func (b *Backend) Move(ctx context.Context, from, to string) error {
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
func (b *Backend) moveKey(ctx context.Context, from, src, dst string) error {
	_, err := b.c.CopyObject(ctx, minio.CopyDestOptions{Bucket: b.bucket, Object: dst}, minio.CopySrcOptions{Bucket: b.bucket, Object: src})
	if notFound(err) {
		return fmt.Errorf("store: %s: %w", from, blob.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("store: moving %s: %w", from, err)
	}
	if err := b.c.RemoveObject(ctx, b.bucket, src, minio.RemoveObjectOptions{}); err != nil {
		return fmt.Errorf("store: moving %s: %w", from, err)
	}
	return nil
}

// Delete implements blob.Backend. S3's DELETE succeeds on a missing key, so it asks HEAD first to
// report ErrNotFound.
func (b *Backend) Delete(ctx context.Context, name string) error {
	k, err := b.key(name)
	if err != nil {
		return err
	}
	if ok, err := b.Exists(ctx, name); err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("store: %s: %w", name, blob.ErrNotFound)
		}
		return err
	}
	if err := b.c.RemoveObject(ctx, b.bucket, k, minio.RemoveObjectOptions{}); err != nil {
		return fmt.Errorf("store: deleting %s: %w", name, err)
	}
	return nil
}

// CleanTemp implements blob.Backend: it aborts the multipart uploads under the prefix begun more
// than age ago (a writer that died mid-upload): their parts are stored, and billed, until aborted.
// An object with a younger upload in progress is left alone. ctx bounds the listing and aborts.
func (b *Backend) CleanTemp(ctx context.Context, age time.Duration) (removed int, err error) {
	cutoff := time.Now().Add(-age)
	old := map[string]bool{}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel() // a return on an error stops minio's listing goroutine
	for u := range b.c.ListIncompleteUploads(lctx, b.bucket, b.prefix, true) {
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
