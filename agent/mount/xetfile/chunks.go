package xetfile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/localshards/chunkcache"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// flight is a chunk being found; done is closed once data (verified) or err is set.
type flight struct {
	done chan struct{}
	data []byte
	err  error
}

// chunks returns the verified bytes of refs, in order: from memory, else from the flight already
// finding them, else from flights this call starts (in the background: disk cache, local objects,
// the CAS). With wait false it returns nil once the flights are started (read-ahead).
//
// A flight another read started can fail for a cause that has passed since (a footer found damaged
// and dropped while the fetch was in flight): when one this call joined fails, it tries once more
// with flights of its own, so a read is never failed by what it only shared.
func (f *File) chunks(ctx context.Context, p *plan, refs []chunkRef, wait bool) ([][]byte, error) {
	out, joinedFailed, err := f.chunksOnce(ctx, p, refs, wait)
	if err != nil && joinedFailed {
		f.fs.cfg.Log.Debug().Err(err).Msg("mount: a fetch this read joined failed; fetching again")
		out, _, err = f.chunksOnce(ctx, p, refs, wait)
	}
	return out, err
}

// chunksOnce is one try of chunks; joinedFailed: the error is that of a flight another call started.
func (f *File) chunksOnce(ctx context.Context, p *plan, refs []chunkRef, wait bool) (out [][]byte, joinedFailed bool, err error) {
	fs := f.fs
	out = make([][]byte, len(refs))
	waits := make([]*flight, len(refs))
	var mine []chunkRef
	var started []*flight
	fs.mu.Lock()
	for i, r := range refs {
		if d, ok := fs.mem.get(r.hash); ok {
			out[i] = d
			continue
		}
		fl := fs.flights[r.hash]
		if fl == nil {
			fl = &flight{done: make(chan struct{})}
			fs.flights[r.hash] = fl
			mine, started = append(mine, r), append(started, fl)
		}
		waits[i] = fl
	}
	fs.mu.Unlock()
	if len(mine) > 0 && !fs.goBackground(func(ctx context.Context) { f.find(ctx, p, mine, started) }) {
		for i, fl := range started {
			fs.complete(mine[i].hash, fl, nil, ErrClosed)
		}
	}
	if !wait {
		return nil, false, nil
	}
	failed, err := fs.await(ctx, out, waits)
	if err != nil {
		return out, failed != nil && !slices.Contains(started, failed), err
	}
	// Memory and flights go by chunk hash: a chunk found there was verified against that hash, but
	// the size this read's footer gives it is only the footer's claim (a footer is tied to its
	// xorb's hash, which a lying CAS computes over its lie).
	for i, r := range refs {
		if len(out[i]) != r.size {
			return nil, false, fmt.Errorf("xorb %s's footer says chunk %d (%s) is %d bytes; the chunk is %d: the footer is not its xorb's",
				r.xorb, r.idx, r.hash, r.size, len(out[i]))
		}
	}
	return out, false, nil
}

// await fills out[i] from waits[i] (where not nil), waiting at most Config.Wait in all. failed is
// the flight whose error it returns (nil when the wait itself ended: timeout, ctx, close).
func (fs *Files) await(ctx context.Context, out [][]byte, waits []*flight) (failed *flight, err error) {
	var timeout <-chan time.Time
	for i, fl := range waits {
		if fl == nil {
			continue
		}
		select {
		case <-fl.done:
		default:
			if timeout == nil {
				t := time.NewTimer(fs.cfg.Wait)
				defer t.Stop()
				timeout = t.C
			}
			select {
			case <-fl.done:
			case <-ctx.Done():
				return nil, fs.waitErr(ctx, "a chunk")
			case <-timeout:
				return nil, fs.waitErr(ctx, "a chunk")
			case <-fs.closing:
				return nil, ErrClosed
			}
		}
		if fl.err != nil {
			return fl, fl.err
		}
		out[i] = fl.data
	}
	return nil, nil
}

// complete ends the flight of chunk h: its verified bytes go to memory first, so that no reader
// misses them between the two.
func (fs *Files) complete(h hash.Hash, fl *flight, data []byte, err error) {
	fs.mu.Lock()
	if err == nil {
		fs.mem.put(h, data)
	}
	if fs.flights[h] == fl {
		delete(fs.flights, h)
	}
	fs.mu.Unlock()
	fl.data, fl.err = data, err
	close(fl.done)
}

// find finds the chunks refs for their flights: each from the disk cache or a local object when
// one there verifies, the rest fetched from the CAS. Every flight is completed on return.
func (f *File) find(ctx context.Context, p *plan, refs []chunkRef, flights []*flight) {
	fs := f.fs
	var rest []chunkRef
	var restFl []*flight
	for i, r := range refs {
		if d, ok := fs.fromDisk(r); ok {
			fs.complete(r.hash, flights[i], d, nil)
			continue
		}
		if d, ok := fs.fromLocal(r); ok {
			fs.complete(r.hash, flights[i], d, nil)
			continue
		}
		rest, restFl = append(rest, r), append(restFl, flights[i])
	}
	if len(rest) > 0 {
		f.fetch(ctx, p, rest, restFl)
	}
}

// fromDisk reads chunk r from the disk cache; an entry that does not hash to r is dropped.
func (fs *Files) fromDisk(r chunkRef) ([]byte, bool) {
	c := fs.cfg.Cache
	if c == nil {
		return nil, false
	}
	d, err := c.Get(chunkcache.Chunk, r.hash)
	if err != nil {
		if !errors.Is(err, chunkcache.ErrMiss) {
			fs.cfg.Log.Debug().Err(err).Msg("mount: reading the chunk cache")
		}
		return nil, false
	}
	if len(d) != r.size || hash.Chunk(d) != r.hash {
		fs.st.bad.Add(1)
		fs.cfg.Log.Warn().Str("chunk", r.hash.String()).Msg("mount: a cached chunk does not verify; dropped")
		c.Drop(chunkcache.Chunk, r.hash)
		return nil, false
	}
	fs.st.fromDisk.Add(int64(len(d)))
	return d, true
}
