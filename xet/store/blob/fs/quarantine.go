package fs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-xet-transfer/git-xet-transfer/internal/fsretry"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
)

// Quarantine implements blob.Backend: a blob that is a file of its own is renamed into
// quarantine/ (its name with "/" as "_"; kept for inspection, out of every listing); packed blobs
// cannot be moved (an error).
func (b *Backend) Quarantine(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p, err := b.path(name)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
		if b.packs != nil {
			if _, ok, _ := b.packs.lookup(name); ok {
				return fmt.Errorf("store: %s is packed and cannot be moved aside (fsck reports it)", name)
			}
		}
		return fmt.Errorf("store: %s: %w", name, blob.ErrNotFound)
	}
	dir := filepath.Join(b.root, "quarantine")
	if err := mkdirDurable(dir, b.root); err != nil {
		return fmt.Errorf("store: quarantine: %w", err)
	}
	dst := filepath.Join(dir, strings.ReplaceAll(name, "/", "_"))
	if err := fsretry.Rename(p, dst); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("store: %s: %w", name, blob.ErrNotFound)
		}
		return fmt.Errorf("store: quarantine %s: %w", name, err)
	}
	// The new entry first: until it is durable, the old one is the only copy a power loss keeps.
	if err := syncDir(dir, name); err != nil {
		return err
	}
	return syncDir(filepath.Dir(p), name)
}
