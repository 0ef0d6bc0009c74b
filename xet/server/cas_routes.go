package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// pathHash parses the path wildcard name as a Xet hash string, answering 400 when it is not one.
func pathHash(w http.ResponseWriter, r *http.Request, name string) (hash.Hash, bool) {
	h, err := hash.Parse(r.PathValue(name))
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("bad %s hash: %v", name, err))
		return h, false
	}
	return h, true
}

// plan answers the shared part of GET /v1|v2/reconstructions/{file}: the store's plan for the file
// of the token's repository (404 for a file registered elsewhere only), or the part named by a
// single Range (inclusive; clamped to the end; 416 when it starts past it). An answer holds at most
// Limits.ReconstructionTerms terms, the first of what was asked: a client asks for the rest with a
// Range starting where the last term ends (xet-core asks in ranges of 256 MB and more; our client
// follows short answers, xet/download).
func (s *Server) plan(w http.ResponseWriter, r *http.Request, c Claims) (*casapi.ReconstructionV2, bool) {
	file, ok := pathHash(w, r, "file")
	if !ok {
		return nil, false
	}
	var rng *casapi.ByteRange
	if hdr := r.Header.Get("Range"); hdr != "" {
		size, err := s.cfg.Store.FileSizeIn(r.Context(), c.Namespace, file)
		if err != nil {
			s.fail(w, r, "reconstruction", err)
			return nil, false
		}
		rs, err := parseRange(hdr, size)
		switch {
		case errors.Is(err, errUnsatisfiable):
			w.Header().Set("Content-Range", "bytes */"+strconv.FormatUint(size, 10))
			writeError(w, http.StatusRequestedRangeNotSatisfiable, "range starts at or past the end of the file")
			return nil, false
		case err != nil:
			writeError(w, http.StatusBadRequest, err.Error())
			return nil, false
		case len(rs) != 1:
			writeError(w, http.StatusBadRequest, "reconstruction takes a single range")
			return nil, false
		}
		rng = &rs[0]
	}
	p, err := s.cfg.Store.ReconstructIn(r.Context(), c.Namespace, file, rng, s.cfg.Limits.ReconstructionTerms)
	if err != nil {
		s.fail(w, r, "reconstruction", err)
		return nil, false
	}
	return p, true
}

// handleReconstructionV2 answers GET /v2/reconstructions/{file}: terms plus, per xorb, signed URLs with
// the ranges each may fetch (at most maxSignedRanges per URL).
func (s *Server) handleReconstructionV2(w http.ResponseWriter, r *http.Request, c Claims) {
	p, ok := s.plan(w, r, c)
	if !ok {
		return
	}
	s.metrics.reconstruction("v2")
	writeJSON(w, http.StatusOK, s.signedPlan(r, c, p))
}

// signedPlan is the v2 answer of the store's plan p for c: its terms and, per xorb, the URLs that
// may fetch its ranges (directURL, else the server's signed route).
func (s *Server) signedPlan(r *http.Request, c Claims, p *casapi.ReconstructionV2) *casapi.ReconstructionV2 {
	base := s.baseURL(r)
	out := &casapi.ReconstructionV2{
		OffsetIntoFirstRange: p.OffsetIntoFirstRange,
		Terms:                nonNilTerms(p.Terms),
		Xorbs:                make(map[hash.Hash][]casapi.XorbFetch, len(p.Xorbs)),
	}
	for h, fetches := range p.Xorbs {
		if url, ok := s.directURL(r, c, h); ok {
			var all []casapi.XorbRange
			for _, f := range fetches {
				all = append(all, f.Ranges...)
			}
			out.Xorbs[h] = []casapi.XorbFetch{{URL: url, Ranges: all}}
			continue
		}
		for _, f := range fetches {
			out.Xorbs[h] = append(out.Xorbs[h], s.signRanges(base, h, f.Ranges)...)
		}
	}
	return out
}

// signRanges is the fetches of ranges of xorb h through the server's signed route, at most
// maxSignedRanges a URL.
func (s *Server) signRanges(base string, h hash.Hash, ranges []casapi.XorbRange) []casapi.XorbFetch {
	var out []casapi.XorbFetch
	for len(ranges) > 0 {
		n := min(len(ranges), maxSignedRanges)
		group := ranges[:n:n]
		ranges = ranges[n:]
		bytes := make([]casapi.ByteRange, len(group))
		for i, g := range group {
			bytes[i] = g.Bytes
		}
		out = append(out, casapi.XorbFetch{URL: s.urls.Sign(base, h, bytes, s.cfg.URLTTL), Ranges: group})
	}
	return out
}

