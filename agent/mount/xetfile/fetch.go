package xetfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/localshards/chunkcache"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/concurrency"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// run is chunks [a, b) of xorb, fetched with one range request; flights[k-a] is chunk k's.
type run struct {
	xorb    hash.Hash
	info    *xorbInfo
	a, b    uint32
	flights []*flight
}

// fetch fetches refs from the CAS of plan p as runs of consecutive chunks, each run on its own
// goroutine under the source's controller, and completes their flights.
func (f *File) fetch(ctx context.Context, p *plan, refs []chunkRef, flights []*flight) {
	runs, err := f.runs(ctx, p, refs, flights)
	if err != nil {
		for i, r := range refs {
			f.fs.complete(r.hash, flights[i], nil, err)
		}
		return
	}
	for _, r := range runs {
		if !f.fs.goBackground(func(ctx context.Context) { f.fetchRun(ctx, p, r) }) {
			r.fail(f.fs, nil, ErrClosed)
		}
	}
}

// runs groups refs into runs: consecutive chunks of one xorb inside one range the plan lists, of at
// most Config.RangeBytes raw bytes.
func (f *File) runs(ctx context.Context, p *plan, refs []chunkRef, flights []*flight) ([]*run, error) {
	order := make([]int, len(refs))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool {
		ra, rb := refs[order[a]], refs[order[b]]
		if c := ra.xorb.Compare(rb.xorb); c != 0 {
			return c < 0
		}
		return ra.idx < rb.idx
	})
	var out []*run
	var cur *run
	var bytes int
	for _, i := range order {
		r := refs[i]
		if cur == nil || cur.xorb != r.xorb || cur.b != r.idx || bytes+r.size > int(f.fs.cfg.RangeBytes) || !sameListed(p, r.xorb, cur.a, r.idx) {
			info, err := f.fs.footers.get(ctx, f, p, r.xorb)
			if err != nil {
				return nil, err
			}
			cur = &run{xorb: r.xorb, info: info, a: r.idx, b: r.idx}
			out = append(out, cur)
			bytes = 0
		}
		cur.b++
		cur.flights = append(cur.flights, flights[i])
		bytes += r.size
	}
	return out, nil
}

// sameListed reports whether chunks a and k of x lie in one range of the plan's.
func sameListed(p *plan, x hash.Hash, a, k uint32) bool {
	_, ra, ok1 := p.fetchOf(x, a, a+1)
	_, rk, ok2 := p.fetchOf(x, k, k+1)
	return ok1 && ok2 && ra == rk
}

// fail completes the flights of r's chunks not done with err.
func (r *run) fail(fs *Files, done []bool, err error) {
	for k, fl := range r.flights {
		if done == nil || !done[k] {
			fs.complete(r.info.hashes[r.a+uint32(k)], fl, nil, err)
		}
	}
}

// fetchRun fetches run r under the source's controller, within the source's retry budget; a plan
// whose URL was refused (expired) is asked for again once. A chunk is handed to its readers as
// soon as it is decoded and verified.
func (f *File) fetchRun(ctx context.Context, p *plan, r *run) {
	fs := f.fs
	ctl := fs.controller(p.src)
	if err := ctl.Acquire(ctx); err != nil {
		r.fail(fs, nil, ErrClosed)
		return
	}
	defer ctl.Release()
	done := make([]bool, r.b-r.a)
	replanned := false
	op := fmt.Sprintf("mount: xorb %s chunks [%d, %d)", r.xorb, r.a, r.b)
	err := p.src.Retry.Do(ctx, fs.cfg.Log, op, func(ctx context.Context) error {
		err := f.fetchOnce(ctx, p, r, done, ctl)
		if errors.Is(err, cas.ErrURLExpired) && !replanned {
			replanned = true
			p2, perr := f.replan(ctx, p)
			if perr != nil {
				return perr
			}
			p = p2
			return retry.Mark(err)
		}
		return err
	})
	if err != nil {
		r.fail(fs, done, fmt.Errorf("fetching chunks [%d, %d) of xorb %s from %s: %w", r.a, r.b, r.xorb, p.src.Where, err))
	}
}

