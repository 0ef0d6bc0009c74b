// Package xetfile reads byte ranges of Xet files without downloading them: a read is served by the
// chunks it covers, each verified before a byte of it is handed out.
//
// The trust chain: a xorb's footer (fetched with a suffix range, or from the cache) is used only
// when its chunk hashes and lengths aggregate to the xorb hash (xorb.Footer.Verify); a chunk is used
// only when its bytes hash to the footer's hash of it. So every byte returned is the bytes the
// reconstruction plan names. The plan is checked against the file's Xet hash once the footers of
// all its xorbs are known (plancheck.go), and a file read whole, in order, against its SHA-256 (the
// LFS oid): the read that finds either wrong fails, and so does every later read of the file.
//
// Where a chunk comes from, first found first: the memory cache (verified chunks, MemBytes), a read
// of the same chunk under way (one fetch serves every reader: flights by chunk hash), the disk
// cache (chunkcache), a local object holding it (the chunk index of .git/lfs/objects), the CAS. A
// read's missing chunks are fetched as ranges of consecutive chunks of a xorb, as many in flight as
// the source's controller admits (xet/concurrency); a sequential stream reads ahead of itself, by a
// window that doubles with each read that continues it, up to ReadAheadMax.
//
// A read that cannot be served fails with the reason (the caller logs it and answers EIO); it never
// waits longer than Config.Wait for its bytes. Background fetches belong to Files, which Close
// cancels and joins.
package xetfile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/localshards/chunkcache"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/concurrency"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
	"github.com/git-xet-transfer/git-xet-transfer/xet/span"
)

// Defaults of Config.
const (
	DefaultMemBytes     = 48 << 20
	DefaultReadAheadMax = 24 << 20
	DefaultRangeBytes   = 4 << 20
	DefaultWait         = cas.DefaultStallTimeout
)

// Config configures Files. Zero fields take defaults.
type Config struct {
	Cache *chunkcache.Cache // chunks and footers on disk; nil: none
	Local span.Local        // chunks of objects on this machine (the chunk index); nil: none
	Log   zerolog.Logger
	// MemBytes bounds the verified chunks kept in memory.
	MemBytes int64
	// ReadAheadMax is the largest read-ahead window of a sequential stream.
	ReadAheadMax int64
	// RangeBytes is the most raw bytes one fetch asks for.
	RangeBytes int64
	// Wait is the longest a read waits for its bytes (the stall timeout).
	Wait time.Duration
}

func (c Config) withDefaults() Config {
	if c.MemBytes <= 0 {
		c.MemBytes = DefaultMemBytes
	}
	if c.ReadAheadMax <= 0 {
		c.ReadAheadMax = DefaultReadAheadMax
	}
	c.ReadAheadMax = min(c.ReadAheadMax, c.MemBytes/2) // read-ahead still in memory when read
	if c.RangeBytes <= 0 {
		c.RangeBytes = DefaultRangeBytes
	}
	if c.Wait <= 0 {
		c.Wait = DefaultWait
	}
	return c
}

// Source is where one object's Xet file is read from.
type Source struct {
	CAS  cas.Client
	File hash.Hash
	// Adapt sets the ranges in flight (shared by the files of one endpoint); nil: Concurrency.
	Adapt       *concurrency.Controller
	Concurrency int
	Retry       retry.Policy
	Where       string // for messages
}

// Stats say where the bytes of reads came from.
type Stats struct {
	Fetched      int64 // bytes fetched from CASes (chunk records and footers)
	Ranges       int64 // range requests made
	FromCAS      int64 // raw bytes of chunks fetched
	FromDisk     int64 // raw bytes of chunks read from the disk cache
	FromLocal    int64 // raw bytes of chunks read from local objects
	FromObject   int64 // bytes read from whole objects in .git/lfs/objects
	FooterReads  int64 // footers fetched from CASes
	Bad          int64 // chunks, footers and cache entries that did not verify
	SHAVerified  int64 // files read whole and found to match their SHA-256
	SHAMismatch  int64 // files read whole whose SHA-256 was wrong
	PlanRequests int64 // reconstructions asked for
}

