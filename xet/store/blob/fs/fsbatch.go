package fs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
)

// CreateBatch implements blob.Backend: runs of small blobs are written to this process's pack and made
// durable with one fsync (shared with concurrent callers); a large blob is written as its own file
// after the run before it is durable, so the batch's order holds.
func (b *Backend) CreateBatch(ctx context.Context, blobs []blob.NewBlob) ([]bool, error) {
	if b.packs == nil {
		return blob.CreateEach(ctx, b, blobs)
	}
	created := make([]bool, len(blobs))
	for i := 0; i < len(blobs); {
		if err := ctx.Err(); err != nil {
			return created, err
		}
		if _, err := b.path(blobs[i].Name); err != nil {
			return created, err
		}
		if len(blobs[i].Data) > packMaxBlob {
			c, err := b.Create(ctx, blobs[i].Name, bytes.NewReader(blobs[i].Data))
			if err != nil {
				return created, err
			}
			created[i] = c
			i++
			continue
		}
		j := i + 1
		for j < len(blobs) && len(blobs[j].Data) <= packMaxBlob {
			if _, err := b.path(blobs[j].Name); err != nil {
				return created, err
			}
			j++
		}
		c, err := b.createPacked(blobs[i:j])
		if err != nil {
			return created, err
		}
		copy(created[i:j], c)
		i = j
	}
	return created, nil
}

// createPacked writes small blobs not stored yet (packed or as files) to the pack and waits until
// they, and any of them another caller is writing, are durable.
func (b *Backend) createPacked(blobs []blob.NewBlob) ([]bool, error) {
	stored, gen, err := b.existing(blobs)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(stored, false) {
		return make([]bool, len(blobs)), nil // all stored and durable: no pack to claim, no fsync
	}
	for attempt := 0; ; attempt++ {
		w, err := b.writer()
		if err != nil {
			return nil, err
		}
		created, seq, err := w.append(blobs, stored, gen)
		if err == nil {
			err = w.sync(seq)
		}
		b.doneWriter(w, err != nil)
		if err == nil {
			_ = b.packs.sortIfLarge(w.r) // the blobs are durable; a failure to read the tail shows at the next read
			return created, nil
		}
		if attempt > 0 {
			return nil, err
		}
	}
}

// writerIdle: a pack writer unused this long gives its pack up (so that gc can rewrite it); the
// next write claims a pack again.
const writerIdle = 10 * time.Second

// writer returns the pack writer, claiming a pack when there is none or the last one is full. The
// caller calls doneWriter when its write is durable or failed.
func (b *Backend) writer() (*packWriter, error) {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	if b.w != nil && b.w.done() {
		b.w.close()
		b.w = nil
	}
	if b.w == nil {
		w, err := claimPack(b.packs)
		if err != nil {
			return nil, err
		}
		b.w = w
	}
	b.wUsers++
	return b.w, nil
}

// doneWriter ends a use of writer w; failed gives w up (the next claim of its pack cuts what it
// left). The last user starts the idle countdown.
func (b *Backend) doneWriter(w *packWriter, failed bool) {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	b.wUsers--
	if failed && b.w == w {
		w.close()
		b.w = nil
	}
	if b.wUsers > 0 || b.w == nil {
		return
	}
	if b.wIdle == nil {
		b.wIdle = time.AfterFunc(writerIdle, b.releaseIdle)
	} else {
		b.wIdle.Reset(writerIdle)
	}
}

// Close gives up this process's pack now, as an idle writer does after writerIdle (cutting the
// zeros it keeps ahead of its records, see packWriter.grow), unless a write is in progress, and
// closes the files it opened to read (packs, indexes, and those retired, at once). The backend
// stays usable: a later write claims a pack again, and a later read opens what it needs.
func (b *Backend) Close() error {
	b.wmu.Lock()
	if b.wIdle != nil {
		b.wIdle.Stop()
	}
	b.wmu.Unlock()
	b.releaseIdle()
	if b.packs != nil {
		b.packs.close()
	}
	return nil
}