// fetchOnce is one attempt of run r: the range of its records, each decoded and checked against
// the footer's hash (a chunk done in an earlier attempt is skipped over).
func (f *File) fetchOnce(ctx context.Context, p *plan, r *run, done []bool, ctl *concurrency.Controller) error {
	fetch, _, ok := p.fetchOf(r.xorb, r.a, r.b)
	if !ok {
		return fmt.Errorf("the plan lists no range of xorb %s holding chunks [%d, %d)", r.xorb, r.a, r.b)
	}
	rng := casapi.ByteRange{Start: r.info.recStart(r.a), End: uint64(r.info.recEnd[r.b-1]) - 1}
	start := time.Now()
	rc, err := p.src.CAS.Fetch(ctx, r.xorb, fetch, rng)
	lat := time.Since(start)
	if err != nil {
		observe(ctx, ctl, err, lat, 0)
		return err
	}
	defer rc.Close()
	cr := &countingReader{r: rc}
	err = f.decodeRun(r, cr, rng, done)
	observe(ctx, ctl, err, lat, cr.n)
	f.fs.st.fetched.Add(cr.n)
	f.fs.st.ranges.Add(1)
	return err
}

var readPool = sync.Pool{New: func() any { b := make([]byte, 512<<10); return &b }}

// decodeRun reads the records of run r from body (range rng of the xorb) and completes the flight
// of each chunk whose bytes hash to the footer's hash; one that does not fails the attempt
// (retryably: bytes changed on the way are fetched again).
func (f *File) decodeRun(r *run, body io.Reader, rng casapi.ByteRange, done []bool) error {
	fs := f.fs
	bp := readPool.Get().(*[]byte)
	defer readPool.Put(bp)
	sc := xorb.NewRecordScanner(body, *bp, int64(rng.Len()))
	for k := r.a; k < r.b; k++ {
		rec, h, err := sc.Next()
		if err == io.EOF {
			return fmt.Errorf("xorb %s: range %s ends before chunk %d", r.xorb, rng.Header(), k)
		}
		if errors.Is(err, xorb.ErrStreamShort) {
			return retry.Mark(fmt.Errorf("xorb %s: range %s: %w", r.xorb, rng.Header(), err))
		}
		if err != nil {
			return fmt.Errorf("xorb %s chunk %d: %w", r.xorb, k, err)
		}
		if done[k-r.a] {
			continue
		}
		data, err := decodeChunk(rec, h)
		if err != nil {
			return fmt.Errorf("xorb %s chunk %d: %w", r.xorb, k, err)
		}
		if len(data) != r.info.size(k) || hash.Chunk(data) != r.info.hashes[k] {
			fs.st.bad.Add(1)
			fs.footers.forget(r.xorb, r.info)
			return retry.Mark(fmt.Errorf("chunk %d of xorb %s does not hash to the footer's hash of it (its bytes changed on the way, or the CAS holds bad data)", k, r.xorb))
		}
		fs.complete(r.info.hashes[k], r.flights[k-r.a], data, nil)
		done[k-r.a] = true
		fs.st.fromCAS.Add(int64(len(data)))
		if c := fs.cfg.Cache; c != nil {
			if err := c.Put(chunkcache.Chunk, r.info.hashes[k], data); err != nil {
				fs.cfg.Log.Debug().Err(err).Msg("mount: keeping a chunk in the cache")
			}
		}
	}
	return nil
}

// decodeChunk returns the raw bytes of record rec in a slice of their own.
func decodeChunk(rec []byte, h xorb.RecordHeader) ([]byte, error) {
	if h.Scheme == xorb.SchemeNone {
		return append([]byte(nil), rec[xorb.RecordHeaderSize:]...), nil
	}
	out, _, _, err := xorb.DecodeRecord(make([]byte, 0, h.RawLen), rec)
	return out, err
}

// observe tells the controller how an attempt went (see xet/download's meter): throttled, failed
// in a way worth a retry, or done; failures that say nothing of the link are not told.
func observe(ctx context.Context, ctl *concurrency.Controller, err error, lat time.Duration, n int64) {
	if ctx.Err() != nil || (err != nil && !retry.IsRetryable(err)) {
		return
	}
	code := cas.StatusCode(err)
	throttled := code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable
	ctl.Observe(concurrency.Sample{Bytes: n, Latency: lat, Throttled: throttled, Failed: err != nil && !throttled})
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