// Files is the reader of the Xet files of one mount: the caches and fetches they share. Safe for
// concurrent use.
type Files struct {
	cfg Config
	// The background work (fetches, plans, footers, read-ahead): each goroutine has a context of
	// its own, whose cancel is kept here until it ends; Close cancels them and waits.
	wg      sync.WaitGroup
	closing chan struct{} // closed by Close
	closed  bool          // under mu
	cancels map[uint64]context.CancelFunc
	nextID  uint64

	mem     *memCache
	mu      sync.Mutex
	flights map[hash.Hash]*flight // chunks being found, by hash
	footers *footerCache
	locals  *localSpans
	fixed   map[cas.Client]*concurrency.Controller // Source.Concurrency of sources without Adapt

	// finishers: a turn of finishSHA (maxFinishers); finishStarted, finishHolding and
	// finishPeak count the finishers started, those holding a turn and the most that held one.
	finishers                                chan struct{}
	finishStarted, finishHolding, finishPeak atomic.Int64

	st struct {
		fetched, ranges, fromCAS, fromDisk, fromLocal, fromObject, footerReads, bad, shaOK, shaBad, plans atomic.Int64
	}
}

// New returns the reader of files configured by cfg.
func New(cfg Config) *Files {
	cfg = cfg.withDefaults()
	fs := &Files{cfg: cfg, closing: make(chan struct{}), finishers: make(chan struct{}, maxFinishers), cancels: map[uint64]context.CancelFunc{}, mem: newMemCache(cfg.MemBytes),
		flights: map[hash.Hash]*flight{}, fixed: map[cas.Client]*concurrency.Controller{}}
	fs.footers = newFooterCache(fs)
	fs.locals = newLocalSpans(cfg.Local)
	return fs
}

// Close stops the background work and waits for it; reads fail with ErrClosed from then on.
func (fs *Files) Close() {
	fs.mu.Lock()
	if !fs.closed {
		fs.closed = true
		close(fs.closing)
		for _, cancel := range fs.cancels {
			cancel()
		}
	}
	fs.mu.Unlock()
	fs.wg.Wait()
}

// Stats returns the figures so far.
func (fs *Files) Stats() Stats {
	s := &fs.st
	return Stats{Fetched: s.fetched.Load(), Ranges: s.ranges.Load(), FromCAS: s.fromCAS.Load(), FromDisk: s.fromDisk.Load(),
		FromLocal: s.fromLocal.Load(), FromObject: s.fromObject.Load(), FooterReads: s.footerReads.Load(), Bad: s.bad.Load(),
		SHAVerified: s.shaOK.Load(), SHAMismatch: s.shaBad.Load(), PlanRequests: s.plans.Load()}
}

// goBackground runs f on a goroutine of the Files, with a context Close cancels (false: closed).
func (fs *Files) goBackground(f func(ctx context.Context)) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.closed {
		return false
	}
	ctx, cancel := context.WithCancel(context.Background())
	id := fs.nextID
	fs.nextID++
	fs.cancels[id] = cancel
	fs.wg.Add(1)
	go func() {
		defer fs.wg.Done()
		f(ctx)
		fs.mu.Lock()
		delete(fs.cancels, id)
		fs.mu.Unlock()
		cancel()
	}()
	return true
}

// controller is the controller of ranges in flight from src.
func (fs *Files) controller(src Source) *concurrency.Controller {
	if src.Adapt != nil {
		return src.Adapt
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	c := fs.fixed[src.CAS]
	if c == nil {
		c = concurrency.Fixed(max(src.Concurrency, 2))
		fs.fixed[src.CAS] = c
	}
	return c
}

// ErrClosed: the Files were closed (the mount is going away).
var ErrClosed = errors.New("xetfile: closed")

// waitErr is the error of a read that waited too long or was interrupted.
func (fs *Files) waitErr(ctx context.Context, what string) error {
	select {
	case <-fs.closing:
		return ErrClosed
	default:
	}
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return fmt.Errorf("no answer for %s within %v (the stall timeout)", what, fs.cfg.Wait)
}
