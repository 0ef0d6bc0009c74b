package leader

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/agent"
	"github.com/git-xet-transfer/git-xet-transfer/agent/client"
	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
)

// Batches of the small uploads a leading agent does (smallBatcher).
const (
	// batchMaxFiles: a batch to the embedded store, whose files keep xorbs of their own
	// (client.UploadBatch), shares a shard and an fsync; 32 already make the fsync a small part.
	batchMaxFiles = 32
	// batchMaxFilesNet: a batch to a network CAS shares its xorbs too, and each of its requests is
	// a round trip: as many files as come (git-lfs sends at most lfs.concurrenttransfers at once),
	// within batchMaxBytes.
	batchMaxFilesNet = 1024
	batchMaxBytes    = upload.SmallSessionBytes // the session's xorbs are built in small buffers (client.UploadBatch)
	// batchRunners: batches stored at once. To the embedded store the second runs whenever files
	// wait, and a batch takes at most half of git-lfs's transfers (maxFiles): the two halves
	// overlap, one chunked, packed and committed while the other's completes reach git-lfs and its
	// workers' next files arrive (one batch of every worker's file left each side idle while the
	// other worked: 50,000 files of 1–64 KiB pushed in 35–36 s against 29–32 s in halves, though
	// the halves make twice the fdatasyncs). To a network CAS, whose batch is round trips, a second
	// runs only while a quarter of batchMaxBytes waits: bigger files need both cores for their
	// chunking and hashing.
	batchRunners     = 2
	batchSecondAfter = batchMaxBytes / 4
	// batchQuiet, batchGather: before a batch to a network CAS is taken, the runner waits until no
	// file joined the queue for batchQuiet, batchGather at most. git-lfs sends the next files of a
	// push as the completes of the last batch reach it, a few at a time; a batch taken at the
	// first would leave the others to the next, a round trip or two later (tens of milliseconds on
	// a real link, where the wait is a few).
	batchQuiet  = 5 * time.Millisecond
	batchGather = 50 * time.Millisecond
	// batchQuietLocal, batchGatherLocal: the same for the embedded store, whose batch costs an
	// fdatasync (a few milliseconds) rather than round trips: a batch taken at the first file left
	// the other workers' files, a moment behind it, to the next batch and its fdatasync.
	batchQuietLocal  = 2 * time.Millisecond
	batchGatherLocal = 10 * time.Millisecond
)

// errBatch: the batch a file was in failed as a whole; the file is uploaded again on its own.
var errBatch = errors.New("the batch of small uploads failed")

// smallBatcher does the small uploads of the agent process that leads a push's agents (its own and
// those the others hand it, agent/share) in multi-file upload sessions, one per store or CAS
// (client.BatchTarget): the files that arrive while batches are being stored wait and form the
// next batch, whose files share one shard (and one fsync of the embedded store, or the xorbs of a
// network CAS). With no batch running a file starts one at once; to a network CAS the runner
// first gathers the files git-lfs sends together (gather), a few milliseconds against the round
// trips a split batch would cost.
//
// A file whose bytes do not match what git-lfs said (size, SHA-256) fails alone; it is registered
// under the SHA-256 it has, which is true, not under the oid. Any other failure (reading a file,
// the store, a shard naming xorbs the store lacks) fails the whole batch with errBatch, and each
// file is then uploaded on its own by its caller, which reports that upload's own error.
//
// A file whose caller stops waiting (its conversation ended: Ctrl-C, its git-lfs gone) leaves the
// queue; a batch under way is finished for the files in it, whoever stopped waiting, until close.
//
// Concurrency: safe for concurrent use. close stops and joins the runners (before what they use is
// closed).
type smallBatcher struct {
	c         Client
	log       zerolog.Logger
	transfers int // lfs.concurrenttransfers: how many files git-lfs has in flight at most (0: unknown)

	runners sync.WaitGroup
	mu      sync.Mutex
	queue   []*smallJob
	queued  int64 // bytes in queue
	running int
	stops   map[int]context.CancelFunc // of the runners, by id
	nextID  int
	closed  bool
	arrived chan struct{} // a file joined the queue (gather); made by do
	// lastLocal: how long the last batch to the embedded store took to store (its commit); a
	// gather for the next one waits no longer, since a batch more costs no more than that.
	lastLocal time.Duration
}

