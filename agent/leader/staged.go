package leader

import (
	"context"
	"os"
	"sync"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/agent"
	"github.com/git-xet-transfer/git-xet-transfer/agent/client"
)

// stagedMaxBytes bounds the downloads staged and not yet asked for; beyond, a listed file is left
// to its own download.
const stagedMaxBytes = 256 << 20

// staged downloads the small files of a whole LFS batch answer at once: the first download whose
// action names a listing (client.ListingKey) the leader has not read makes it download, while that
// first one goes its own way, every file the listing plans (client.DownloadListed: their ranges merged per xorb, a request or two for a
// batch answer, each file verified into git-lfs's temp dir), and the listed files' own downloads
// are handed those files at once. A file the listing did not plan, or that failed, or past
// stagedMaxBytes, goes its own way; staged files nobody asked for are removed by close.
//
// Concurrency: safe for concurrent use; the runs are the staged's, stopped and joined by close.
type staged struct {
	c   Client
	log zerolog.Logger

	runs     sync.WaitGroup
	mu       sync.Mutex
	stops    []context.CancelFunc
	closed   bool
	listings map[string]chan struct{} // by key; closed once its files are staged
	files    map[string]agent.Result  // by oid: verified, in git-lfs's temp dir
	sizes    map[string]int64
	bytes    int64 // of files
}

// take returns obj's staged download (ok), reading its listing when no object of it came before;
// false sends it its own way.
func (s *staged) take(ctx context.Context, obj agent.Object) (res agent.Result, ok bool, err error) {
	key := client.ListingKey(obj)
	if key == "" {
		return res, false, nil
	}
	ready, started := s.start(ctx, key, obj)
	if ready == nil || started {
		// The download that starts the run goes its own way meanwhile: a process given only it
		// (git-lfs's smudge filter starts one for a single object) waits for no other file, and
		// its Close stops the run.
		return res, false, nil
	}
	select {
	case <-ready:
	case <-ctx.Done():
		return res, false, ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	res, ok = s.files[obj.Oid]
	if !ok {
		return res, false, nil
	}
	size := s.sizes[obj.Oid]
	delete(s.files, obj.Oid)
	delete(s.sizes, obj.Oid)
	s.bytes -= size
	if size != obj.Size { // not the object git-lfs asks for: fetched again its own way
		_ = os.Remove(res.Path)
		return agent.Result{}, false, nil
	}
	return res, true, nil
}

// start returns the channel closed once listing key's files are staged, starting the run that
// stages them when key is new (started); nil when no run may start.
func (s *staged) start(ctx context.Context, key string, obj agent.Object) (ready chan struct{}, started bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ready, ok := s.listings[key]; ok {
		return ready, false
	}
	if s.closed || len(s.listings) >= aheadMaxListings {
		return nil, false
	}
	if s.listings == nil {
		s.listings, s.files, s.sizes = map[string]chan struct{}{}, map[string]agent.Result{}, map[string]int64{}
	}
	ready = make(chan struct{})
	s.listings[key] = ready
	// The run keeps ctx's values, and ends with close, not with the object that started it.
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.stops = append(s.stops, cancel)
	s.runs.Go(func() {
		defer cancel()
		defer close(ready)
		s.run(ctx, obj)
	})
	return ready, true
}

// run downloads the files listing obj's action names and stages them.
func (s *staged) run(ctx context.Context, obj agent.Object) {
	objs, res, errs, err := s.c.DownloadListed(ctx, obj)
	if err != nil {
		s.log.Debug().Err(err).Msg("download: no batch listing; each object goes its own way")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for i, o := range objs {
		had, dup := s.files[o.Oid]
		switch {
		case errs[i] != nil:
			s.log.Debug().Err(errs[i]).Str("oid", o.Oid).Msg("download: a listed object left to its own download")
		case dup && had.Path == res[i].Path: // staged already, by another listing: written again, the same bytes
		case s.closed || s.bytes+o.Size > stagedMaxBytes || dup:
			_ = os.Remove(res[i].Path)
		default:
			s.files[o.Oid], s.sizes[o.Oid] = res[i], o.Size
			s.bytes += o.Size
			n++
		}
	}
	s.log.Debug().Int("files", n).Int("listed", len(objs)).Msg("download: a batch answer's small files staged")
}

// close stops and joins the runs, then removes the staged files nobody asked for.
func (s *staged) close() {
	s.mu.Lock()
	s.closed = true
	for _, stop := range s.stops {
		stop()
	}
	s.mu.Unlock()
	s.runs.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	for oid, res := range s.files {
		_ = os.Remove(res.Path)
		delete(s.files, oid)
	}
	s.bytes = 0
}
