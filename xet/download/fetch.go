package download

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/lazy"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/concurrency"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
	"github.com/git-xet-transfer/git-xet-transfer/xet/span"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// Buffer sizes of a job: it reads its range readBuf bytes at a time and decodes compressed chunks
// straight into a writeBuf buffer, which it writes out (WriteAt) when full or when the output
// jumps. Both come from pools, so a download allocates no buffers per range; both are small enough
// that a chunk is still in the CPU cache when it is hashed and written.
const (
	readBuf  = 512 << 10
	writeBuf = 1 << 20
)

var (
	readPool  = sync.Pool{New: func() any { b := make([]byte, readBuf); return &b }}
	writePool = sync.Pool{New: func() any { b := make([]byte, writeBuf+directAlign); return &b }}
)

// sink is where jobs put their bytes: the temp file, the chunk hashes of the file (when the
// whole file is verified), the streaming SHA-256 (when asked for), and progress.
type sink struct {
	f      *os.File
	df     *os.File // f opened again with O_DIRECT; nil: everything goes through f
	l      *layout
	merkle *merkleStream // the file hash, fed term by term; nil when not verifying
	sha    *shaStream    // nil when no SHA-256 is wanted
	wb     *writeback    // nil for outputs under writebackStep
	// wmu serialises the buffered writes to f. The kernel does so anyway (ext4 holds the inode's
	// lock across a buffered write), but its waiters spin on a CPU while the holder copies into the
	// page cache; here they sleep, which matters when many downloads share few cores.
	wmu    sync.Mutex
	mu     sync.Mutex // done, stats, footerUses; no callback or I/O runs under it
	done   int64
	report func(int64)
	onTerm func(span.Span) // Request.OnTerm; called by the range's goroutine, under no lock
	onPart func(span.Span) // Request.OnPart; called by the range's goroutine, under no lock
	stats  Stats
	// reportMu serialises the progress reports (each larger than the last) and holds nothing else:
	// a slow report (the agent's write to git-lfs) holds up only the ranges reporting too.
	reportMu sync.Mutex
	reported int64
	// readFooter reads a xorb's footer (cas.Client.XorbFooter); footers holds those read, and
	// footerUses (under mu) how many partly local terms of each xorb have not finished with it; gap
	// is Config.GapBytes. See partTerm.runParts.
	readFooter func(ctx context.Context, x hash.Hash, f casapi.XorbFetch) (*xorb.Footer, error)
	footers    lazy.Map[hash.Hash, footerRead]
	footerUses map[hash.Hash]int
	gap        int64
}

// addStat updates the figures under the sink's lock.
func (s *sink) addStat(f func(*Stats)) {
	s.mu.Lock()
	f(&s.stats)
	s.mu.Unlock()
}

// statsTo copies the figures to st (when not nil).
func (s *sink) statsTo(st *Stats) {
	if st != nil {
		s.mu.Lock()
		*st = s.stats
		s.mu.Unlock()
		if s.sha != nil {
			st.SHABehind = s.sha.behind()
		}
	}
}

// termDone hands a finished, verified term's chunk entries to the file hash and to Request.OnTerm.
func (s *sink) termDone(ti int, ents []hash.Entry) error {
	if s.merkle == nil {
		return nil
	}
	if err := s.merkle.done(ti, ents); err != nil {
		return err
	}
	if s.onTerm != nil {
		t := s.l.terms[ti]
		s.onTerm(span.Span{Pos: s.l.pos[ti], Xorb: t.Hash, Start: t.Range.Start, Chunks: ents})
	}
	return nil
}

// progressStep: progress is reported at most once per this many bytes (and at the end).
const progressStep = 1 << 20

func (s *sink) progress(n int64) {
	s.mu.Lock()
	s.done = min(s.done+n, s.l.size) // bytes of a local copy that failed half-way are written again
	done := s.done
	if s.wb != nil {
		s.wb.wrote(n)
	}
	s.mu.Unlock()
	s.reportDone(done, progressStep)
}

