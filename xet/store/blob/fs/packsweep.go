package fs

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/git-xet-transfer/git-xet-transfer/internal/fsretry"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
)

// sweepBatchBytes bounds the live data a pack rewrite holds in memory at once.
const sweepBatchBytes = 64 << 20

// SweepPacked applies changes to packed blobs by rewriting the packs that hold them: every other
// blob of such a pack, and the renamed ones under their new names, are written to this process's
// pack and made durable, then the old pack is removed. A pack another writer holds (a running
// server's current pack) is left for a later run; applied lists the changes made. Other processes notice a
// removed pack within PackStaleness (their reads of it go on working meanwhile: the files stay
// open). A crash part-way leaves blobs in two packs (harmless) or a .pack without its index,
// which CleanTemp removes.
func (b *Backend) SweepPacked(ctx context.Context, changes []blob.PackChange) (applied []blob.PackChange, err error) {
	if b.packs == nil || len(changes) == 0 {
		return nil, nil
	}
	byPack := map[string]map[string]string{}
	hints := map[string]recoverHint{}
	for _, c := range changes {
		l, ok, err := b.packs.lookup(c.Name)
		if err != nil {
			return applied, err
		}
		if !ok {
			continue
		}
		if byPack[l.r.id] == nil {
			byPack[l.r.id] = map[string]string{}
			b.packs.mu.RLock()
			hints[l.r.id] = l.r.hint()
			b.packs.mu.RUnlock()
		}
		byPack[l.r.id][c.Name] = c.To
	}
	// Every pack to rewrite is locked before anything is written, so that the writer this process
	// claims for the rewritten blobs is none of them.
	var locked []*lockedPack
	defer func() {
		for _, lp := range locked {
			lp.pack.Close()
			lp.idx.Close() // the lock goes with idx
		}
	}()
	for id, change := range byPack {
		pack, idx, _, idxEnd, err := lockAndRecover(b.packs.dir, id, hints[id])
		if err != nil {
			return nil, err
		}
		if pack != nil {
			locked = append(locked, &lockedPack{id, pack, idx, idxEnd, change})
		}
	}
	for _, lp := range locked {
		if err := ctx.Err(); err != nil {
			return applied, err
		}
		done, err := b.rewritePack(ctx, lp)
		if err != nil {
			return applied, err
		}
		applied = append(applied, done...)
	}
	return applied, nil
}

// lockedPack is a pack SweepPacked holds, and what to change in it.
type lockedPack struct {
	id        string
	pack, idx *os.File
	idxEnd    int64
	change    map[string]string
}

// rewritePack rewrites a locked pack without the blobs its change drops and with those it renames
// under their new names. A ctx that ends stops it between batches (writeForced): the pack stays
// whole, and what was written is a second copy, as after a crash.
func (b *Backend) rewritePack(ctx context.Context, lp *lockedPack) ([]blob.PackChange, error) {
	id, pack, change := lp.id, lp.pack, lp.change
	ib := make([]byte, lp.idxEnd)
	if _, err := lp.idx.ReadAt(ib, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("store: rewriting pack %s: %w", id, err)
	}
	es, _ := parseIndex(ib[len(idxMagic):])
	var applied []blob.PackChange
	seen := map[string]bool{}
	var batch []blob.NewBlob
	var batchBytes int64
	for _, e := range es {
		if seen[e.name] {
			continue
		}
		seen[e.name] = true
		name := e.name
		if to, ok := change[e.name]; ok {
			applied = append(applied, blob.PackChange{Name: e.name, To: to})
			if to == "" {
				continue
			}
			name = to
		}
		data := make([]byte, e.n)
		if _, err := pack.ReadAt(data, e.off); err != nil {
			return nil, fmt.Errorf("store: rewriting pack %s: %s: %w", id, e.name, err)
		}
		if crc32.Checksum(data, crcTable) != e.crc {
			return nil, fmt.Errorf("store: rewriting pack %s: %s is damaged on disk (run fsck); the pack was kept", id, e.name)
		}
		batch, batchBytes = append(batch, blob.NewBlob{Name: name, Data: data}), batchBytes+e.n
		if batchBytes >= sweepBatchBytes {
			if err := b.writeForced(ctx, batch); err != nil {
				return nil, err
			}
			batch, batchBytes = batch[:0], 0
		}
	}
	if err := b.writeForced(ctx, batch); err != nil {
		return nil, err
	}
	for _, p := range []string{filepath.Join(b.packs.dir, id+idxExt), filepath.Join(b.packs.dir, id+packExt), filepath.Join(b.packs.dir, id+sortedExt)} {
		if p == filepath.Join(b.packs.dir, id+sortedExt) {
			if err := fsretry.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("store: removing rewritten pack %s: %w", id, err)
			}
			continue
		}
		if err := fsretry.Remove(p); err != nil {
			return nil, fmt.Errorf("store: removing rewritten pack %s: %w", id, err)
		}
	}
	if err := syncDir(b.packs.dir, "packs/"+id); err != nil {
		return nil, err
	}
	b.packs.mu.Lock()
	defer b.packs.mu.Unlock()
	b.packs.dropLocked([]string{id})
	return applied, nil
}

// writeForced writes blobs to this process's pack, indexed already or not, and waits until they
// are durable.
func (b *Backend) writeForced(ctx context.Context, blobs []blob.NewBlob) error {
	if err := ctx.Err(); err != nil || len(blobs) == 0 {
		return err
	}
	w, err := b.writer()
	if err != nil {
		return err
	}
	_, seq, err := w.appendRecords(blobs, make([]bool, len(blobs)), 0, true)
	if err == nil {
		err = w.sync(seq)
	}
	b.doneWriter(w, err != nil)
	if err == nil {
		_ = b.packs.sortIfLarge(w.r) // the blobs are durable; a failure to read the tail shows at the next read
	}
	return err
}
