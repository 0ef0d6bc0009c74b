package leader

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/agent"
	"github.com/git-xet-transfer/git-xet-transfer/agent/client"
)

// aheadMaxListings bounds the batch listings a leader reads in its life; the objects of later
// batch answers go their own way (each listing costs a little memory until Close).
const aheadMaxListings = 4096

// lookahead stores the small uploads of a whole LFS batch answer at once. git-lfs asks its LFS
// server for up to 100 objects at a time, but hands each agent process one object and waits for
// its complete, so the leader sees at most lfs.concurrenttransfers files at once; our server names,
// in every action of an answer, a listing of all its objects (client.ListingKey). The first object
// of an answer to reach the leader makes it read the listing once (client.BatchListing) and store
// every small object in it (under client.SmallUploadBytes) in as few batches as the byte bound
// allows (client.UploadBatch: shared xorbs, one shard), reading each from git-lfs's object store:
// the directory the object's own path lies in (<objects>/aa/bb/<oid>, wherever lfs.storage put it).
// A file that is missing, or whose size or SHA-256 is not what the listing says, is left out.
//
// The object's own upload then waits for its batch and completes at once when the batch is
// durable (its xorbs and shard stored); when the file was left out or its batch failed, the upload
// goes its own way (take's false) and reports its own error. Without a listing, or when reading
// it fails (another server, the Hub), nothing changes.
//
// Concurrency: safe for concurrent use; a listing's batches run on a goroutine of the lookahead's,
// finished for every file in them whoever stopped waiting, until close, which stops and joins them.
type lookahead struct {
	c   Client
	log zerolog.Logger

	runs     sync.WaitGroup
	mu       sync.Mutex
	stops    []context.CancelFunc // of the runs
	closed   bool
	listings map[string]chan struct{} // by key; closed once its files are in files
	files    map[string]*aheadFile    // by oid: stored, or being stored, by a listing's batch
}

// aheadFile is one listed file: done closes when its batch ended; ok when it is durable.
type aheadFile struct {
	obj  agent.Object
	done chan struct{}
	res  agent.Result
	ok   bool
}

// take returns obj's result when a listing's batch stored it (ok); false sends it its own way.
// It reads the listing obj's action names when no object of it came before.
func (a *lookahead) take(ctx context.Context, obj agent.Object) (res agent.Result, ok bool, err error) {
	key := client.ListingKey(obj)
	if key == "" || obj.Action == nil {
		return res, false, nil
	}
	objects, shaped := objectsDir(obj.Path, obj.Oid)
	if !shaped {
		return res, false, nil
	}
	ready := a.start(ctx, key, obj, objects)
	if ready == nil {
		return res, false, nil
	}
	select {
	case <-ready:
	case <-ctx.Done():
		return res, false, ctx.Err()
	}
	a.mu.Lock()
	f := a.files[obj.Oid]
	a.mu.Unlock()
	if f == nil {
		return res, false, nil
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		return res, false, ctx.Err()
	}
	a.mu.Lock()
	if a.files[obj.Oid] == f {
		delete(a.files, obj.Oid)
	}
	a.mu.Unlock()
	return f.res, f.ok, nil
}

// start returns the channel closed once the files of listing key are known, starting the run
// that reads and stores them when key is new; nil when no run may start (closed, bound reached).
func (a *lookahead) start(ctx context.Context, key string, obj agent.Object, objects string) chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ready, ok := a.listings[key]; ok {
		return ready
	}
	if a.closed || len(a.listings) >= aheadMaxListings {
		return nil
	}
	if a.listings == nil {
		a.listings, a.files = map[string]chan struct{}{}, map[string]*aheadFile{}
	}
	ready := make(chan struct{})
	a.listings[key] = ready
	// The run keeps ctx's values, and ends with close, not with the object that started it.
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	a.stops = append(a.stops, cancel)
	a.runs.Go(func() {
		defer cancel()
		a.run(ctx, obj, objects, ready)
	})
	return ready
}