// directURL is the URL of xorb h at its storage (Config.Direct), when there is one and the token's
// repository uploaded h: such a URL reads the whole xorb object (every record and the footer), so
// a xorb the repository only references (deduplicated, shown by a keyed answer) is served through
// the server's own signed route, which grants the plan's ranges only.
func (s *Server) directURL(r *http.Request, c Claims, h hash.Hash) (string, bool) {
	if s.cfg.Direct == nil {
		return "", false
	}
	if ok, err := s.cfg.Store.UploadedBy(r.Context(), c.Namespace, h); err != nil || !ok {
		if err != nil {
			s.log.Warn().Err(err).Str("xorb", h.String()).Msg("access check; handing out the server's own route")
		}
		return "", false
	}
	url, err := s.cfg.Direct.XorbURL(r.Context(), h, s.cfg.URLTTL)
	if err != nil {
		s.log.Warn().Err(err).Str("xorb", h.String()).Msg("no direct URL; handing out the server's own route")
		return "", false
	}
	return url, true
}

// handleReconstructionV1 answers GET /v1/reconstructions/{file}: fetch_info holds one signed URL per
// range.
func (s *Server) handleReconstructionV1(w http.ResponseWriter, r *http.Request, c Claims) {
	p, ok := s.plan(w, r, c)
	if !ok {
		return
	}
	s.metrics.reconstruction("v1")
	base := s.baseURL(r)
	out := &casapi.ReconstructionV1{
		OffsetIntoFirstRange: p.OffsetIntoFirstRange,
		Terms:                nonNilTerms(p.Terms),
		FetchInfo:            make(map[hash.Hash][]casapi.FetchInfoV1, len(p.Xorbs)),
	}
	for h, fetches := range p.Xorbs {
		direct, isDirect := s.directURL(r, c, h)
		for _, f := range fetches {
			for _, xr := range f.Ranges {
				url := direct
				if !isDirect {
					url = s.urls.Sign(base, h, []casapi.ByteRange{xr.Bytes}, s.cfg.URLTTL)
				}
				out.FetchInfo[h] = append(out.FetchInfo[h], casapi.FetchInfoV1{
					Range:    xr.Chunks,
					URL:      url,
					URLRange: xr.Bytes,
				})
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func nonNilTerms(t []casapi.Term) []casapi.Term {
	if t == nil {
		return []casapi.Term{}
	}
	return t
}

// handleChunk answers GET /v1/chunks/{prefix}/{chunk}: the global-dedupe shard for a chunk (200,
// octet-stream) or 404. The token's repository is recorded as shown the xorb (its shards may name
// its chunks); the answer's chunk hashes are keyed, so only a client holding a chunk's data finds it.
func (s *Server) handleChunk(w http.ResponseWriter, r *http.Request, c Claims) {
	if p := r.PathValue("prefix"); p != casapi.PrefixDefault && p != casapi.PrefixMerkleDB {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("unknown prefix %q (want %q or %q)", p, casapi.PrefixDefault, casapi.PrefixMerkleDB))
		return
	}
	chunk, ok := pathHash(w, r, "chunk")
	if !ok {
		return
	}
	b, err := s.cfg.Store.GlobalDedupeAs(r.Context(), s.access(c), chunk)
	s.metrics.dedupeQuery(err == nil)
	if err != nil {
		s.fail(w, r, "chunk query", err)
		return
	}
	w.Header().Set("Content-Type", contentTypeOctets)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}

func checkXorbPrefix(w http.ResponseWriter, r *http.Request) bool {
	if p := r.PathValue("prefix"); p != casapi.PrefixDefault {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("unknown prefix %q (want %q)", p, casapi.PrefixDefault))
		return false
	}
	return true
}

// handlePutXorb answers POST /v1/xorbs/{prefix}/{xorb}: the body (chunk records) is stored when it
// hashes to the xorb hash; {"was_inserted": false} when it was already there, 400 naming what was wrong
// otherwise.
func (s *Server) handlePutXorb(w http.ResponseWriter, r *http.Request, c Claims) {
	if !checkXorbPrefix(w, r) {
		return
	}
	h, ok := pathHash(w, r, "xorb")
	if !ok {
		return
	}
	if r.ContentLength > s.cfg.Limits.Xorb {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("xorb body of %d bytes exceeds %d", r.ContentLength, s.cfg.Limits.Xorb))
		return
	}
	counted, err := s.countedXorb(r.Context(), c.Namespace, h)
	if err != nil {
		s.fail(w, r, "xorb upload", err)
		return
	}
	if !counted && !s.withinQuota(w, r, c.Namespace, 0, 0) {
		return
	}
	// Bound the bodies held at once: with the size hint below the store allocates a whole body
	// before its bytes arrive.
	slot, err := s.xorbs.acquire(r.Context(), uploader(r, c.Subject, c.Namespace), bodyProgress(r), bodySize(r, s.cfg.Limits.Xorb))
	if err != nil {
		return
	}
	defer slot.release()
	meter := s.meter(r, c.Namespace, http.MaxBytesReader(w, r.Body, s.cfg.Limits.Xorb))
	defer meter.done()
	meter.resent = counted // the usage counts the xorb whole already: sending it again adds nothing
	var body io.Reader = meter
	if r.ContentLength > 0 {
		// The store reads the body into one buffer; knowing its size spares it growing a 64 MiB
		// buffer by doubling (several copies and zeroings per byte). A body longer than announced
		// still fails on the limit, and a shorter one as truncated records.
		body = sizedReader{body, int(r.ContentLength)}
	}
	var admit func(raw uint64) error
	if len(meter.checks) > 0 { // without a quota, no lookup of the upload record per xorb
		admit = meter.admitRaw
	}
	up, err := s.cfg.Store.PutXorbAdmitted(r.Context(), s.access(c), h, body, xorb.ParseFollows(r.Header.Get(lfsbatch.HeaderXorbFollows)), admit)
	if err != nil {
		s.fail(w, r, "xorb upload", err)
		return
	}
	s.metrics.xorbStored(up.Inserted, received(r))
	if up.Counted {
		// The repository's usage counts the xorb whole from now on (store/uploads.go): the
		// upload that wrote the record (or stored again the xorb gc had deleted) adds it to the
		// cached usage.
		s.quota.add(usageKeys(c.Namespace), up.RawBytes)
	}
	if !up.Inserted {
		// The store had it. Answering before the body is read to its end makes net/http close
		// the connection, which some proxies turn into a 502 for a request they are still
		// sending: read what is left of it (within the limit) first.
		_, _ = io.Copy(io.Discard, body)
	}
	writeJSON(w, http.StatusOK, casapi.PutXorbResponse{WasInserted: up.Inserted})
}

// handleHeadXorb answers HEAD /v1/xorbs/{prefix}/{xorb}: 200 when the token's repository (or user)
// may reference the stored xorb without sending it, 404 otherwise (even when another repository
// stored it: the client then uploads it, and its bytes earn the right).
func (s *Server) handleHeadXorb(w http.ResponseWriter, r *http.Request, c Claims) {
	if !checkXorbPrefix(w, r) {
		return
	}
	h, ok := pathHash(w, r, "xorb")
	if !ok {
		return
	}
	has, err := s.cfg.Store.HasXorb(r.Context(), h)
	if has && err == nil {
		has, err = s.cfg.Store.CanReference(r.Context(), s.access(c), h)
	}
	switch {
	case err != nil:
		s.fail(w, r, "xorb lookup", err)
	case !has:
		w.WriteHeader(http.StatusNotFound)
	default:
		w.WriteHeader(http.StatusOK)
	}
}

// readShard reads a shard upload body within the limit, answering 413/400 itself on failure. The
// buffer grows with the bytes that arrive, never from the Content-Length the client announces (a
// claim of 64 MiB followed by a trickle would otherwise hold 64 MiB per request).
func (s *Server) readShard(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	limit := s.cfg.Limits.Shard
	if r.ContentLength > limit {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("shard body of %d bytes exceeds %d", r.ContentLength, limit))
		return nil, false
	}
	b, err := readAllInto(make([]byte, 0, shardReadStart), http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		status, msg := statusOf(err)
		if status == http.StatusInternalServerError {
			status, msg = http.StatusBadRequest, "reading shard body: "+err.Error()
		}
		writeError(w, status, msg)
		return nil, false
	}
	if len(b) == 0 {
		writeError(w, http.StatusBadRequest, "empty shard body")
		return nil, false
	}
	return b, true
}

