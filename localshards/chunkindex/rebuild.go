package chunkindex

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/lfsobject"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/span"
)

// Object is a local object the index has no map of, handed to Rebuild's indexer.
type Object struct {
	Oid  string
	Size int64
	Path string
}

// Bounds of one rebuild: the newest objects first, up to this many bytes read and this many objects
// (each costs a chunking pass over its bytes and a plan asked of the CAS).
const (
	RebuildBytes   = 4 << 30
	RebuildObjects = 256
)

// indexedMark is the file saying the objects here were indexed once (see Rebuild).
const indexedMark = "indexed"

// Rebuild indexes, once per index, the objects already here: when the index was lost (or was made
// before rebuilds existed), the objects of MinBytes or more that have no map are handed to index,
// newest first, within maxBytes and maxObjects, and the spans it returns are recorded. An object
// index fails on is skipped. The index is then marked, so later calls return at once; uploads and
// downloads keep it up to date from there. A process finding another one rebuilding returns
// ErrBusy without waiting. An index that fails with a context's error (the caller was stopped:
// Ctrl-C, SIGTERM) stops the rebuild unmarked, that error returned, so that the next process
// indexes what this one did not reach. It returns the number of objects recorded.
func (x *Index) Rebuild(maxBytes int64, maxObjects int, index func(Object) (hash.Hash, []span.Span, error)) (int, error) {
	mark := filepath.Join(x.dir, indexedMark)
	if _, err := os.Stat(mark); err == nil {
		return 0, nil
	}
	if err := os.MkdirAll(x.dir, 0o755); err != nil {
		return 0, err
	}
	lf, err := os.OpenFile(filepath.Join(x.dir, "rebuild.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return 0, err
	}
	defer lf.Close()
	if err := lockFile(lf); err != nil {
		return 0, err
	}
	if _, err := os.Stat(mark); err == nil {
		return 0, nil // the process that held the lock did it
	}
	n := 0
	for _, o := range x.unindexed(maxBytes, maxObjects) {
		file, spans, err := index(o)
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return n, err
		}
		if err != nil {
			continue
		}
		if err := x.Record(o.Oid, o.Size, file, spans); err == nil {
			n++
		}
	}
	return n, writeFile(x.dir, indexedMark, nil)
}

// unindexed lists the objects of MinBytes or more without a map, newest first, within the bounds.
func (x *Index) unindexed(maxBytes int64, maxObjects int) []Object {
	type found struct {
		Object
		t time.Time
	}
	var all []found
	filepath.WalkDir(x.objects, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !lfsobject.ValidOid(d.Name()) || path != x.ObjectPath(d.Name()) {
			return nil
		}
		info, err := d.Info()
		if err != nil || !info.Mode().IsRegular() || info.Size() < MinBytes {
			return nil
		}
		if _, err := os.Stat(x.mapPath(d.Name())); !errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		all = append(all, found{Object{Oid: d.Name(), Size: info.Size(), Path: path}, info.ModTime()})
		return nil
	})
	sort.Slice(all, func(a, b int) bool { return all[a].t.After(all[b].t) })
	var out []Object
	var bytes int64
	for _, f := range all {
		if len(out) >= maxObjects || bytes+f.Size > maxBytes {
			break
		}
		out = append(out, f.Object)
		bytes += f.Size
	}
	return out
}
