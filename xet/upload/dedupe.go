package upload

import (
	"context"
	"errors"
	"sync"

	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// ref names the xorb of a term: a xorb of this session (sx, resolved when the shard is built) or a
// stored one (ext).
type ref struct {
	sx  *sxorb
	ext hash.Hash
}

// fterm is a term of the file being uploaded: chunks [start, end) of ref.
type fterm struct {
	ref        ref
	start, end uint32
	bytes      uint64
}

// run is a dedupe match in progress: the file's next chunk is expected to be chunk next of the same
// xorb.
type run struct {
	ref  ref
	next uint32
	ext  []shard.XorbChunk // chunks of a stored xorb (cache or global answer)
	key  hash.Hash         // non-zero: ext hashes are keyed
}

// match reports whether chunk (h, n bytes) continues r.
func (r *run) match(h hash.Hash, n int) bool {
	if r.ref.sx != nil {
		x := r.ref.sx
		ch, size, ok := x.chunkAt(r.next)
		return ok && ch == h && size == uint64(n)
	}
	if int(r.next) >= len(r.ext) {
		return false
	}
	c := r.ext[r.next]
	if c.RawLen != uint32(n) {
		return false
	}
	if r.key.IsZero() {
		return c.Hash == h
	}
	return c.Hash == hash.Keyed(r.key, h)
}

// held is a chunk kept aside while the defragmentation rule waits to see how long a match gets.
type held struct {
	data []byte
	h    hash.Hash
	idx  uint32
}

// fileState is the dedupe and packing state of the file being uploaded.
type fileState struct {
	s            *Session
	merkle       hash.MerkleBuilder // the file hash, fed chunk by chunk
	chunks       int                // the file's chunks so far
	terms        []fterm
	termHashes   []hash.Hash // the file's chunk hashes of the last term (its range is not final yet)
	verification []hash.Hash // verification hashes of the terms before the last
	open         *sxorb      // the file's open xorb (new chunks)
	run          *run
	held         []held
	heldNeed     int
	heldRef      ref
	df           defrag
	lastQuery    int64
	newBytes     int64
	dedupedBytes int64
	entries      *EntryLog // with Config.KeepEntries
	lend         *lending  // with Config.Lend and a file to lend from (also in Session.lending)
	prev         hash.Hash // the file's last xorb cut while its chunks were all new (see follows)
}

func newFileState(s *Session) *fileState {
	f := &fileState{s: s, df: newDefrag(), lastQuery: -1}
	if s.cfg.KeepEntries {
		f.entries = newEntryLog(s.cfg.TempDir, s.log)
		s.entryLogs = append(s.entryLogs, f.entries)
	}
	return f
}

// appendTerm adds chunk idx of r (n bytes, hash h) to the file's terms, extending the last term when
// it is the next chunk of the same xorb. Terms are runs of consecutive file chunks, so starting a new
// term makes the last one's range final: its verification hash is computed then, and only the
// current term's chunk hashes are kept.
func (f *fileState) appendTerm(r ref, idx uint32, n int, h hash.Hash) {
	if k := len(f.terms); k > 0 {
		t := &f.terms[k-1]
		if t.ref == r && t.end == idx {
			t.end++
			t.bytes += uint64(n)
			f.termHashes = append(f.termHashes, h)
			f.df.grow(1)
			return
		}
		f.closeTerm()
	}
	f.terms = append(f.terms, fterm{ref: r, start: idx, end: idx + 1, bytes: uint64(n)})
	f.termHashes = append(f.termHashes, h)
	f.df.newRange(1)
}

// closeTerm computes the verification hash of the last term, whose range is final.
func (f *fileState) closeTerm() {
	f.verification = append(f.verification, hash.Verification(f.termHashes))
	f.termHashes = f.termHashes[:0]
}

// continues reports whether chunk idx of r would extend the current term.
func (f *fileState) continues(r ref, idx uint32) bool {
	k := len(f.terms)
	return k > 0 && f.terms[k-1].ref == r && f.terms[k-1].end == idx
}

// chunk handles the file's next chunk: continue a match, look it up, or store it as new data.
func (f *fileState) chunk(ctx context.Context, data []byte, h hash.Hash, off int64) error {
	e := hash.Entry{Hash: h, Size: uint64(len(data))}
	f.merkle.Add(e)
	if f.entries != nil {
		f.entries.add(e)
	}
	f.chunks++
	return f.place(ctx, data, h, off)
}

func (f *fileState) place(ctx context.Context, data []byte, h hash.Hash, off int64) error {
	if f.run != nil {
		if f.run.match(h, len(data)) {
			idx := f.run.next
			f.run.next++
			if f.held != nil {
				f.held = append(f.held, held{data: append([]byte(nil), data...), h: h, idx: idx})
				if len(f.held) >= f.heldNeed {
					f.commitHeld()
				}
				return nil
			}
			f.deduped(f.run.ref, idx, len(data), h)
			return nil
		}
		f.run = nil
		if f.held != nil {
			if err := f.refuseHeld(ctx); err != nil {
				return err
			}
		}
	}
	m, ok := f.lookup(ctx, h, off)
	if !ok {
		return f.addNew(ctx, data, h, off)
	}
	idx := m.next
	m.next++
	f.run = m
	if !f.continues(m.ref, idx) {
		if need := f.df.need(); need > 1 {
			f.held = []held{{data: append([]byte(nil), data...), h: h, idx: idx}}
			f.heldNeed, f.heldRef = need, m.ref
			return nil
		}
	}
	f.deduped(m.ref, idx, len(data), h)
	return nil
}

// finish ends the file: a match still held for the defragmentation rule was too short; then the
// last term's range is final.
func (f *fileState) finish(ctx context.Context) error {
	f.run = nil
	if f.held != nil {
		if err := f.refuseHeld(ctx); err != nil {
			return err
		}
	}
	if len(f.terms) > 0 {
		f.closeTerm()
	}
	return nil
}

func (f *fileState) deduped(r ref, idx uint32, n int, h hash.Hash) {
	f.appendTerm(r, idx, n, h)
	f.dedupedBytes += int64(n)
}

// commitHeld accepts a held match: it grew long enough.
func (f *fileState) commitHeld() {
	for _, c := range f.held {
		f.deduped(f.heldRef, c.idx, len(c.data), c.h)
	}
	f.held = nil
}

// refuseHeld stores the chunks of a too-short held match again as new data.
func (f *fileState) refuseHeld(ctx context.Context) error {
	hs := f.held
	f.held = nil
	f.df.refused()
	for _, c := range hs {
		if err := f.addNew(ctx, c.data, c.h, -1); err != nil {
			return err
		}
	}
	return nil
}

// addNew appends a chunk to the file's open xorb, cutting it first when full.
// follows is the hint for a new xorb of the file (xorb.Follows): while every chunk so far was new,
// the file's chunks are its own xorbs' chunks in order, so the next xorb begins the file or
// continues its last one. A hint only: the CAS checks the file's terms before relying on it.
func (f *fileState) follows() xorb.Follows {
	switch {
	case f.dedupedBytes != 0 || len(f.terms) > 0 && f.prev == (hash.Hash{}):
		return xorb.Follows{}
	case f.prev == (hash.Hash{}):
		return xorb.Follows{Start: true}
	}
	return xorb.Follows{Prev: f.prev}
}

// off is where data lies in the file (from the start of the stream), or -1 when not known.
func (f *fileState) addNew(ctx context.Context, data []byte, h hash.Hash, off int64) error {
	s := f.s
	if f.open != nil && !f.open.fits(len(data)) {
		if err := s.cut(ctx, f.open); err != nil {
			return err
		}
		f.prev = f.open.hash
		f.open = nil
	}
	if f.open == nil {
		f.open = s.newSxorb()
		f.lend.start(f.open)
		f.open.follows = f.follows()
	}
	idx := f.open.add(data, h, f.lend.at(off))
	s.index.add(h, f.open.ord, idx)
	f.appendTerm(ref{sx: f.open}, idx, len(data), h)
	f.newBytes += int64(len(data))
	return nil
}

// lookup finds chunk h: in this session's xorbs, the local shard cache, the global-dedupe answers
// of this session, then (for eligible chunks) a global query.
func (f *fileState) lookup(ctx context.Context, h hash.Hash, off int64) (*run, bool) {
	s := f.s
	if ord, i, ok := s.index.get(h); ok {
		root, base := s.sxorbs[ord].resolve()
		return &run{ref: ref{sx: root}, next: base + i}, true
	}
	if s.cfg.Cache != nil {
		m, ok, err := s.cfg.Cache.Lookup(h)
		if err != nil {
			s.log.Warn().Err(err).Msg("upload: shard cache lookup failed")
		} else if ok && int(m.Index) < len(m.Chunks) {
			return &run{ref: ref{ext: m.Xorb}, next: m.Index, ext: m.Chunks, key: m.Key}, true
		}
	}
	s.useAnswers()
	if r, ok := s.lookupGlobal(h); ok {
		return r, true
	}
	if !s.cfg.GlobalDedupe || !eligible(h, off) {
		return nil, false
	}
	if f.lastQuery >= 0 && off-f.lastQuery < s.cfg.QuerySpacing {
		return nil, false
	}
	if off > 0 {
		// Asked in the background, as xet-core does: on a long link a round trip per question
		// in the chunk stream is time the upload waits. Chunks before the answer are new; the
		// answer (a whole shard: usually every xorb of the file it names) serves those after.
		f.lastQuery = off
		s.askGlobal(ctx, h)
		return nil, false
	}
	// A file's first chunk is asked in turn: the answer decides whether the whole file is known.
	f.lastQuery = off
	data, err := s.cfg.CAS.QueryChunk(ctx, h)
	s.useGlobal(data, err)
	if err != nil {
		return nil, false
	}
	return s.lookupGlobal(h)
}

// maxGlobalQueries bounds the global-dedupe questions a session has in flight; one more waits for
// an answer first.
const maxGlobalQueries = 4

// globalQueries are a session's global-dedupe questions in flight: each runs on a goroutine of its
// own and leaves its answer in answers, which the session takes up (useAnswers) under its mutex.
// The session joins them: Finish takes up every answer (settleQueries), Close cancels the questions
// and waits for them.
type globalQueries struct {
	answers  chan globalAnswer // buffered: maxGlobalQueries
	inFlight int
	cancels  []context.CancelFunc // of the questions asked since none was in flight
	wg       sync.WaitGroup
}

type globalAnswer struct {
	data []byte
	err  error
}

// askGlobal asks the CAS about chunk h on a goroutine of its own, first waiting for an answer
// while maxGlobalQueries are in flight.
func (s *Session) askGlobal(ctx context.Context, h hash.Hash) {
	q := &s.queries
	if q.answers == nil {
		q.answers = make(chan globalAnswer, maxGlobalQueries)
	}
	for q.inFlight >= maxGlobalQueries {
		s.useAnswer(<-q.answers) // each question ends (its ctx bounds it) and answers
	}
	q.inFlight++
	c := s.cfg.CAS
	ctx, cancel := context.WithCancel(ctx)
	q.cancels = append(q.cancels, cancel)
	q.wg.Go(func() {
		defer cancel()
		data, err := c.QueryChunk(ctx, h)
		q.answers <- globalAnswer{data, err}
	})
}

// useAnswer takes up the answer of a question in flight.
func (s *Session) useAnswer(a globalAnswer) {
	q := &s.queries
	q.inFlight--
	if q.inFlight == 0 {
		q.cancels = q.cancels[:0]
	}
	s.useGlobal(a.data, a.err)
}

// settleQueries takes up the answers of the questions in flight (for the shard cache: a later
// session finds their chunks there) until none is left; when ctx ends first, the rest are
// cancelled. Either way none is running when it returns.
func (s *Session) settleQueries(ctx context.Context) {
	q := &s.queries
	for q.inFlight > 0 {
		select {
		case a := <-q.answers:
			s.useAnswer(a)
		case <-ctx.Done():
			s.stopQueries()
			return
		}
	}
}

// stopQueries cancels the questions in flight and waits for them; their answers are dropped.
func (s *Session) stopQueries() {
	q := &s.queries
	for _, cancel := range q.cancels {
		cancel()
	}
	q.wg.Wait()
	for q.inFlight > 0 {
		<-q.answers
		q.inFlight--
	}
	q.cancels = q.cancels[:0]
}

// useAnswers takes up the answers that have come, without waiting.
func (s *Session) useAnswers() {
	for s.queries.inFlight > 0 {
		select {
		case a := <-s.queries.answers:
			s.useAnswer(a)
		default:
			return
		}
	}
}

// useGlobal indexes a global-dedupe answer for this session and keeps it in the shard cache
// (err: the question failed; not found is no news).
func (s *Session) useGlobal(data []byte, err error) {
	if err != nil {
		if !errors.Is(err, cas.ErrNotFound) {
			s.log.Debug().Err(err).Msg("upload: global dedupe query failed")
		}
		return
	}
	if err := s.addGlobal(data); err != nil {
		s.log.Warn().Err(err).Msg("upload: unusable global dedupe answer")
		return
	}
	if s.cfg.Cache != nil {
		if err := s.cfg.Cache.AddDedupe(data); err != nil {
			s.log.Warn().Err(err).Msg("upload: could not cache a global dedupe answer")
		}
	}
}

// eligible: xet-core queries the file's first chunk and chunks whose hash % 1024 == 0.
func eligible(h hash.Hash, off int64) bool { return off == 0 || h.Mod(1024) == 0 }

// gshard is a global-dedupe answer indexed by its (keyed) chunk hashes.
type gshard struct {
	key   hash.Hash
	xorbs []shard.Xorb
	index map[hash.Hash][2]uint32 // stored chunk hash -> xorb ordinal, chunk index
}

// maxGlobal bounds the answers a session keeps indexed (each is at most a few MB).
const maxGlobal = 64

func (s *Session) addGlobal(data []byte) error {
	sh, err := shard.Parse(data)
	if err != nil {
		return err
	}
	g := &gshard{xorbs: sh.Xorbs, index: make(map[hash.Hash][2]uint32)}
	if sh.Keyed() {
		g.key = sh.Footer.HMACKey
	}
	for xi, x := range sh.Xorbs {
		for ci, c := range x.Chunks {
			if _, ok := g.index[c.Hash]; !ok {
				g.index[c.Hash] = [2]uint32{uint32(xi), uint32(ci)}
			}
		}
	}
	if len(s.global) >= maxGlobal {
		s.global = s.global[1:]
	}
	s.global = append(s.global, g)
	return nil
}

func (s *Session) lookupGlobal(h hash.Hash) (*run, bool) {
	var lastKey, k hash.Hash
	haveKey := false
	for i := len(s.global) - 1; i >= 0; i-- {
		g := s.global[i]
		if !haveKey || g.key != lastKey {
			lastKey, haveKey, k = g.key, true, h
			if !g.key.IsZero() {
				k = hash.Keyed(g.key, h)
			}
		}
		if p, ok := g.index[k]; ok {
			x := g.xorbs[p[0]]
			return &run{ref: ref{ext: x.Hash}, next: p[1], ext: x.Chunks, key: g.key}, true
		}
	}
	return nil, false
}