// takeShard takes a shard upload in: the early quota check, its body read whole (readShard) and
// what it adds reserved (chargeShard), answering a refusal itself (ok false). The early check's
// refusal (a repository at or over its quota) waits for the body: a shard that adds nothing to the
// usage is taken (a registration retried after its answer was lost; the shard of a push whose
// xorbs took the repository exactly to its quota). It holds one of the
// MaxShardBodies slots from before the body is read until done is called, after the
// registration: bodies held whole are bounded in number, as xorb bodies are, and one user's many
// uploads wait behind another's fair share.
func (s *Server) takeShard(w http.ResponseWriter, r *http.Request, c Claims) (body []byte, charge *shardCharge, done func(), ok bool) {
	early, ok := s.quotaRefusal(w, r, c.Namespace, 0, 0)
	if !ok {
		return nil, nil, nil, false
	}
	slot, err := s.shardBodies.acquire(r.Context(), uploader(r, c.Subject, c.Namespace), bodyProgress(r), bodySize(r, s.cfg.Limits.Shard))
	if err != nil {
		return nil, nil, nil, false // the client left
	}
	if body, ok = s.readShard(w, r); ok {
		charge, ok = s.chargeShard(w, r, c, body, early)
	}
	if !ok {
		slot.release()
		return nil, nil, nil, false
	}
	return body, charge, slot.release, true
}