// releaseIdle gives up the pack of a writer no one used for writerIdle.
func (b *Backend) releaseIdle() {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	if b.wUsers == 0 && b.w != nil {
		b.w.close()
		b.w = nil
	}
}

// existing reports which blobs are stored, packed or as files, reading the packs' new index entries
// at most once, and the packSet.gen its answer is as of: a blob another caller indexes after that
// moves gen on (appendRecords looks again then).
func (b *Backend) existing(blobs []blob.NewBlob) ([]bool, uint64, error) {
	if err := b.packs.fresh(); err != nil {
		return nil, 0, err
	}
	gen := b.packs.gen.Load()
	stored := make([]bool, len(blobs))
	missing := 0
	for i, nb := range blobs {
		if _, ok, err := b.packs.get(nb.Name); ok || err != nil {
			if err != nil {
				return nil, 0, err
			}
			stored[i] = true
			continue
		}
		p, _ := b.path(nb.Name)
		if _, err := os.Lstat(p); err == nil {
			// A loose file (a store without packs wrote it) may be a moment old, its entry not
			// yet durable: as for a large blob found stored (createFile).
			if err := b.durableExisting(nb.Name, p); err != nil {
				return nil, 0, err
			}
			stored[i] = true
		} else if !os.IsNotExist(err) {
			return nil, 0, fmt.Errorf("store: checking %s: %w", nb.Name, err)
		} else {
			missing++
		}
	}
	if missing == 0 {
		return stored, gen, nil
	}
	if err := b.packs.refreshIfStale(); err != nil {
		return nil, 0, err
	}
	again := b.packs.gen.Load()
	if again == gen {
		return stored, gen, nil
	}
	for i, nb := range blobs {
		if !stored[i] {
			var err error
			if _, stored[i], err = b.packs.get(nb.Name); err != nil {
				return nil, 0, err
			}
		}
	}
	return stored, again, nil
}

// exists reports whether name is stored, packed or as a file.
func (b *Backend) exists(name string) (bool, error) {
	var gen uint64
	if b.packs != nil {
		if err := b.packs.fresh(); err != nil {
			return false, err
		}
		gen = b.packs.gen.Load()
		if _, ok, err := b.packs.get(name); ok || err != nil {
			return ok, err
		}
	}
	p, err := b.path(name)
	if err != nil {
		return false, err
	}
	if _, err := os.Lstat(p); err == nil {
		return true, nil
	} else if !os.IsNotExist(err) {
		return false, fmt.Errorf("store: checking %s: %w", name, err)
	}
	if b.packs == nil {
		return false, nil
	}
	return b.packs.missAgain(name, gen)
}

// strayPacks returns the pack files no writer will finish, with their modification times: an index
// still under its temporary name (its creator died before the rename), and a .pack or a sorted
// index without an index (gc removed the pack as another process wrote its sorted index).
func (b *Backend) strayPacks() map[string]time.Time {
	out := map[string]time.Time{}
	if b.packs == nil {
		return out
	}
	ents, err := os.ReadDir(b.packs.dir)
	if err != nil {
		return out
	}
	idx := map[string]bool{}
	for _, e := range ents {
		if id, ok := strings.CutSuffix(e.Name(), idxExt); ok {
			idx[id] = true
		}
	}
	for _, e := range ents {
		id, isPack := strings.CutSuffix(e.Name(), packExt)
		if !isPack {
			id, isPack = strings.CutSuffix(e.Name(), sortedExt)
		}
		if (isPack && !idx[id]) || strings.HasSuffix(e.Name(), idxExt+".new") {
			if info, err := e.Info(); err == nil {
				out[filepath.Join(b.packs.dir, e.Name())] = info.ModTime()
			}
		}
	}
	return out
}

// strayPackFiles counts strayPacks (fsck reports them with the temp files).
func (b *Backend) strayPackFiles() int { return len(b.strayPacks()) }
