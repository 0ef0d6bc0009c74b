// Package download rebuilds a Xet file (or a byte range of it) from its reconstruction plan: the
// xorb ranges are fetched in parallel, their chunk records decoded and cut to the file's terms, and
// written at their offsets into a temp file beside the destination, which is verified and then
// renamed into place.
package download

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/concurrency"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
	"github.com/git-xet-transfer/git-xet-transfer/xet/span"
)

// Config configures downloads. Zero fields take defaults.
type Config struct {
	CAS cas.Client
	// Adapt, when set, decides how many ranges are in flight (xet/concurrency: more while
	// throughput rises, fewer on 429/503, failures and rising latency); it may be shared by the
	// downloads of one endpoint. Concurrency is then ignored.
	Adapt *concurrency.Controller
	// Concurrency is the number of ranges in flight without Adapt; default 4. A caller reading a store in this
	// process (xet/embedded) has no latency to hide and may say 1: one range at a time costs the
	// least CPU per byte (parallel jobs share caches and SMT siblings), leaves a core to the
	// caller, and keeps every write at the SHA-256 frontier (never read back).
	Concurrency int
	// Retry is the budget of each range: a range failing retryably (a reset connection, a body cut
	// short, a 5xx) is fetched and decoded again. The CAS client makes one attempt per Fetch.
	Retry retry.Policy
	Log   zerolog.Logger
	// BufferedIO writes the whole output through the page cache. By default (on Linux) the bulk
	// of it is written with O_DIRECT from the job buffers: it skips a copy per byte and the
	// write-back before the final fsync, but leaves the file out of the page cache.
	BufferedIO bool
	// GapBytes: when a term is partly local (Request.Local), its missing chunks are fetched as
	// ranges of the xorb, found with the xorb's footer (cas.Client.XorbFooter, read once per xorb
	// and download); local chunks between two such ranges that span fewer bytes of the xorb than
	// GapBytes are fetched with them, since a second request costs a round trip and its headers
	// (at 5 ms and 400 Mbit/s, the time of 250 KB). A local run smaller than GapBytes alone does
	// not make a term worth splitting. Default DefaultGapBytes (256 KiB, about four chunks of
	// 64 KiB).
	GapBytes int64
	// SplitBytes: with Adapt (a CAS over a network), a fetched term of a whole-file download
	// larger than this is fetched as ranges of about this many bytes (whole chunks, at the offsets
	// of the xorb's footer, read once per xorb and download), started in file order: the output is
	// written front to back while the ranges are in flight, so the SHA-256 keeps up with the
	// transfer, and the controller sees a sample per range. Each range is retried on its own; a
	// CAS without footers (or with version-0 ones) gets the whole term. Default DefaultSplitBytes.
	SplitBytes int64
}

func (cfg Config) withDefaults() Config {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 4
	}
	if cfg.GapBytes <= 0 {
		cfg.GapBytes = DefaultGapBytes
	}
	if cfg.SplitBytes <= 0 {
		cfg.SplitBytes = DefaultSplitBytes
	}
	return cfg
}

// Request is one download.
type Request struct {
	File  hash.Hash
	Range *casapi.ByteRange // nil: the whole file
	// Plan, when set, is the CAS's reconstruction of File (and Range) that the caller asked for
	// already (the agent looks at a plan's xorbs before a download takes its turn): it is used
	// instead of asking again. Planned again when its signed URLs have expired.
	Plan   *casapi.ReconstructionV2
	SHA256 *[32]byte // checked when the whole file is downloaded
	Size   int64     // -1 unknown; checked when the whole file is downloaded
	// Path is the final path; the file is written to a temp file beside it and renamed when verified.
	Path string
	// PrivatePath says no one looks at Path before Download returns (the agent's own name in
	// git-lfs's temp directory, handed over only after): the file is written there directly, without
	// a second temp name and a rename, and removed when the download fails.
	PrivatePath bool
	// NoSync skips the fsync before Download returns: for a file handed to git-lfs, which does not
	// sync the objects it stores either (a file a crash loses is fetched again; it is verified
	// before it is handed over either way).
	NoSync bool
	// Progress (may be nil) is told the bytes written so far, each call more than the last; calls
	// are serialised by a lock of their own, which a slow one holds up only the ranges reporting.
	Progress func(done int64)
	// Local, for a whole-file download, offers chunks already on this machine: terms it covers
	// are copied from there (each chunk verified first) instead of fetched, and of a term it
	// covers in part only the missing chunks are fetched (Config.GapBytes).
	Local span.Local
	// OnTerm, for a whole-file download, is told of each term once its bytes are written and its
	// chunk hashes verified (span.Span.Path ""): the verified part of the output so far. It is called
	// by the goroutine of the range that finished the term, under no lock of the download's:
	// calls may come from several ranges at once, and one that takes its time holds up its own
	// range only.
	OnTerm func(span.Span)
	// OnPart, for a whole-file download, is told of the parts of fetched terms as they are
	// written (about every 8 MiB of a term, XorbEnd set; then the rest of the term): what an
	// interrupted attempt's successor can keep and continue from (with Keep and Local). Terms
	// copied from local files are not reported (copying them again is cheap). Called as OnTerm
	// is: from several ranges at once.
	OnPart func(span.Span)
	// Keep, with PrivatePath, resumes into what is already at Path: the file is not truncated
	// (Local may name verified parts of it) and is left there when the download fails.
	Keep bool
	// Stats, when set, receives where the bytes came from.
	Stats *Stats
}

