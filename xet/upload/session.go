// Package upload turns files into Xet storage: a Session streams each file through the chunker,
// dedupes its chunks (this session's chunks, the local shard cache, then global-dedupe queries),
// packs new chunks into xorbs that are uploaded while chunking goes on, and at Finish registers every
// file with one shard.
package upload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/chunk"
	"github.com/git-xet-transfer/git-xet-transfer/xet/concurrency"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// ShardCache is what a session asks of the local shard cache (*localshards.Cache implements it).
type ShardCache interface {
	Lookup(chunk hash.Hash) (shard.Match, bool, error)
	AddOwn(s *shard.Shard) error
	AddDedupe(data []byte) error
	// Forget drops the cached shards listing any of xorbs (the CAS does not hold them).
	Forget(xorbs []hash.Hash) (int, error)
}

// StaleError: the CAS refused a shard because it does not hold xorbs the shard names: ones the
// session deduplicated against (the shard cache promised them; the remote was recreated or
// restored from an older backup), or ones it uploaded itself that are gone by the time the shard
// came (the CAS's garbage collection removed them: an upload resumed after its grace period). The
// session has told the cache to forget them; uploading the files again in a new session without
// the cache succeeds.
type StaleError struct {
	Missing []hash.Hash
	Err     error
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("the CAS does not hold %d xorb(s) the shard names (first %s): %v", len(e.Missing), e.Missing[0], e.Err)
}

func (e *StaleError) Unwrap() error { return e.Err }

// maxStaleChecks bounds the xorbs asked about after a refused shard.
const maxStaleChecks = 256

