package upload

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/git-xet-transfer/git-xet-transfer/internal/bufpool"
	"github.com/git-xet-transfer/git-xet-transfer/xet/concurrency"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// sxorb is a xorb made in this session, from its first chunk until it is stored. While open it has
// a builder; when cut it has its hash. When its chunks were moved into another open xorb (the
// aggregation of small files), merged points there and offset says where its chunk 0 went. Terms
// keep pointing at the sxorb they were made with and are resolved (patched) when the shard is built.
//
// Concurrency: sxorbs belong to the session's Upload/Finish goroutine; the upload goroutines only
// see the *xorb.Xorb cut from them.
type sxorb struct {
	b       *xorb.Builder
	chunks  []hash.Entry // while open: chunk hashes and raw lengths in xorb order (grows)
	raw     uint64
	cut     bool
	hash    hash.Hash
	merged  *sxorb
	offset  uint32
	follows xorb.Follows // the hint sent with it (see fileState.follows)
	ord     uint32       // index in Session.sxorbs
	lists   *chunkLists
	// Once cut: the chunk list of its shard entry, held in memory only while lists keeps it (it is
	// spilled to a temp file; see chunkLists).
	list     []shard.XorbChunk
	nChunks  uint32
	spilled  bool
	spillOff int64
}

// chunkAt returns the hash and raw length of chunk i, false when x has no chunk i (or its chunk
// list could not be read back; the session then fails on lists.err).
func (x *sxorb) chunkAt(i uint32) (hash.Hash, uint64, bool) {
	if x.cut {
		return x.lists.chunkAt(x, i)
	}
	if int(i) >= len(x.chunks) {
		return hash.Hash{}, 0, false
	}
	c := &x.chunks[i]
	return c.Hash, c.Size, true
}

// resolve returns the xorb holding x's chunks and the index of x's chunk 0 in it.
func (x *sxorb) resolve() (*sxorb, uint32) {
	var off uint32
	for x.merged != nil {
		off += x.offset
		x = x.merged
	}
	return x, off
}

func (s *Session) newSxorb() *sxorb {
	x := &sxorb{b: xorb.NewBuilder(s.cfg.Policy), ord: uint32(len(s.sxorbs)), lists: &s.lists}
	s.sxorbs = append(s.sxorbs, x)
	x.b.UseBuffer(s.getBody())
	x.b.StartFile()
	return x
}

// bodies recycles xorb body buffers of xorb.BodyCap bytes across the sessions of the process, so
// that a Builder never grows its body by copying and uploads allocate (and fault in) no new 64 MiB
// buffers. The buffers are mapped outside the Go heap where the platform allows (bufpool.Map, in
// huge pages on Linux): 64 MiB buffers on the heap would raise the GC's heap goal by as much,
// letting that much garbage pile up before a collection (hundreds of MB of RSS on a long upload).
// How many buffers are in use at once is bounded by each session's structure (see Session); the
// pool keeps at most 4 idle ones, and unmaps them after 30 s without use.
//
// A body goes back to the pool once PutXorb has returned: by the cas.Client contract the client
// neither reads nor keeps it after that. Session.Close returns the bodies of xorbs still open (a
// mapped body the pool never sees again would stay mapped until the process ends).
var bodies = &bufpool.Pool{Keep: 4, Idle: 30 * time.Second, Min: xorb.BodyCap, Release: bufpool.Unmap}

// mappedBody returns an empty body buffer of xorb.BodyCap bytes: an idle one, else a new mapping.
func mappedBody() []byte {
	if b := bodies.Get(xorb.BodyCap); b != nil {
		return b
	}
	if b := bufpool.Map(xorb.BodyCap); b != nil {
		return b
	}
	return make([]byte, 0, xorb.BodyCap)
}

// SmallSessionBytes: a session told it uploads at most this many bytes (Config.SizeHint) takes its
// xorb bodies from smallBodies.
const SmallSessionBytes = 1 << 20

// smallBodyCap holds the xorb of SmallSessionBytes of input that does not compress: the raw bytes
// and a record header per chunk (at most one per 8 KiB, the least chunk size but for the last).
// A body that must grow past it (a file that grew during its upload) grows by append.
const smallBodyCap = SmallSessionBytes + 64<<10

// smallBodies recycles the bodies of small sessions. One process may run many at once (the agent
// that serves the small uploads of a push's other agents, agent/share): from bodies, each would
// fault in and zero a huge page of a 64 MiB mapping whenever more than its 4 idle ones are in use.
var smallBodies = &bufpool.Pool{Keep: 16, Idle: 30 * time.Second, Min: smallBodyCap}

// getBody returns an empty body buffer for the session's next xorb.
func (s *Session) getBody() []byte {
	if h := s.cfg.SizeHint; h <= 0 || h > SmallSessionBytes {
		return mappedBody()
	}
	if b := smallBodies.Get(smallBodyCap); b != nil {
		return b
	}
	return make([]byte, 0, smallBodyCap)
}

// putBody returns a body nobody reads any more to its pool.
func putBody(b []byte) {
	if cap(b) >= xorb.BodyCap {
		bodies.Put(b)
	} else {
		smallBodies.Put(b)
	}
}

