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

// mkdirRootDurable creates a store's root and its missing parents and, when it created any, makes
// their entries durable up to the nearest directory that existed. mkdirDurable stops at the root,
// but the root's own entry is on the path of every blob too: a local remote's first push makes
// remote.git/xet, and a power loss that drops that entry drops every blob reported stored in it.
// A root that existed is left alone (its creator made it durable), so opening a store costs no
// sync.
func mkdirRootDurable(root string) error {
	abs, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	top := abs
	for {
		if _, err := os.Lstat(top); err == nil {
			break
		}
		parent := filepath.Dir(top)
		if parent == top {
			break
		}
		top = parent
	}
	if top == abs {
		return nil
	}
	return mkdirDurable(abs, top)
}