// shardReadStart is the buffer a shard body is first read into (most shards of small pushes fit).
const shardReadStart = 32 << 10

func readAllInto(buf []byte, r io.Reader) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// handlePutShardV1 answers POST /v1/shards: {"result": 1} when the shard registered something new,
// {"result": 0} when everything was known.
func (s *Server) handlePutShardV1(w http.ResponseWriter, r *http.Request, c Claims) {
	body, charge, done, ok := s.takeShard(w, r, c)
	if !ok {
		return
	}
	defer done()
	existed, err := s.putShard(r.Context(), c, uploader(r, c.Subject, c.Namespace), body, charge)
	if err != nil {
		s.fail(w, r, "shard upload", err)
		return
	}
	res := casapi.ShardSyncPerformed
	if existed {
		res = casapi.ShardExists
	}
	writeJSON(w, http.StatusOK, casapi.PutShardResponse{Result: res})
}

// handlePutShardV2 answers POST /v2/shards with 200 and NDJSON frames: validating, committing, then
// result, or an error frame {message, retryable}. While the store works the last frame is repeated every
// HeartbeatInterval so proxies and clients see the connection alive. Frames are flushed together:
// the first one waits up to firstFrameDelay, so the registration of a small shard (most of them)
// answers in one write, headers and all frames, instead of one write and one client wake-up per
// frame.
func (s *Server) handlePutShardV2(w http.ResponseWriter, r *http.Request, c Claims) {
	body, charge, release, ok := s.takeShard(w, r, c)
	if !ok {
		return
	}
	defer release()
	w.Header().Set("Content-Type", contentTypeNDJSON)
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	send := func(fs ...casapi.ShardFrame) {
		for _, f := range fs {
			_ = casapi.Encode(w, f)
		}
		_ = rc.Flush()
	}
	zero, one := 0, 1
	last := casapi.ShardFrame{Type: "validating", Verified: &zero, Total: &one}
	_ = casapi.Encode(w, last) // flushed by the first tick or with the outcome

	done := make(chan shardOutcome, 1)
	go func() { // joined below: the handler waits for its outcome (r's context ends it early)
		existed, err := s.putShard(r.Context(), c, uploader(r, c.Subject, c.Namespace), body, charge)
		done <- shardOutcome{existed, err}
	}()
	o := s.heartbeat(send, last, done)
	if o.err != nil {
		status, msg := statusOf(o.err)
		if status >= 500 {
			s.log.Error().Err(o.err).Str("path", r.URL.Path).Msg("shard upload")
		}
		send(casapi.ShardFrame{Type: "error", Message: "shard upload: " + msg, Retryable: retry.Classify(status) == retry.Retryable})
		return
	}
	res := casapi.ShardSyncPerformed
	if o.existed {
		res = casapi.ShardExists
	}
	send(casapi.ShardFrame{Type: "validating", Verified: &one, Total: &one},
		casapi.ShardFrame{Type: "committing", Stage: "syncing"},
		casapi.ShardFrame{Type: "result", Result: &res})
}