// reportDone reports done when it is at least step more than the last report.
func (s *sink) reportDone(done, step int64) {
	if s.report == nil {
		return
	}
	s.reportMu.Lock()
	defer s.reportMu.Unlock()
	if done-s.reported >= step {
		s.reported = done
		s.report(done)
	}
}

// progressEnd reports the final count when it was not reported yet.
func (s *sink) progressEnd() {
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	s.reportDone(done, 1)
}

// write writes b at pos and passes it to the SHA-256 stream.
func (s *sink) write(pos int64, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	s.wmu.Lock()
	_, err := s.f.WriteAt(b, pos)
	s.wmu.Unlock()
	if err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if s.sha != nil {
		if err := s.sha.written(pos, b); err != nil {
			return err
		}
	}
	s.progress(int64(len(b)))
	return nil
}

// writeDirect writes b (aligned: address, offset and length) at pos through the O_DIRECT
// descriptor, or through the page cache when the filesystem refuses it.
func (s *sink) writeDirect(pos int64, b []byte) error {
	if _, err := s.df.WriteAt(b, pos); err != nil {
		return s.write(pos, b) // rewriting the same bytes buffered is always right
	}
	if s.sha != nil {
		if err := s.sha.written(pos, b); err != nil {
			return err
		}
	}
	s.progress(int64(len(b)))
	return nil
}

// target is where one term puts a decoded chunk: bytes [lo, hi) of the chunk go to pos+lo.
type target struct {
	pos    int64
	lo, hi int
}

// run fetches j's range and writes the terms' bytes at their places: an uncompressed chunk is
// hashed and written from the read buffer where it lies; a compressed one is decoded straight into
// the write buffer (written out when full or when the output jumps) and hashed there. It checks the
// chunk count of the range and each term's decoded length.
//
// An attempt cut short (a reset, a body that ends early: a retryable error) keeps what it decoded:
// the records read whole are written out and the next attempt asks for the rest of the range only,
// from the record the cut was in; when that is refused (not retryably), the range is fetched whole.
func (j *job) run(ctx context.Context, get fetcher, s *sink) error {
	r := j.cont
	rest := j.rng.Bytes
	if r != nil {
		rest.Start += r.read
	}
	rc, err := get(ctx, j, rest)
	if err != nil && r != nil && ctx.Err() == nil && !retry.IsRetryable(err) && !errors.Is(err, cas.ErrURLExpired) {
		// The rest of the range was refused (a server that grants only whole listed ranges):
		// the next attempt fetches the range whole, rewriting the same bytes.
		j.cont = nil
		return retry.Mark(fmt.Errorf("the rest of a range cut short was refused: %w", err))
	}
	if err != nil {
		return err
	}
	defer rc.Close()
	rp := readPool.Get().(*[]byte)
	defer readPool.Put(rp)
	wp := writePool.Get().(*[]byte)
	defer writePool.Put(wp)
	in, w := xorb.NewRecordScanner(rc, *rp, int64(rest.Len())), newRunBuf(s, *wp)
	if r == nil {
		r = newJobRun(j, s, in, w)
	} else {
		r.in, r.w = in, w
	}
	j.cont = nil
	n := j.rng.Chunks.End - j.rng.Chunks.Start
	for ; r.k < n; r.k++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := r.chunk(r.k, n); err != nil {
			return r.keep(err)
		}
	}
	return r.finish()
}

// keep ends an attempt that failed with err: when err is worth another attempt, what the
// attempt decoded is written out and the job goes on from there next time.
func (r *jobRun) keep(err error) error {
	if !retry.IsRetryable(err) {
		return err
	}
	if ferr := r.w.flush(true); ferr != nil {
		return ferr
	}
	r.in, r.w = nil, nil
	r.j.cont = r
	return err
}

// jobRun is the state of one job's pass over its range: which terms contain the current chunk,
// how far each term has been decoded, and (when the file hash is verified) each term's chunk
// entries.
type jobRun struct {
	j       *job
	s       *sink
	l       *layout
	in      *xorb.RecordScanner
	w       *runBuf
	hasher  *hash.ChunkHasher
	cursor  []int64 // bytes of each term decoded so far
	next    int     // next term (position in j.terms) not yet active
	active  []int   // terms (positions in j.terms) containing the current chunk
	targets []target
	ents    [][]hash.Entry // per term of j, per chunk: the entries for the file hash; nil when not verifying
	read    uint64         // bytes of the range's records read so far
	k       uint32         // records of the range read so far
	ck      []checkpoint   // per term of j: the end of its last reported part (Request.OnPart)
	seg     *segState      // j's kind when it is one run of a partly local term
	resumed *resumeState   // j's kind when its one term's first chunks are in place
}