// stale asks the CAS about the xorbs sh's files use, after the CAS refused sh with err; it returns
// a *StaleError (the cache told to forget them) when some are missing, else nil.
func (s *Session) stale(ctx context.Context, sh *shard.Shard, err error) error {
	if retry.IsRetryable(err) || ctx.Err() != nil {
		return nil
	}
	asked := make(map[hash.Hash]bool)
	var missing []hash.Hash
	for _, f := range sh.Files {
		for _, t := range f.Terms {
			if asked[t.Xorb] || len(asked) >= maxStaleChecks {
				continue
			}
			asked[t.Xorb] = true
			if has, herr := s.cfg.CAS.HasXorb(ctx, t.Xorb); herr == nil && !has {
				missing = append(missing, t.Xorb)
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if s.cfg.Cache != nil {
		if _, ferr := s.cfg.Cache.Forget(missing); ferr != nil {
			s.log.Warn().Err(ferr).Msg("upload: could not drop stale entries from the shard cache")
		}
	}
	return &StaleError{Missing: missing, Err: err}
}

// Config configures a Session. Zero fields take defaults.
type Config struct {
	CAS    cas.Client
	Cache  ShardCache // may be nil
	Policy xorb.Policy
	// Concurrency is the number of xorb uploads in flight; default 2. A caller writing to a store in
	// this process (xet/embedded) should say 1: the store writes a xorb (~40 ms for 64 MiB) faster
	// than the next one fills (~70 ms of chunking and compression), so a second upload in flight
	// would only hold another 64 MiB buffer.
	Concurrency int
	// Adapt, when set, decides how many xorb uploads are in flight (xet/concurrency: more while
	// throughput rises, fewer on 429/503, failures and rising latency), at most its Max; it may
	// be shared by the sessions of one endpoint. Concurrency is then ignored.
	Adapt        *concurrency.Controller
	GlobalDedupe bool  // ask the CAS about eligible chunks that no local source knows
	QuerySpacing int64 // at most one global query per this many bytes of a file; default 4e6
	// TempDir holds the session's spill file (the chunk lists of its cut xorbs) and its files'
	// EntryLogs; default os.TempDir(). The agent uses git-lfs's temp directory.
	TempDir string
	// ShardChunks bounds the xorb chunks one shard lists (default DefaultShardChunks). Finish
	// registers the xorbs beyond it with shards of their own, before the shard of the files.
	ShardChunks int
	// IndexBytes bounds the session's chunk index (default DefaultIndexBytes); past it, only a
	// sample of the new chunks is indexed (see chunkIndex).
	IndexBytes int
	// ResumeCheckBytes: a xorb of at least this many bytes is first asked about (cas.Client.HasXorb)
	// and not sent when the CAS already holds it, so an upload interrupted after some xorbs were
	// accepted does not send them again. 0: never ask (one request per xorb is not worth it for
	// small xorbs).
	ResumeCheckBytes int64
	Log              zerolog.Logger
	// KeepEntries keeps each file's chunk hashes and sizes in file order (FileResult.Entries, in
	// a temp file in TempDir past the first 455): with Session.Registered they say which
	// chunks of which xorbs lie where in the file (the agent's local chunk index).
	KeepEntries bool
	// Lend: when Upload is given a regular *os.File, the raw bytes of chunks stored uncompressed
	// are not copied into xorb bodies but read from the file again as each xorb is sent
	// (xorb.Builder.Lend). The caller keeps the file open until Finish returns. Set it only for a
	// CAS that hashes every chunk it receives (a server), so that a file written during its upload
	// fails the upload instead of storing other bytes; Finish also fails when a file's size or
	// modification time changed since its Upload began.
	Lend bool
	// SizeHint is how many bytes the session will upload, when the caller knows (0: unknown). A
	// session of at most SmallSessionBytes builds its xorbs in small recycled buffers instead of
	// 64 MiB ones (see smallBodies).
	SizeHint int64
	// SeparateFiles keeps each file's chunks in xorbs of its own: the leftover of a file is cut at
	// its end, never merged with another file's (xet-core's aggregation rule, fileDone). The agent's
	// batches of small files use it so that their xorbs, and the shard cache's entries for them
	// (a one-chunk xorb takes 40 bytes there, localshards' singles), are what uploading each file
	// on its own would have made.
	SeparateFiles bool
}

const (
	// DefaultShardChunks: a shard listing 65536 chunks is about 3 MB, and covers 4 GiB of new data
	// at the average chunk size.
	DefaultShardChunks = 1 << 16
	// DefaultIndexBytes: 16 MiB hold about 786,000 chunks (48 GiB of new data at the average chunk
	// size) before the index starts sampling.
	DefaultIndexBytes = 16 << 20
)

// FileResult describes one uploaded file.
type FileResult struct {
	FileHash     hash.Hash
	SHA256       [32]byte
	Size         int64
	NewBytes     int64 // bytes of chunks this file added to new xorbs
	DedupedBytes int64 // bytes of chunks found already stored (or already in this session)
	Chunks       int
	Entries      *EntryLog // with Config.KeepEntries: the chunks in file order, until the session's Close
}

// Session uploads one file or many: their new chunks go into shared xorbs, and Finish registers
// them all with one shard.
//
// Concurrency: Upload and Finish may be called from any goroutine but run one at a time (a mutex
// serialises them). Cut xorbs are uploaded by Config.Concurrency goroutines of an errgroup
// (xorbUploads); cutting blocks while all of them are busy, so memory holds at most
// Concurrency uploading xorbs, one waiting, the file's open xorb and the session accumulator,
// whatever the file sizes. What the session keeps per chunk of its new data is bounded too: the
// chunk lists of cut xorbs go to a temp file (chunkLists) and the chunk index has a byte limit
// (Config.IndexBytes). A failed xorb upload fails the next Upload or Finish. When the context of
// an Upload or Finish is cancelled, the uploads in flight are cancelled too and the session is
// unusable.
type Session struct {
	cfg Config
	log zerolog.Logger

	mu       sync.Mutex
	up       *xorbUploads // the xorb uploads in flight, until Finish; nil before the first
	failed   error
	index    *chunkIndex // chunks of this session's xorbs
	lists    chunkLists  // chunk lists of the cut xorbs
	sxorbs   []*sxorb    // this session's xorbs, by ordinal (sxorb.ord)
	acc      *sxorb      // the accumulator: leftovers of finished files
	lending  []*lending  // files lent from since the last Finish (Config.Lend)
	newXorbs []*sxorb    // xorbs cut since the last Finish
	files    []pendingFile
	done     []shard.File  // the files registered by the last Finish
	global   []*gshard     // global-dedupe answers of this session
	queries  globalQueries // global-dedupe questions in flight (dedupe.go)
	stats    struct{ xorbs int }
	resumed  atomic.Int64 // bytes of xorbs not sent because the CAS had them (ResumeCheckBytes)
	// entryLogs are the files' chunk lists (Config.KeepEntries), closed with the session.
	entryLogs []*EntryLog
}

// pendingFile is a file waiting for Finish: its shard block with placeholder xorb hashes, and the
// reference each term is to be patched from.
type pendingFile struct {
	file shard.File
	refs []ref
}

// NewSession returns a session uploading to cfg.CAS.
func NewSession(cfg Config) *Session {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 2
	}
	if cfg.QuerySpacing <= 0 {
		cfg.QuerySpacing = 4_000_000
	}
	if cfg.ShardChunks <= 0 {
		cfg.ShardChunks = DefaultShardChunks
	}
	if cfg.IndexBytes <= 0 {
		cfg.IndexBytes = DefaultIndexBytes
	}
	s := &Session{cfg: cfg, log: cfg.Log}
	s.lists = chunkLists{dir: cfg.TempDir, log: cfg.Log}
	s.index = newChunkIndex(s.chunkHash, cfg.IndexBytes)
	return s
}

// Resumed is the bytes of xorbs this session did not send because the CAS already held them
// (see Config.ResumeCheckBytes).
func (s *Session) Resumed() int64 { return s.resumed.Load() }

// Close releases the session's temp files (its files' EntryLogs too) and the buffers of xorbs
// still open, and stops and joins what it still runs (xorb uploads, questions to the CAS). Call it
// when done with the session (after Finish); a session is not usable after Close.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.up != nil {
		s.up.cancel()
		_ = s.up.g.Wait()
		s.up = nil
	}
	s.stopQueries()
	if s.failed == nil {
		s.failed = errors.New("upload: session closed")
	}
	for _, x := range s.sxorbs {
		if x.b != nil { // open: never cut (the session failed or was not finished)
			putBody(x.b.Finish().Body)
			x.b = nil
		}
	}
	for _, l := range s.entryLogs {
		l.Close()
	}
	s.entryLogs = nil
	return s.lists.close()
}

