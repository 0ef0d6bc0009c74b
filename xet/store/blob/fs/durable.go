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
	if _, ok := durableDirs.Load(dir); ok {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	top = filepath.Clean(top)
	for d := filepath.Clean(dir); d != top && strings.HasPrefix(d, top); d = filepath.Dir(d) {
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		if err := syncDir(parent, d); err != nil {
			return fmt.Errorf("making %s durable: %w", d, err)
		}
	}
	durableDirs.Store(dir, true)
	return nil
}