// checkpoint is where a term's last reported part ended: chunk (from the term's start) and bytes.
type checkpoint struct {
	chunk uint32
	bytes int64
}

// partBytes: a term's written chunks are reported (Request.OnPart) about this often.
const partBytes = 8 << 20

func newJobRun(j *job, s *sink, in *xorb.RecordScanner, w *runBuf) *jobRun {
	r := &jobRun{j: j, s: s, l: s.l, in: in, w: w, hasher: hash.NewChunkHasher(),
		cursor: make([]int64, len(j.terms)), active: make([]int, 0, 8)}
	r.seg, _ = j.kind.(*segState)
	r.resumed, _ = j.kind.(*resumeState)
	if s.merkle != nil {
		r.ents = make([][]hash.Entry, len(j.terms))
		for a, ti := range j.terms {
			if r.seg == nil {
				r.ents[a] = make([]hash.Entry, r.l.terms[ti].Range.End-r.l.terms[ti].Range.Start)
			}
		}
		r.ck = make([]checkpoint, len(j.terms))
	}
	if sg := r.seg; sg != nil && r.ents != nil { // one run of its one term, whose entries are kept
		r.cursor[0] = sg.before
		r.ents[0] = sg.ents
	}
	if rs := r.resumed; rs != nil && r.ents != nil { // its one term's first chunks are in place
		r.cursor[0] = rs.bytes
		copy(r.ents[0], rs.ents)
		r.ck[0] = checkpoint{chunk: uint32(len(rs.ents)), bytes: rs.bytes}
	}
	return r
}

// lastParts reports the chunks of each term written since its last part (the run buffer is
// written out by now): the parts of a term cover it whole.
func (r *jobRun) lastParts() {
	for a, ti := range r.j.terms {
		c := r.ck[a]
		t := r.l.terms[ti]
		if n := t.Range.End - t.Range.Start; c.chunk < n {
			r.s.onPart(span.Span{Pos: r.l.pos[ti] + c.bytes, Xorb: t.Hash, Start: t.Range.Start + c.chunk,
				Chunks: append([]hash.Entry(nil), r.ents[a][c.chunk:n]...)})
		}
	}
}

// report tells Request.OnPart of the chunks of the active terms written since their last part,
// when that is partBytes or more, after writing out the run buffer.
func (r *jobRun) report(ci uint32) error {
	flushed := false
	for _, a := range r.active {
		c := r.ck[a]
		if r.cursor[a]-c.bytes < partBytes {
			continue
		}
		if !flushed {
			if err := r.w.flush(true); err != nil {
				return err
			}
			flushed = true
		}
		ti := r.j.terms[a]
		t := r.l.terms[ti]
		end := ci + 1 - t.Range.Start
		sp := span.Span{Pos: r.l.pos[ti] + c.bytes, Xorb: t.Hash, Start: t.Range.Start + c.chunk,
			Chunks: append([]hash.Entry(nil), r.ents[a][c.chunk:end]...), XorbEnd: r.j.rng.Bytes.Start + r.read}
		r.s.onPart(sp)
		r.ck[a] = checkpoint{chunk: end, bytes: r.cursor[a]}
	}
	return nil
}