// chunkHash returns the hash of chunk idx of the session's xorb ord, wherever its chunks went.
func (s *Session) chunkHash(ord, idx uint32) (hash.Hash, bool) {
	if int(ord) >= len(s.sxorbs) {
		return hash.Hash{}, false
	}
	root, base := s.sxorbs[ord].resolve()
	h, _, ok := root.chunkAt(base + idx)
	return h, ok
}

// uploads returns the xorb uploads in flight, starting them when needed.
func (s *Session) uploads() *xorbUploads {
	if s.up == nil {
		s.up = s.startUploads()
	}
	return s.up
}

// batchErr returns the error that stopped the uploads in flight, if any.
func (s *Session) batchErr() error {
	if s.failed != nil {
		return s.failed
	}
	if s.up != nil && s.up.stopped() {
		s.failed = s.up.g.Wait()
		if s.failed == nil {
			s.failed = context.Canceled
		}
		return s.failed
	}
	return nil
}

// watch cancels the uploads in flight when ctx ends; the returned func stops watching.
func (s *Session) watch(ctx context.Context) func() {
	stop := context.AfterFunc(ctx, s.uploads().cancel)
	return func() { stop() }
}

// Upload streams r through the chunker (never holding the file), dedupes and packs its chunks, and
// returns the file's hash and figures. sha256, when given (git-lfs passes the oid), is used as the
// file's SHA-256; otherwise it is computed beside the chunker on its own goroutine. progress (may be
// nil) gets the bytes processed so far. The file is registered by the next Finish.
func (s *Session) Upload(ctx context.Context, r io.Reader, sha256 *[32]byte, progress func(done int64)) (*FileResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cfg.CAS == nil {
		return nil, errors.New("upload: no CAS configured")
	}
	if err := s.batchErr(); err != nil {
		return nil, fmt.Errorf("upload: session failed earlier: %w", err)
	}
	defer s.watch(ctx)()

	cr := chunk.NewReaderOptions(r, chunk.Options{SHA256: sha256 == nil})
	defer cr.Close()
	f := newFileState(s)
	if s.cfg.Lend {
		f.lendFrom(r)
	}
	done, err := s.chunkAll(ctx, cr, f, progress)
	if err != nil {
		return nil, err
	}
	if err := s.fileDone(ctx, f.open); err != nil {
		return nil, err
	}
	if err := s.batchErr(); err != nil {
		return nil, err
	}
	if s.lists.err != nil {
		return nil, s.lists.err
	}

	res := &FileResult{FileHash: f.merkle.FileSum(), Size: done, NewBytes: f.newBytes,
		DedupedBytes: f.dedupedBytes, Chunks: f.chunks, Entries: f.entries}
	if sha256 != nil {
		res.SHA256 = *sha256
	} else if res.SHA256, err = chunkerSHA256(cr); err != nil {
		return nil, err
	}
	file, refs, err := f.shardFile(res.FileHash, res.SHA256)
	if err != nil {
		return nil, err
	}
	s.files = append(s.files, pendingFile{file: file, refs: refs})
	s.log.Debug().Str("file", res.FileHash.String()).Int64("size", res.Size).Int64("new", res.NewBytes).
		Int64("deduped", res.DedupedBytes).Int("terms", len(file.Terms)).Msg("upload: file chunked")
	return res, nil
}