// add appends a new chunk to open xorb x and returns its index. off is where the builder's lending
// source holds data, or -1 (see lending.at).
func (x *sxorb) add(data []byte, h hash.Hash, off int64) uint32 {
	i := x.b.AddFrom(data, h, off)
	x.chunks = append(x.chunks, hash.Entry{Hash: h, Size: uint64(len(data))})
	x.raw += uint64(len(data))
	return uint32(i)
}

func (x *sxorb) fits(n int) bool { return x.b.Fits(n) }

// mergeInto moves the chunks of open xorb src into open xorb dst (their records are copied as they
// are, no recompression), recycles src's buffer and leaves src pointing at dst.
func (s *Session) mergeInto(dst, src *sxorb) error {
	off := uint32(dst.b.Absorb(src.b))
	putBody(src.b.Finish().Body)
	src.b = nil
	dst.chunks = append(dst.chunks, src.chunks...)
	dst.raw += src.raw
	src.merged, src.offset, src.chunks = dst, off, nil
	return nil
}

// cut finishes open xorb x, records it for the shard and starts its upload. It blocks while the
// limit of uploads are in flight (Config.Adapt's, else Concurrency: so at most that many cut xorbs
// are in memory, plus the one waiting here, which was the open one). A body is recycled once
// stored (see bodies).
func (s *Session) cut(ctx context.Context, x *sxorb) error {
	if x.cut || x.b == nil || x.b.Len() == 0 {
		return nil
	}
	built := x.b.Finish()
	built.Follows = x.follows
	x.b, x.cut, x.hash = nil, true, built.Hash
	sx := shard.Xorb{Hash: built.Hash, BytesInXorb: uint32(built.RawBytes), Chunks: make([]shard.XorbChunk, len(built.Chunks))}
	if len(built.Chunks) != len(x.chunks) {
		return fmt.Errorf("upload: internal error: xorb %s has %d chunks, the session recorded %d", built.Hash, len(built.Chunks), len(x.chunks))
	}
	for i, c := range built.Chunks {
		if c.Hash != x.chunks[i].Hash || uint64(c.RawLen) != x.chunks[i].Size {
			return fmt.Errorf("upload: internal error: xorb %s chunk %d is not the one the session recorded", built.Hash, i)
		}
		sx.Chunks[i] = shard.XorbChunk{Hash: c.Hash, RawStart: uint32(c.RawStart), RawLen: c.RawLen}
	}
	// The shard's chunk list replaces x.chunks (the same chunks in the same order, checked above)
	// and goes to the spill, so that a cut xorb's chunks are held once, and not for long.
	x.list, x.chunks = sx.Chunks, nil
	s.lists.add(x)
	if s.lists.err != nil {
		return s.lists.err
	}
	s.newXorbs = append(s.newXorbs, x)
	s.stats.xorbs++
	if err := s.batchErr(); err != nil {
		return err
	}
	s.log.Debug().Str("xorb", built.Hash.String()).Int("chunks", len(built.Chunks)).Uint64("raw", built.RawBytes).
		Int("bytes", built.Size()).Msg("upload: xorb cut")
	u := s.uploads()
	q := queuedXorb{x: built, asked: s.askHas(u, built)}
	if err := u.ctl.Acquire(ctx); err != nil {
		putBody(built.Body)
		return err
	}
	select {
	case u.xorbs <- q: // the taker releases the room
		return ctx.Err()
	case <-u.done: // an upload failed, or ctx ended (watch)
		u.ctl.Release()
		putBody(built.Body)
		if err := ctx.Err(); err != nil {
			return err
		}
		return s.batchErr()
	}
}

// xorbUploads are the xorb uploads of a session: as many goroutines of an errgroup as the
// controller's ceiling (ctl: Config.Adapt, else a fixed one of Config.Concurrency), each taking
// cut xorbs from an unbuffered channel; a cut first takes room under the controller's limit, so
// it blocks while the limit of uploads are in flight. They
// run from the first Upload until Finish, across calls, so their context is their own: it ends
// when one fails, at Close, or when the context of the Upload or Finish running meanwhile ends
// (Session.watch).
type xorbUploads struct {
	g      *errgroup.Group
	cancel context.CancelFunc
	xorbs  chan queuedXorb
	done   <-chan struct{} // closed when the uploads stop: one failed, or cancel
	ctl    *concurrency.Controller
	// ask runs fn on a goroutine of the group, under the uploads' context: the questions asked
	// about cut xorbs (askHas) are joined with the uploads.
	ask func(fn func(context.Context))
}

// startUploads starts a session's xorb uploads.
func (s *Session) startUploads() *xorbUploads {
	ctx, cancel := context.WithCancel(context.Background())
	g, ctx := errgroup.WithContext(ctx)
	ctl := s.cfg.Adapt
	if ctl == nil {
		ctl = concurrency.Fixed(s.cfg.Concurrency)
	}
	u := &xorbUploads{g: g, cancel: cancel, xorbs: make(chan queuedXorb), done: ctx.Done(), ctl: ctl,
		ask: func(fn func(context.Context)) { g.Go(func() error { fn(ctx); return nil }) }}
	for range ctl.Max() {
		g.Go(func() error { return s.uploadXorbs(ctx, u.xorbs, ctl) })
	}
	return u
}