// shardOutcome is what a registration of POST /v2/shards came to.
type shardOutcome struct {
	existed bool
	err     error
}

// heartbeat waits for the registration's outcome, flushing the frames written so far after
// firstFrameDelay and repeating last every HeartbeatInterval meanwhile.
func (s *Server) heartbeat(send func(...casapi.ShardFrame), last casapi.ShardFrame, done <-chan shardOutcome) shardOutcome {
	first := time.NewTimer(min(firstFrameDelay, s.cfg.HeartbeatInterval))
	defer first.Stop()
	tick := time.NewTicker(s.cfg.HeartbeatInterval)
	defer tick.Stop()
	for {
		select {
		case <-first.C:
			send()
		case <-tick.C:
			send(last)
		case o := <-done:
			return o
		}
	}
}

// putShard registers a shard for the token's repository and user, and counts it, in the metrics
// and against the quota (charge). Registrations run MaxShardPuts at a time (each may cost
// seconds of hashing, store/budget.go) in slots shared fairly between users (who names the user
// of the request, as for uploads): more wait their turn, or their request's end. The body was
// read before: a slot is never cut, a registration is work the server does, not a body it waits
// for.
func (s *Server) putShard(ctx context.Context, c Claims, who string, body []byte, charge *shardCharge) (bool, error) {
	slot, err := s.shards.acquire(ctx, who, nil, 0)
	if err != nil {
		charge.done(false)
		return false, err
	}
	defer slot.release()
	existed, err := s.cfg.Store.PutShardAs(ctx, s.access(c), body)
	charge.done(err == nil)
	if err == nil {
		s.metrics.shardStored()
	}
	return existed, err
}

// access is what a CAS token's requests may do in the store: its repository, and its user (in open
// mode every client is one user, openUser, as every client may do anything there).
func (s *Server) access(c Claims) store.Access {
	user := c.Subject
	if user == "" && s.Open() {
		user = openUser
	}
	return store.Access{Repo: c.Namespace, User: user}
}

// openUser is the user of every request of an open server.
const openUser = "*open*"

// firstFrameDelay is how long POST /v2/shards holds its first frame back, hoping to send it with the
// outcome: longer than a small shard's registration, far shorter than any client's read timeout.
const firstFrameDelay = 250 * time.Millisecond

// handleHeadFile answers HEAD /v1/files/{file}: 200 with Content-Length = the file's size, or 404
// (also for a file registered in another repository than the token's).
func (s *Server) handleHeadFile(w http.ResponseWriter, r *http.Request, c Claims) {
	file, ok := pathHash(w, r, "file")
	if !ok {
		return
	}
	size, err := s.cfg.Store.FileSizeIn(r.Context(), c.Namespace, file)
	if err != nil {
		status, _ := statusOf(err)
		if status >= 500 {
			s.log.Error().Err(err).Str("path", r.URL.Path).Msg("file size")
		}
		w.WriteHeader(status)
		return
	}
	w.Header().Set("Content-Length", strconv.FormatUint(size, 10))
	w.WriteHeader(http.StatusOK)
}

// received is how many bytes of r's body the handler read (its Content-Length when it is not
// paced).
func received(r *http.Request) int64 {
	if p := bodyProgress(r); p != nil {
		return p.received()
	}
	return max(r.ContentLength, 0)
}

// bodySize is the length of r's body: its Content-Length, else limit.
func bodySize(r *http.Request, limit int64) int64 {
	if r.ContentLength >= 0 {
		return r.ContentLength
	}
	return limit
}

// sizedReader is a body whose announced length (Content-Length) it reports as Len, the size hint
// the store's body reader takes.
type sizedReader struct {
	io.Reader
	n int
}

// Len returns the announced length.
func (r sizedReader) Len() int { return r.n }