type smallJob struct {
	to   client.BatchTarget
	obj  agent.Object
	done chan struct{}
	res  agent.Result
	err  error
}

// do uploads obj in the next batch to to and returns once its batch is durable (or failed), or ctx
// ends.
func (b *smallBatcher) do(ctx context.Context, to client.BatchTarget, obj agent.Object) (agent.Result, error) {
	j := &smallJob{to: to, obj: obj, done: make(chan struct{})}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return agent.Result{}, errBatch
	}
	b.queue = append(b.queue, j)
	b.queued += obj.Size
	if b.arrived == nil {
		b.arrived = make(chan struct{}, 1)
	}
	select {
	case b.arrived <- struct{}{}:
	default:
	}
	// A second runner would halve the batches to a network CAS, whose cost is their round trips.
	if b.running == 0 || (b.running < batchRunners && !to.Network && (b.queued >= batchSecondAfter || b.halves())) {
		b.startLocked(ctx)
	}
	b.mu.Unlock()
	select {
	case <-j.done:
		return j.res, j.err
	case <-ctx.Done():
		b.leave(j)
		return agent.Result{}, ctx.Err()
	}
}

// startLocked starts a runner (b.mu held). A batch is finished for every file in it, whoever
// stopped waiting: the runner keeps ctx's values, and ends with close, not with ctx.
func (b *smallBatcher) startLocked(ctx context.Context) {
	b.running++
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	if b.stops == nil {
		b.stops = map[int]context.CancelFunc{}
	}
	id := b.nextID
	b.nextID++
	b.stops[id] = cancel
	b.runners.Go(func() {
		b.run(ctx)
		b.mu.Lock()
		delete(b.stops, id)
		b.mu.Unlock()
		cancel()
	})
}

// leave takes j out of the queue when no batch has taken it yet (its caller stopped waiting).
func (b *smallBatcher) leave(j *smallJob) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if i := slices.Index(b.queue, j); i >= 0 {
		b.queue = slices.Delete(b.queue, i, i+1)
		b.queued -= j.obj.Size
	}
}

// run stores batches until the queue is empty.
func (b *smallBatcher) run(ctx context.Context) {
	for {
		b.gather(ctx)
		jobs := b.next()
		if jobs == nil {
			return
		}
		b.store(ctx, jobs)
	}
}