// stopped reports whether the uploads stopped before wait (a failure, or cancel).
func (u *xorbUploads) stopped() bool {
	select {
	case <-u.done:
		return true
	default:
		return false
	}
}

// wait lets the uploads take no more xorbs, waits for those in flight and returns the first
// failure.
func (u *xorbUploads) wait() error {
	close(u.xorbs)
	err := u.g.Wait()
	u.cancel()
	return err
}

// uploadXorbs uploads the xorbs it is sent until xorbs is closed or ctx ends (an upload cut short
// by ctx fails; an idle one just returns), releasing the room each took under ctl.
func (s *Session) uploadXorbs(ctx context.Context, xorbs <-chan queuedXorb, ctl *concurrency.Controller) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case x, ok := <-xorbs:
			if !ok {
				return nil
			}
			err := s.putXorb(ctx, x, ctl)
			ctl.Release()
			if err != nil {
				return err
			}
		}
	}
}

// queuedXorb is a cut xorb on its way to an upload goroutine, with the answer to "does the CAS
// hold it already" when it is large enough to ask (askHas), else nil.
type queuedXorb struct {
	x     *xorb.Xorb
	asked <-chan hasAnswer
}

// hasAnswer is the CAS's answer about one xorb and how long the question took (a round trip with
// no body: the controller's latency sample).
type hasAnswer struct {
	has bool
	lat time.Duration
}

// askHas asks the CAS whether it holds x when x is large enough (Config.ResumeCheckBytes), on a
// goroutine of u's group, from the moment x is cut: the round trip then runs while x waits for
// room under the limit instead of after it got some, so on a long link it costs no upload time. A
// failed question reads as "not held" (x is sent).
func (s *Session) askHas(u *xorbUploads, x *xorb.Xorb) <-chan hasAnswer {
	if min := s.cfg.ResumeCheckBytes; min <= 0 || int64(x.Size()) < min {
		return nil
	}
	ch, h := make(chan hasAnswer, 1), x.Hash
	u.ask(func(ctx context.Context) {
		start := time.Now()
		has, err := s.cfg.CAS.HasXorb(ctx, h)
		ch <- hasAnswer{has: err == nil && has, lat: time.Since(start)}
	})
	return ch
}

// putXorb stores q's xorb unless the CAS answered that it holds it already, and recycles its
// body. ctl is told how it went: the latency of the question, the bytes sent, and each attempt
// the CAS client retried (through the context: concurrency.WithReport).
func (s *Session) putXorb(ctx context.Context, q queuedXorb, ctl *concurrency.Controller) error {
	x := q.x
	defer putBody(x.Body) // stored, found, or failed: nobody reads it after PutXorb returns
	var lat time.Duration
	if q.asked != nil {
		var a hasAnswer
		select {
		case a = <-q.asked:
		case <-ctx.Done():
			return ctx.Err()
		}
		lat = a.lat
		if a.has {
			s.resumed.Add(int64(x.Size()))
			s.log.Debug().Str("xorb", x.Hash.String()).Msg("upload: xorb already stored (an interrupted upload resumed); not sent")
			return nil
		}
	}
	if _, err := s.cfg.CAS.PutXorb(concurrency.WithReport(ctx, ctl.Observe), x); err != nil {
		return fmt.Errorf("upload xorb %s: %w", x.Hash, err)
	}
	ctl.Observe(concurrency.Sample{Bytes: int64(x.Size()), Latency: lat})
	return nil
}

// fileDone applies xet-core's aggregation rule to the leftover open xorb of a file: merged with the
// session accumulator when both fit in one xorb, otherwise the larger is uploaded and the smaller
// kept as the accumulator.
func (s *Session) fileDone(ctx context.Context, leftover *sxorb) error {
	if leftover == nil || leftover.cut || len(leftover.chunks) == 0 {
		return nil
	}
	if s.cfg.SeparateFiles {
		return s.cut(ctx, leftover)
	}
	acc := s.acc
	switch {
	case acc == nil:
		s.acc = leftover
		return nil
	case acc.raw+leftover.raw <= xorb.MaxBytes && len(acc.chunks)+len(leftover.chunks) <= xorb.MaxChunks:
		// Re-add the smaller one's chunks into the larger one's builder (cheaper); the order
		// inside a xorb does not matter to anyone.
		big, small := acc, leftover
		if small.raw > big.raw {
			big, small = small, big
		}
		// Records are moved between xorbs only with their payloads (lent ones from two files
		// cannot share one xorb).
		if err := big.b.Own(); err != nil {
			return fmt.Errorf("upload: %w", err)
		}
		if err := small.b.Own(); err != nil {
			return fmt.Errorf("upload: %w", err)
		}
		if err := s.mergeInto(big, small); err != nil {
			return err
		}
		s.acc = big
		return nil
	default:
		big, small := acc, leftover
		if small.raw > big.raw {
			big, small = small, big
		}
		s.acc = small
		return s.cut(ctx, big)
	}
}