// Download writes req.File (or req.Range of it) to req.Path. A whole-file download is verified: the
// chunk hashes and the file hash computed over the decoded data must give req.File, and the SHA-256
// (when given) and size (when known) must match. Nothing is left at req.Path or beside it when it
// fails.
//
// Concurrency: up to Config.Concurrency ranges are fetched and decoded at once, each on its own
// goroutine, writing with WriteAt to disjoint places; memory is bounded by the ranges in flight
// (a 512 KiB read buffer and a 1 MiB write buffer each, from pools), not by the file size.
func Download(ctx context.Context, cfg Config, req Request) (err error) {
	if cfg.CAS == nil {
		return errors.New("download: no CAS configured")
	}
	if req.Path == "" {
		return errors.New("download: no destination path")
	}
	cfg = cfg.withDefaults()
	defer func() {
		if err != nil {
			err = fmt.Errorf("download %s to %s: %w", req.File, req.Path, err)
		}
	}()
	f, err := openOutput(req)
	if err != nil {
		return err
	}
	tmp := f.Name()
	var df *os.File
	if !cfg.BufferedIO {
		df = openDirect(tmp)
	}
	defer func() {
		if df != nil {
			df.Close()
		}
		if err != nil {
			f.Close()
			if !(req.PrivatePath && req.Keep) {
				os.Remove(tmp)
			}
		}
	}()
	if req.Stats == nil {
		req.Stats = new(Stats)
	}
	if err := fillOrRefill(ctx, cfg, req, f, df); err != nil {
		return err
	}
	if !req.NoSync {
		if err := f.Sync(); err != nil {
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	if req.PrivatePath {
		return nil
	}
	return os.Rename(tmp, req.Path)
}

// openOutput opens the file a download writes: req.Path itself with PrivatePath (truncated unless
// Keep), else a new temp file beside it.
func openOutput(req Request) (*os.File, error) {
	if req.PrivatePath {
		flags := os.O_RDWR | os.O_CREATE
		if !req.Keep {
			flags |= os.O_TRUNC
		}
		return os.OpenFile(req.Path, flags, 0o644)
	}
	dir, base := filepath.Split(req.Path)
	if dir == "" {
		dir = "."
	}
	return os.CreateTemp(dir, "."+base+".*.xet-tmp")
}

// fillOrRefill fills f verified (fillVerified); when local chunks were used and the file does not
// verify anyway, it fills it again from the CAS alone.
func fillOrRefill(ctx context.Context, cfg Config, req Request, f, df *os.File) error {
	err := fillVerified(ctx, cfg, req, f, df)
	if used := req.Stats.Local + req.Stats.InPlace; err != nil && used > 0 && errors.As(err, new(mismatch)) && ctx.Err() == nil {
		// Every local chunk hashed right, yet the file does not verify: the local record itself is
		// wrong (or the CAS sent bad bytes recorded as good by an earlier attempt). Start afresh.
		cfg.Log.Warn().Err(err).Int64("local_bytes", used).Msg("download: fetching the whole file again, without local copies")
		req.Local = nil
		if err = f.Truncate(0); err != nil {
			return err
		}
		err = fillVerified(ctx, cfg, req, f, df)
	}
	return err
}

// sizeUpFront: outputs this big are sized and their blocks reserved before the jobs write. A smaller
// one (most files of a dataset) is written whole into its new, empty file, which sets its size, and
// skips the two calls.
const sizeUpFront = 1 << 20

// mismatch: the written bytes are not the file asked for.
type mismatch struct{ msg string }

func (m mismatch) Error() string { return m.msg }

// fillVerified fills f and checks the whole file's size and SHA-256.
func fillVerified(ctx context.Context, cfg Config, req Request, f, df *os.File) error {
	whole := req.Range == nil
	size, sum, err := fill(ctx, cfg, req, f, df)
	if err != nil {
		return err
	}
	if whole && req.Size >= 0 && size != req.Size {
		return mismatch{fmt.Sprintf("file is %d bytes, expected %d", size, req.Size)}
	}
	if whole && req.SHA256 != nil {
		if sum == nil {
			return errors.New("internal error: no SHA-256 computed")
		}
		if *sum != *req.SHA256 {
			return mismatch{fmt.Sprintf("SHA-256 mismatch: Xet file %s has SHA-256 %x, not %x (the LFS oid): the CAS maps that oid to the wrong file; "+
				"pushing the right content again repairs it", req.File, *sum, *req.SHA256)}
		}
	}
	return nil
}

// fill plans and writes the requested bytes into f, re-planning once when a signed URL expired.
// It returns the number of bytes written and, for a whole file with req.SHA256 set, their SHA-256
// (computed as they are written, see shaStream).
func fill(ctx context.Context, cfg Config, req Request, f, df *os.File) (int64, *[32]byte, error) {
	if req.Range == nil && req.File == hash.Zero { // the empty file has the zero hash and no terms
		if req.SHA256 != nil {
			sum := sha256.Sum256(nil)
			return 0, &sum, nil
		}
		return 0, nil, nil
	}
	plan := req.Plan
	for replanned := false; ; replanned = true {
		if plan == nil || replanned {
			var err error
			if plan, err = Plan(ctx, cfg.CAS, req.File, req.Range, req.Size); err != nil { // every answer, when a server caps them
				return 0, nil, err
			}
		}
		size, sum, err := fillPlan(ctx, cfg, req, plan, f, df)
		if errors.Is(err, cas.ErrURLExpired) && !replanned {
			cfg.Log.Debug().Str("file", req.File.String()).Msg("download: signed URL expired; planning again")
			continue
		}
		return size, sum, err
	}
}

// fillPlan writes the bytes plan says into f (see fill). A whole file's decoded chunks must hash
// to req.File.
func fillPlan(ctx context.Context, cfg Config, req Request, plan *casapi.ReconstructionV2, f, df *os.File) (int64, *[32]byte, error) {
	whole := req.Range == nil
	l, js, err := planFill(cfg, req, plan, f.Name())
	if err != nil {
		return 0, nil, err
	}
	if whole && req.Size >= 0 && l.size != req.Size {
		// Before any fetch and before the file is sized: the expected size may be a pointer's
		// (a cloned repository's choice), the plan's a server's; neither is worked on when
		// they disagree.
		return 0, nil, mismatch{fmt.Sprintf("file is %d bytes (its reconstruction plan), expected %d", l.size, req.Size)}
	}
	if req.Keep || l.size >= sizeUpFront {
		if err := f.Truncate(l.size); err != nil {
			return 0, nil, err
		}
		preallocate(f, l.size)
	}
	s := newSink(cfg, req, f, df, l, js)
	if s.sha != nil {
		defer s.sha.stop()
	}
	err = runJobs(ctx, cfg, js, s)
	s.close(err == nil)
	s.statsTo(req.Stats)
	if err != nil {
		return 0, nil, err
	}
	s.progressEnd()
	if whole {
		got, err := s.merkle.sum()
		if err != nil {
			return 0, nil, err
		}
		if got != req.File {
			return 0, nil, mismatch{fmt.Sprintf("content does not match the file hash: decoded data hashes to %s", got)}
		}
	}
	if s.sha == nil {
		return l.size, nil, nil
	}
	sum, err := s.sha.finish(l.size)
	if err != nil {
		return 0, nil, err
	}
	return l.size, &sum, nil
}

// planFill lays out req's bytes of plan and returns the jobs writing them to the output named
// out: terms copied from req.Local where it holds them, the rest fetched; with cfg.Adapt (a CAS
// over a network), the large fetched terms of a whole file split into ranges in file order.
func planFill(cfg Config, req Request, plan *casapi.ReconstructionV2, out string) (*layout, []*job, error) {
	want := int64(-1)
	if req.Range != nil {
		if req.Range.End < req.Range.Start {
			return nil, nil, fmt.Errorf("bad range %d-%d", req.Range.Start, req.Range.End)
		}
		want = int64(req.Range.Len())
	}
	l, err := newLayout(plan, want)
	if err != nil {
		return nil, nil, err
	}
	whole := req.Range == nil
	var local *localPlan
	if whole && req.Local != nil {
		local = planLocal(req.Local, l, out, cfg.GapBytes)
	}
	js, err := planJobs(plan, l, local)
	if err != nil {
		return nil, nil, err
	}
	if whole && cfg.Adapt != nil {
		js = splitJobs(js, l, cfg.SplitBytes)
	}
	return l, js, nil
}

// newSink returns the sink of jobs js writing layout l to f: a whole file's chunks go to the file
// hash, its bytes to the SHA-256 when req.SHA256 asks for it, and an output of writebackStep or
// more has its write-back started as it is written. close ends what it started.
func newSink(cfg Config, req Request, f, df *os.File, l *layout, js []*job) *sink {
	s := &sink{f: f, df: df, l: l, report: req.Progress, onTerm: req.OnTerm, onPart: req.OnPart,
		readFooter: cfg.CAS.XorbFooter, footerUses: make(map[hash.Hash]int), gap: cfg.GapBytes}
	for _, j := range js {
		switch j.kind.(type) {
		case *partTerm, *splitRange:
			s.footerUses[j.xorb]++
		}
	}
	if req.Range == nil {
		s.merkle = newMerkleStream(len(l.terms), filepath.Dir(f.Name()), defaultWaitBudget)
		if req.SHA256 != nil {
			s.sha = newSHAStream(f)
		}
	}
	if l.size >= writebackStep {
		s.wb = newWriteback(f)
	}
	return s
}

// close ends the sink's write-back (written: every byte was) and the file hash's spill, once the
// jobs have ended.
func (s *sink) close(written bool) {
	if s.wb != nil {
		s.wb.close(written)
	}
	if s.merkle != nil {
		s.merkle.close()
	}
}
