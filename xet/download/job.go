package download

import (
	"context"
	"errors"

	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/concurrency"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// job is one piece of a download's work on one xorb: the range rng of it (fetched through fetch,
// when its kind fetches), serving some terms. Its kind says how it is done.
type job struct {
	xorb  hash.Hash
	fetch casapi.XorbFetch
	rng   casapi.XorbRange
	terms []int // indices into layout.terms, sorted by chunk start
	kind  jobKind
	// cont, when set, is where an attempt cut short left off: the next goes on from there.
	cont *jobRun
}

// jobKind is how a job is done; each kind is a type of its own:
//   - fetched: the range is fetched and its terms decoded (fetch.go);
//   - *localTerm: its one term is copied from local files (local.go);
//   - *resumeState: the first chunks of its one term are in place, the rest is fetched (local.go);
//   - *partTerm: its one term's local runs are copied, the others fetched (partterm.go);
//   - *segState: one fetched run of a partTerm's term (partterm.go);
//   - *splitRange: one range of a large fetched term split into several (split.go).
type jobKind interface {
	run(ctx context.Context, j *job, x *runner) error
}

// fetched is the kind of a job that fetches its range.
type fetched struct{}

func (fetched) run(ctx context.Context, j *job, x *runner) error { return x.fetch(ctx, j) }

// runner is what every job runs with: the sink its bytes go to, and the fetch of one range,
// retried (runJobs).
type runner struct {
	s     *sink
	log   zerolog.Logger
	fetch func(context.Context, *job) error
}

// fallBack fetches fb, the whole term of job j, when err says its local bytes do not verify
// (errLocalStale); any other err is returned as it is.
func (x *runner) fallBack(ctx context.Context, j *job, err error, fb []*job) error {
	if err == nil || !errors.Is(err, errLocalStale) {
		return err
	}
	x.log.Debug().Err(err).Int("term", j.terms[0]).Msg("download: local copy does not verify; fetching the term")
	x.s.addStat(func(st *Stats) { st.LocalStale++ })
	return fetchAll(ctx, x.fetch, fb)
}

// runJobs runs the jobs, as many at a time as cfg.Adapt allows (else Concurrency); a job failing
// retryably is run again within cfg.Retry (it goes on from where the cut left it). This is the
// one layer that retries range fetches (see package retry).
func runJobs(ctx context.Context, cfg Config, js []*job, s *sink) error {
	ctl := cfg.Adapt
	if ctl == nil {
		ctl = concurrency.Fixed(cfg.Concurrency)
	}
	x := &runner{s: s, log: cfg.Log}
	x.fetch = func(ctx context.Context, j *job) error {
		return cfg.Retry.Do(ctx, cfg.Log, "download: xorb "+j.xorb.String()+" range "+j.rng.Bytes.Header(),
			func(ctx context.Context) error {
				var m meter
				err := j.run(ctx, m.fetcher(cfg.CAS), s)
				m.observe(ctx, ctl, err)
				return err
			})
	}
	if len(js) == 1 { // every small file: no goroutine to hand the one range to
		return js[0].kind.run(ctx, js[0], x)
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, j := range js {
		if ctl.Acquire(gctx) != nil {
			break // a job failed, or ctx ended
		}
		g.Go(func() error {
			defer ctl.Release()
			return j.kind.run(gctx, j, x)
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// fetchAll runs the fetches js one after the other.
func fetchAll(ctx context.Context, fetch func(context.Context, *job) error, js []*job) error {
	for _, j := range js {
		if err := fetch(ctx, j); err != nil {
			return err
		}
	}
	return nil
}
