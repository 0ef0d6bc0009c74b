package fs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// durableDirs: the directories mkdirDurable has made durable in this process. A store never
// removes its directories, so a directory made durable once stays so.
var durableDirs sync.Map

// mkdirDurable creates dir and its missing parents, and makes the entry of every directory from
// dir up to top (a parent of dir: the store's root) durable in its parent. A blob linked into dir
// survives a power loss only if dir's own entry does; on a file system without a journal that
// commits them together, syncing the blob's directory alone is not enough. The entries are synced
// whether or not this call created them: a directory another writer made a moment ago may not be
// durable yet.
func mkdirDurable(dir, top string) error {
	dir, top = filepath.Clean(dir), filepath.Clean(top)
	if _, ok := durableDirs.Load(dir); ok || dir == top || !strings.HasPrefix(dir, top) {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	parent := filepath.Dir(dir)
	if parent == dir {
		return nil
	}
	if err := syncDir(parent, dir); err != nil {
		return fmt.Errorf("making %s durable: %w", dir, err)
	}
	// The parent's own entry next: once per process, then cached like this one.
	if err := mkdirDurable(parent, top); err != nil {
		return err
	}
	durableDirs.Store(dir, true)
	return nil
}