// chunkAll hands every chunk of cr to f, then ends the file; progress (may be nil) gets the bytes
// processed so far, about every MiB and at the end. It returns the file's size.
func (s *Session) chunkAll(ctx context.Context, cr *chunk.Reader, f *fileState, progress func(done int64)) (int64, error) {
	var done, reported int64
	for {
		c, err := cr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("upload: read file: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if err := f.chunk(ctx, c.Data, c.Hash, c.Offset); err != nil {
			return 0, err
		}
		if s.lists.err != nil {
			return 0, s.lists.err
		}
		done = c.Offset + int64(len(c.Data))
		if progress != nil && done-reported >= 1<<20 {
			progress(done)
			reported = done
		}
	}
	if err := f.finish(ctx); err != nil {
		return 0, err
	}
	if progress != nil && done != reported {
		progress(done)
	}
	return done, nil
}

// chunkerSHA256 is the SHA-256 cr computed of the file beside the chunker.
func chunkerSHA256(cr *chunk.Reader) ([32]byte, error) {
	sum, ok := cr.SHA256()
	if !ok {
		return sum, errors.New("upload: chunker did not compute the SHA-256")
	}
	return sum, nil
}

// shardFile returns the file's shard block (shard.UploadFile) with the verification hashes computed
// term by term while chunking (so the file's chunk hashes are never all held), with placeholder xorb
// hashes, and the reference each term is to be patched from.
func (f *fileState) shardFile(fileHash hash.Hash, sha256 [32]byte) (shard.File, []ref, error) {
	terms := make([]shard.Term, len(f.terms))
	refs := make([]ref, len(f.terms))
	covered := 0
	for i, t := range f.terms {
		terms[i] = shard.Term{Xorb: hash.Marker, UnpackedBytes: uint32(t.bytes), ChunkStart: t.start, ChunkEnd: t.end}
		refs[i] = t.ref
		covered += int(t.end - t.start)
	}
	if covered != f.chunks {
		return shard.File{}, nil, fmt.Errorf("upload: internal error: file %s terms cover %d chunks, the file has %d",
			fileHash, covered, f.chunks)
	}
	file, err := shard.UploadFile(fileHash, terms, f.verification, sha256)
	if err != nil {
		return shard.File{}, nil, fmt.Errorf("upload: internal error: %w", err)
	}
	return file, refs, nil
}

