package fs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/fsretry"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
)

// ListInfo implements blob.Backend: a packed blob's time is its pack's.
func (b *Backend) ListInfo(ctx context.Context, prefix string) ([]blob.Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	files, err := b.listFiles(ctx, prefix)
	if err != nil {
		return nil, err
	}
	var packed []packListed
	if b.packs != nil {
		if packed, err = b.packs.all(prefix); err != nil {
			return nil, err
		}
	}
	out := make([]blob.Info, 0, len(files)+len(packed))
	loose := make(map[string]bool, len(files))
	for _, name := range files {
		p, _ := b.path(name)
		if fi, err := os.Lstat(p); err == nil {
			out = append(out, blob.Info{Name: name, Size: fi.Size(), ModTime: fi.ModTime()})
			loose[name] = true
		}
	}
	packMtime := map[*packReader]time.Time{}
	for _, p := range packed {
		if loose[p.name] {
			continue
		}
		l := p.loc
		mt, seen := packMtime[l.r]
		if !seen {
			if fi, err := l.r.pack.Stat(); err == nil {
				mt = fi.ModTime()
			} else {
				mt = time.Now()
			}
			packMtime[l.r] = mt
		}
		out = append(out, blob.Info{Name: p.name, Size: l.n, ModTime: mt, Packed: true})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Move implements blob.Backend: a rename within the store's directory.
func (b *Backend) Move(ctx context.Context, from, to string) error {
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
	if err := mkdirDurable(filepath.Dir(dst), b.root); err != nil {
		return fmt.Errorf("store: moving %s: %w", from, err)
	}
	now := time.Now()
	if err := os.Chtimes(src, now, now); err != nil {
		return fmt.Errorf("store: moving %s: %w", from, err)
	}
	if err := fsretry.Rename(src, dst); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("store: %s: %w", from, blob.ErrNotFound)
		}
		return fmt.Errorf("store: moving %s: %w", from, err)
	}
	return syncDir(filepath.Dir(dst), to)
}

// Delete implements blob.Backend.
func (b *Backend) Delete(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p, err := b.loose(name)
	if err != nil {
		return err
	}
	if err := fsretry.Remove(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("store: %s: %w", name, blob.ErrNotFound)
		}
		return fmt.Errorf("store: deleting %s: %w", name, err)
	}
	return nil
}

// loose returns the path of a blob that is a file of its own: blob.ErrPacked for a packed one,
// blob.ErrNotFound for none.
func (b *Backend) loose(name string) (string, error) {
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
				err = fmt.Errorf("store: %s: %w", name, blob.ErrPacked)
			}
			return "", err
		}
	}
	return "", fmt.Errorf("store: %s: %w", name, blob.ErrNotFound)
}
