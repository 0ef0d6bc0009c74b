package xetfile

import (
	"context"
	"sync"
)

// Reader is one open handle of a File: it reads ahead of a sequential stream. Safe for concurrent
// use (the kernel sends a handle's reads concurrently).
type Reader struct {
	f        *File
	mu       sync.Mutex
	next     int64 // where the stream's next read is expected
	streamed int64 // bytes the stream read so far
	window   int64 // the read-ahead window; 0: not a stream
	ahead    int64 // read-ahead was started up to here
}

// MinReadAhead is the window of a handle's first read and of a stream's second: from then on the
// window is twice what the stream read, up to Config.ReadAheadMax. It grows with the bytes read,
// not with the reads: small reads (a header) do not fetch far ahead.
const MinReadAhead = 1 << 20

// streamSlack: a read within this distance of where the stream is expected still continues it
// (the kernel sends a stream's reads concurrently, a little out of order).
const streamSlack = 1 << 20

// NewReader returns a handle of f.
func (f *File) NewReader() *Reader { return &Reader{f: f, next: -1} }

// ReadAt is File.ReadAt, after starting the read-ahead of the stream the read continues (or
// starts: the first read of a handle reads MinReadAhead ahead, as most opens read on from there).
// The read-ahead starts first, so that its fetches run beside the read's own.
func (r *Reader) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	r.readAhead(off, int64(len(p)))
	return r.f.ReadAt(ctx, p, off)
}

// readAhead notes a read of n bytes at off and starts fetching ahead of the stream it belongs to.
func (r *Reader) readAhead(off, n int64) {
	f := r.f
	r.mu.Lock()
	switch {
	case r.next < 0: // the handle's first read
		r.window, r.streamed = MinReadAhead, n
	case off >= r.next-streamSlack && off <= r.next+streamSlack:
		r.streamed += n
		r.window = min(max(2*r.streamed, MinReadAhead), f.fs.cfg.ReadAheadMax)
	default: // a jump: a new stream, read ahead from its second read
		r.window, r.ahead, r.streamed = 0, 0, n
	}
	if r.window == 0 {
		r.next = off + n
		r.mu.Unlock()
		return
	}
	r.next = max(r.next, off+n)
	from, to := max(r.ahead, r.next), min(r.next+r.window, f.size)
	if to-from < r.window/4 {
		r.mu.Unlock()
		return // most of the window is on its way already
	}
	r.ahead = to
	r.mu.Unlock()
	f.prefetch(from, to)
}

// prefetch starts finding the chunks of bytes [from, to) in the background.
func (f *File) prefetch(from, to int64) {
	if from >= to || f.hasObject() {
		return
	}
	f.fs.goBackground(func(ctx context.Context) {
		p, err := f.getPlan(ctx)
		if err != nil {
			return
		}
		for off := from; off < to; off += f.fs.cfg.RangeBytes {
			n := min(f.fs.cfg.RangeBytes, to-off)
			pieces, err := f.locate(ctx, p, off, int(n))
			if err != nil {
				f.fs.cfg.Log.Debug().Err(err).Str("oid", f.oid).Msg("mount: read-ahead")
				return
			}
			var refs []chunkRef
			for _, pc := range pieces {
				if !f.fs.mem.has(pc.chunk.hash) {
					refs = append(refs, pc.chunk)
				}
			}
			if _, err := f.chunks(ctx, p, refs, false); err != nil {
				return
			}
		}
	})
}