// Finish uploads the remaining xorbs, waits for every xorb upload and for the global-dedupe
// questions still in flight (their answers go to the shard cache), then registers every file
// uploaded since the last Finish with one shard (PutShard) and adds that shard to the cache. The
// session may be used again afterwards.
func (s *Session) Finish(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.batchErr(); err != nil {
		return fmt.Errorf("upload: session failed earlier: %w", err)
	}
	stop := s.watch(ctx)
	if s.acc != nil {
		if err := s.cut(ctx, s.acc); err != nil {
			stop()
			return err
		}
		s.acc = nil
	}
	err := s.up.wait()
	stop()
	s.up = nil
	if err == nil {
		err = s.endLending()
	}
	if err != nil {
		s.failed = err
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.settleQueries(ctx)
	if len(s.files) == 0 && len(s.newXorbs) == 0 {
		return nil
	}
	// The xorbs beyond what one shard lists are registered first, by shards of their own; the last
	// part goes with the files, whose terms may name any of them.
	parts := splitXorbs(s.newXorbs, s.cfg.ShardChunks)
	for _, part := range parts[:len(parts)-1] {
		sh, err := s.xorbShard(part)
		if err != nil {
			return err
		}
		if err := s.register(ctx, sh); err != nil {
			return err
		}
	}
	sh, err := s.xorbShard(parts[len(parts)-1])
	if err != nil {
		return err
	}
	if err := s.addFiles(sh); err != nil {
		return err
	}
	if err := s.register(ctx, sh); err != nil {
		return err
	}
	s.done = sh.Files
	s.files, s.newXorbs = nil, nil
	return nil
}

// Registered returns the shard blocks (terms with their real xorb hashes) of the files the last
// Finish registered, sorted by file hash (as in the shard; a file uploaded twice is there once).
func (s *Session) Registered() []shard.File {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}

// splitXorbs cuts xs into consecutive parts of at most max chunks each (a part holds at least one
// xorb); there is always at least one part, perhaps empty.
func splitXorbs(xs []*sxorb, max int) [][]*sxorb {
	var parts [][]*sxorb
	start, n := 0, 0
	for i, x := range xs {
		if n > 0 && n+int(x.nChunks) > max {
			parts = append(parts, xs[start:i])
			start, n = i, 0
		}
		n += int(x.nChunks)
	}
	return append(parts, xs[start:])
}

// xorbShard returns a shard listing the cut xorbs xs (their chunk lists read back from the spill).
func (s *Session) xorbShard(xs []*sxorb) (*shard.Shard, error) {
	sh := &shard.Shard{Version: shard.HeaderVersion, Xorbs: make([]shard.Xorb, 0, len(xs))}
	for _, x := range xs {
		sx, err := s.lists.shardXorb(x)
		if err != nil {
			return nil, err
		}
		sh.Xorbs = append(sh.Xorbs, sx)
	}
	return sh, nil
}

// register sorts sh, uploads it (upload form) and adds it to the local cache.
func (s *Session) register(ctx context.Context, sh *shard.Shard) error {
	sh.Sort()
	body := sh.AppendUpload(nil)
	if err := s.cfg.CAS.PutShard(ctx, body); err != nil {
		if serr := s.stale(ctx, sh, err); serr != nil {
			return serr
		}
		switch len(sh.Files) {
		case 0:
			return fmt.Errorf("upload: register %d xorbs: %w", len(sh.Xorbs), err)
		case 1:
			return fmt.Errorf("upload: register the file: %w", err)
		}
		return fmt.Errorf("upload: register %d files: %w", len(sh.Files), err)
	}
	if s.cfg.Cache != nil {
		if err := s.cfg.Cache.AddOwn(sh); err != nil {
			s.log.Warn().Err(err).Msg("upload: could not add the shard to the local cache")
		}
	}
	s.log.Debug().Int("files", len(sh.Files)).Int("xorbs", len(sh.Xorbs)).Int("bytes", len(body)).Msg("upload: shard registered")
	return nil
}

// addFiles patches the pending files' terms with the hashes of the xorbs they use (all cut by now)
// and adds the files to sh.
func (s *Session) addFiles(sh *shard.Shard) error {
	for _, pf := range s.files {
		f := pf.file
		f.Terms = append([]shard.Term(nil), f.Terms...)
		for i := range f.Terms {
			r := pf.refs[i]
			if r.sx == nil {
				f.Terms[i].Xorb = r.ext
				continue
			}
			root, off := r.sx.resolve()
			if !root.cut {
				return fmt.Errorf("upload: internal error: file %s term %d uses a xorb never cut", f.Hash, i)
			}
			f.Terms[i].Xorb = root.hash
			f.Terms[i].ChunkStart += off
			f.Terms[i].ChunkEnd += off
		}
		sh.Files = append(sh.Files, f)
	}
	return nil
}