// chunk reads record k of the range (of n), decodes it where it belongs and writes it to every
// place the terms want it.
func (r *jobRun) chunk(k, n uint32) error {
	j := r.j
	ci := j.rng.Chunks.Start + k
	rec, h, err := nextRecord(r.in)
	if err == io.EOF {
		return fmt.Errorf("xorb %s: range %s has %d chunks, plan says %d", j.xorb, j.rng.Bytes.Header(), k, n)
	}
	if err != nil {
		return fmt.Errorf("xorb %s range %s: chunk %d: %w", j.xorb, j.rng.Bytes.Header(), k, err)
	}
	size := int(h.RawLen)
	if err := r.place(ci, size); err != nil {
		return err
	}
	raw, inPlace, err := r.decode(rec, h, k)
	if err != nil {
		return err
	}
	if r.ents != nil && len(r.active) > 0 {
		e := hash.Entry{Hash: r.hasher.Sum(raw), Size: uint64(size)}
		for _, a := range r.active {
			r.ents[a][ci-r.l.terms[j.terms[a]].Range.Start] = e
		}
	}
	r.read += uint64(len(rec))
	if err := r.emit(raw, inPlace); err != nil || r.s.onPart == nil || r.ents == nil || r.seg != nil {
		return err
	}
	return r.report(ci)
}

// place updates the terms containing chunk ci (size raw bytes) and where each wants it (targets).
func (r *jobRun) place(ci uint32, size int) error {
	l, j := r.l, r.j
	keep := r.active[:0]
	for _, a := range r.active {
		if l.terms[j.terms[a]].Range.End > ci {
			keep = append(keep, a)
		}
	}
	r.active = keep
	for r.next < len(j.terms) && l.terms[j.terms[r.next]].Range.Start <= ci {
		if l.terms[j.terms[r.next]].Range.End > ci {
			r.active = append(r.active, r.next)
		}
		r.next++
	}
	r.targets = r.targets[:0]
	for _, a := range r.active {
		ti := j.terms[a]
		t := l.terms[ti]
		pos := l.pos[ti] + r.cursor[a]
		r.cursor[a] += int64(size)
		if r.cursor[a] > int64(t.UnpackedLength) {
			return fmt.Errorf("term %d (xorb %s chunks [%d, %d)): decodes to more than its %d bytes",
				ti, t.Hash, t.Range.Start, t.Range.End, t.UnpackedLength)
		}
		lo, hi := int64(0), int64(size)
		if pos < 0 {
			lo = min(-pos, hi)
		}
		if pos+hi > l.size {
			hi = max(l.size-pos, lo)
		}
		if lo < hi {
			r.targets = append(r.targets, target{pos: pos, lo: int(lo), hi: int(hi)})
		}
	}
	return nil
}

// decode returns the raw bytes of record rec. An uncompressed chunk is its payload: without direct
// I/O it is used where it lies in the read buffer, with no copy (inPlace). Other chunks are decoded
// into the run buffer, right after the run when the first target continues it, else into a new run.
func (r *jobRun) decode(rec []byte, h xorb.RecordHeader, k uint32) (raw []byte, inPlace bool, err error) {
	w, size := r.w, int(h.RawLen)
	if h.Scheme == xorb.SchemeNone && !w.direct {
		return rec[xorb.RecordHeaderSize:], true, w.flush(true)
	}
	if !w.empty() && (len(r.targets) == 0 || r.targets[0].pos+int64(r.targets[0].lo) != w.next()) {
		if err := w.flush(true); err != nil {
			return nil, false, err
		}
	}
	if w.room() < size {
		if err := w.flush(false); err != nil {
			return nil, false, err
		}
	}
	if w.empty() && len(r.targets) > 0 {
		w.begin(r.targets[0].pos + int64(r.targets[0].lo))
	}
	dst := w.free()
	raw, _, _, err = xorb.DecodeRecord(dst, rec)
	if err != nil {
		return nil, false, fmt.Errorf("xorb %s range %s: chunk %d: %w", r.j.xorb, r.j.rng.Bytes.Header(), k, err)
	}
	if len(raw) != size || (size > 0 && &raw[0] != &dst[:1][0]) {
		return nil, false, fmt.Errorf("xorb %s: chunk %d decoded to %d bytes, header says %d", r.j.xorb, k, len(raw), size)
	}
	return raw, false, nil
}