// gather waits until no file joined the queue for batchQuiet (batchGather at most; to the
// embedded store batchQuietLocal and batchGatherLocal, and never longer than its last batch took:
// waiting longer would cost more than the batch it saves), so that the files git-lfs sends together
// go in one batch; not once the queue holds a full batch, or a file of every transfer git-lfs runs
// (no more can come before a batch answers some).
func (b *smallBatcher) gather(ctx context.Context) {
	b.mu.Lock()
	if len(b.queue) == 0 {
		b.mu.Unlock()
		return
	}
	network, arrived := b.queue[0].to.Network, b.arrived
	b.mu.Unlock()
	quietFor, longest := batchQuiet, batchGather
	if !network {
		b.mu.Lock()
		quietFor, longest = min(batchQuietLocal, b.lastLocal), min(batchGatherLocal, b.lastLocal)
		b.mu.Unlock()
		if longest <= 0 {
			return
		}
	}
	most := time.NewTimer(longest)
	defer most.Stop()
	if b.full(network) {
		return
	}
	quiet := time.NewTimer(quietFor)
	defer quiet.Stop()
	for {
		select {
		case <-arrived:
			if b.full(network) {
				return
			}
			quiet.Reset(quietFor)
		case <-quiet.C:
			return
		case <-most.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// full reports whether the queue holds a batch as large as one may be (to a network CAS, or the
// embedded store), or as many files as git-lfs has transfers.
func (b *smallBatcher) full(network bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	maxFiles := b.maxFiles(network)
	return len(b.queue) >= maxFiles || b.queued >= batchMaxBytes || (b.transfers > 0 && len(b.queue) >= b.transfers)
}

// maxFiles is the most files a batch takes (b.mu held): batchMaxFilesNet to a network CAS; to
// the embedded store batchMaxFiles, and half of git-lfs's transfers when they are known (halves).
func (b *smallBatcher) maxFiles(network bool) int {
	switch {
	case network:
		return batchMaxFilesNet
	case b.halves():
		return min(batchMaxFiles, b.transfers/2)
	}
	return batchMaxFiles
}

// halves reports whether batches to the embedded store take half of git-lfs's transfers each, two
// runners overlapping: when git-lfs has two transfers or more and says how many.
func (b *smallBatcher) halves() bool { return b.transfers >= 2 }

// close stops the runners (a batch under way fails) and waits for them; Close calls it before
// closing the client they use. No batch starts after it.
func (b *smallBatcher) close() {
	b.mu.Lock()
	b.closed = true
	for _, stop := range b.stops {
		stop()
	}
	b.mu.Unlock()
	b.runners.Wait()
}

// next takes the next batch off the queue: the oldest file and the oldest files after it to the
// same target, up to batchMaxFiles (batchMaxFilesNet to a network CAS) and batchMaxBytes (at least
// one). nil, and the runner ends, when the queue is empty or the batcher closed (the files still
// queued then fail).
func (b *smallBatcher) next() []*smallJob {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		for _, j := range b.queue {
			j.err = errors.New("the agent is stopping")
			close(j.done)
		}
		b.queue, b.queued = nil, 0
	}
	if len(b.queue) == 0 {
		b.running--
		return nil
	}
	to := b.queue[0].to
	maxFiles := b.maxFiles(to.Network)
	var jobs []*smallJob
	size := int64(0)
	b.queue = slices.DeleteFunc(b.queue, func(j *smallJob) bool {
		if j.to != to || len(jobs) >= maxFiles || (len(jobs) > 0 && size+j.obj.Size > batchMaxBytes) {
			return false
		}
		jobs = append(jobs, j)
		size += j.obj.Size
		return true
	})
	b.queued -= size
	return jobs
}

// store uploads jobs in one session and answers each.
func (b *smallBatcher) store(ctx context.Context, jobs []*smallJob) {
	start := time.Now()
	err := b.storeBatch(ctx, jobs)
	if !jobs[0].to.Network {
		b.mu.Lock()
		b.lastLocal = time.Since(start)
		b.mu.Unlock()
	}
	if err != nil {
		b.log.Warn().Err(err).Int("files", len(jobs)).Msg("upload: a batch of small files failed; uploading each on its own")
	} else {
		b.log.Debug().Int("files", len(jobs)).Msg("upload: batch of small files stored")
	}
	for _, j := range jobs {
		if err != nil && j.err == nil {
			j.err = fmt.Errorf("%w: %v", errBatch, err)
		}
		close(j.done)
	}
}

// storeBatch uploads and registers jobs in one session (client.UploadBatch), setting each job's
// result; a job whose file does not match its oid gets its own error.
func (b *smallBatcher) storeBatch(ctx context.Context, jobs []*smallJob) error {
	objs := make([]agent.Object, len(jobs))
	for i, j := range jobs {
		objs[i] = j.obj
	}
	res, errs, err := b.c.UploadBatch(ctx, objs)
	if err != nil {
		return err
	}
	for i, j := range jobs {
		j.res, j.err = res[i], errs[i]
	}
	return nil
}