// aheadBatchBytes bounds a batch of a listing's files. The small batcher's bound (batchMaxBytes)
// keeps its sessions in small buffers for the few files git-lfs hands over at once; a listing's
// files, up to git-lfs's whole batch answer, are known together, and in batches this large each is
// one xorb (of 64 MiB at most) and one shard whatever the answer's size.
const aheadBatchBytes = 16 << 20

// run reads the listing obj's action names, makes its small objects known (then closes ready) and
// stores them in batches.
func (a *lookahead) run(ctx context.Context, obj agent.Object, objects string, ready chan struct{}) {
	listed, err := a.c.BatchListing(ctx, obj)
	if err != nil {
		close(ready)
		a.log.Debug().Err(err).Msg("upload: no batch listing; each object goes its own way")
		return
	}
	mine := a.register(listed, objects)
	close(ready)
	for len(mine) > 0 {
		n, size := 0, int64(0)
		for n < len(mine) && n < batchMaxFilesNet && (n == 0 || size+mine[n].obj.Size <= aheadBatchBytes) {
			size += mine[n].obj.Size
			n++
		}
		a.store(ctx, mine[:n])
		mine = mine[n:]
	}
}

// register makes the small objects of a listing known as being stored (those already known are
// another listing's), each read from objects.
func (a *lookahead) register(listed []agent.Object, objects string) []*aheadFile {
	a.mu.Lock()
	defer a.mu.Unlock()
	var mine []*aheadFile
	for _, o := range listed {
		if o.Size >= client.SmallUploadBytes || a.files[o.Oid] != nil {
			continue
		}
		o.Path = filepath.Join(objects, o.Oid[0:2], o.Oid[2:4], o.Oid)
		f := &aheadFile{obj: o, done: make(chan struct{})}
		a.files[o.Oid] = f
		mine = append(mine, f)
	}
	return mine
}

// store stores files in one batch, leaving out those whose file is not the object; every file's
// done is closed.
func (a *lookahead) store(ctx context.Context, files []*aheadFile) {
	defer func() {
		for _, f := range files {
			close(f.done)
		}
	}()
	var objs []agent.Object
	var in []*aheadFile
	for _, f := range files {
		if err := checkObject(f.obj); err != nil {
			a.log.Debug().Err(err).Str("oid", f.obj.Oid).Msg("upload: a listed object left to its own upload")
			continue
		}
		objs = append(objs, f.obj)
		in = append(in, f)
	}
	if len(objs) == 0 {
		return
	}
	res, errs, err := a.c.UploadBatch(ctx, objs)
	if err != nil {
		a.log.Warn().Err(err).Int("files", len(objs)).Msg("upload: a batch of small files failed; uploading each on its own")
		return
	}
	a.log.Debug().Int("files", len(objs)).Msg("upload: batch of small files stored (a batch answer's listing)")
	for i, f := range in {
		f.res, f.ok = res[i], errs[i] == nil
	}
}

// checkObject checks that o.Path holds o: its size and SHA-256.
func checkObject(o agent.Object) error {
	f, err := os.Open(o.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, o.Size+1))
	if err != nil {
		return err
	}
	if n != o.Size || hex.EncodeToString(h.Sum(nil)) != o.Oid {
		return errors.New("the file in the object store is not the object")
	}
	return nil
}

// objectsDir is git-lfs's object directory of an upload's path, <objects>/aa/bb/<oid>; false when
// path has another shape (then no listed object is looked for next to it).
func objectsDir(path, oid string) (string, bool) {
	if len(oid) != 64 || filepath.Base(path) != oid {
		return "", false
	}
	bb := filepath.Dir(path)
	aa := filepath.Dir(bb)
	if filepath.Base(bb) != oid[2:4] || filepath.Base(aa) != oid[0:2] {
		return "", false
	}
	return filepath.Dir(aa), true
}

// close stops the runs (a batch under way fails) and waits for them. No run starts after it.
func (a *lookahead) close() {
	a.mu.Lock()
	a.closed = true
	for _, stop := range a.stops {
		stop()
	}
	a.mu.Unlock()
	a.runs.Wait()
}