// emit writes raw to its targets: the first continues the run buffer (or, in place, is written
// directly); a chunk used more than once in the output is written directly at its other places.
func (r *jobRun) emit(raw []byte, inPlace bool) error {
	if len(r.targets) == 0 {
		return nil
	}
	for _, t := range r.targets[1:] {
		if err := r.s.write(t.pos+int64(t.lo), raw[t.lo:t.hi]); err != nil {
			return err
		}
	}
	t := r.targets[0]
	if inPlace {
		return r.s.write(t.pos+int64(t.lo), raw[t.lo:t.hi])
	}
	if t.lo > 0 {
		copy(raw, raw[t.lo:t.hi])
	}
	r.w.commit(t.hi - t.lo)
	return nil
}

// finish checks that the range holds no more records and that every term decoded to its length,
// writes out the run buffer and hands the terms' entries to the file hash.
func (r *jobRun) finish() error {
	j, l := r.j, r.l
	if _, _, err := nextRecord(r.in); err != io.EOF {
		if err == nil {
			err = errors.New("more records than chunks")
		}
		return fmt.Errorf("xorb %s: range %s: %w", j.xorb, j.rng.Bytes.Header(), err)
	}
	for a, ti := range j.terms {
		if t := l.terms[ti]; r.seg == nil && r.cursor[a] != int64(t.UnpackedLength) {
			return fmt.Errorf("term %d (xorb %s chunks [%d, %d)): decoded %d bytes, plan says %d",
				ti, t.Hash, t.Range.Start, t.Range.End, r.cursor[a], t.UnpackedLength)
		}
	}
	if err := r.w.flush(true); err != nil {
		return err
	}
	var decoded int64
	for _, ti := range j.terms {
		decoded += int64(l.terms[ti].UnpackedLength)
	}
	if r.resumed != nil {
		decoded -= r.resumed.bytes
	}
	if r.seg != nil {
		decoded = r.cursor[0] - r.seg.before
	}
	r.s.addStat(func(st *Stats) { st.Fetched += int64(j.rng.Bytes.Len()); st.FetchedTerms += decoded })
	if r.ents == nil || r.seg != nil {
		return nil // a run's term is finished by partTerm.runParts
	}
	if r.s.onPart != nil {
		r.lastParts()
	}
	for a, ti := range j.terms {
		if err := r.s.termDone(ti, r.ents[a]); err != nil {
			return err
		}
	}
	return nil
}

// nextRecord returns the next record of a fetched range; a range cut short on the way is marked
// retryable (the job fetches it again).
func nextRecord(in *xorb.RecordScanner) ([]byte, xorb.RecordHeader, error) {
	rec, h, err := in.Next()
	if errors.Is(err, xorb.ErrStreamShort) {
		err = retry.Mark(fmt.Errorf("fetched range: %w", err))
	}
	return rec, h, err
}

// fetcher opens bytes r of job j's xorb (its range, or the rest of it).
type fetcher func(ctx context.Context, j *job, r casapi.ByteRange) (io.ReadCloser, error)

// meter measures one attempt of a job for the concurrency controller: the time its fetch took to
// answer (the latency) and the bytes its body gave.
type meter struct {
	latency time.Duration
	bytes   atomic.Int64
}

// fetcher is c.Fetch, measured.
func (m *meter) fetcher(c cas.Client) fetcher {
	return func(ctx context.Context, j *job, r casapi.ByteRange) (io.ReadCloser, error) {
		start := time.Now()
		rc, err := c.Fetch(ctx, j.xorb, j.fetch, r)
		m.latency = time.Since(start)
		if err != nil {
			return nil, err
		}
		return &countedBody{ReadCloser: rc, n: &m.bytes}, nil
	}
}

// observe tells ctl how the attempt went: throttled (429, 503), failed in a way worth a retry, or
// done. A failure that says nothing of the link (a 404, bad data, the caller's cancel) is not told.
func (m *meter) observe(ctx context.Context, ctl *concurrency.Controller, err error) {
	if ctx.Err() != nil || (err != nil && !retry.IsRetryable(err)) {
		return
	}
	code := cas.StatusCode(err)
	throttled := code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable
	ctl.Observe(concurrency.Sample{Bytes: m.bytes.Load(), Latency: m.latency, Throttled: throttled, Failed: err != nil && !throttled})
}

// countedBody counts the bytes read through it.
type countedBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}
