package leader

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/agent"
	"github.com/git-xet-transfer/git-xet-transfer/agent/client"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/internal/logbuf"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// Small uploads arriving together at the process that leads the push's agents are stored in
// batches: every file is registered under its oid, a file that does not hash to its oid and one
// that is missing fail alone, naming what was wrong, and the others of their batch are stored.
func TestSmallUploadsAreBatched(t *testing.T) {
	var log logbuf.Buffer
	dir := t.TempDir()
	storeDir := filepath.Join(dir, "store")
	tr := storeLeader(t, zerolog.New(&log).Level(zerolog.DebugLevel), "upload", dir, storeDir, nil)
	ctx := context.Background()
	const n = 60
	objs := make([]agent.Object, n)
	for i := range objs {
		data := testutil.RandomBytes(1000+97*i, uint64(100+i))
		path := filepath.Join(dir, fmt.Sprintf("obj%02d", i))
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		objs[i] = agent.Object{Oid: hex.EncodeToString(sum[:]), Size: int64(len(data)), Path: path}
	}
	wrongOid := sha256.Sum256([]byte("not the content"))
	objs[7].Oid = hex.EncodeToString(wrongOid[:])
	objs[11].Path = filepath.Join(dir, "missing")
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range objs {
		wg.Add(1)
		go func() { defer wg.Done(); _, errs[i] = tr.Upload(ctx, objs[i], nil) }()
	}
	wg.Wait()
	st, err := store.Open(storeDir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i, err := range errs {
		switch i {
		case 7:
			if err == nil || !strings.Contains(err.Error(), "not the oid "+objs[7].Oid) {
				t.Errorf("a file under a wrong oid: %v", err)
			}
			if _, _, err := st.LookupSHA256(ctx, "", hash.FromSHA256(wrongOid)); err == nil {
				t.Error("the wrong oid was registered")
			}
		case 11:
			if err == nil || !strings.Contains(err.Error(), "missing") {
				t.Errorf("a missing file: %v", err)
			}
		default:
			if err != nil {
				t.Errorf("file %d: %v", i, err)
				continue
			}
			if _, size, err := st.LookupSHA256(ctx, "", oidHash(t, objs[i].Oid)); err != nil || int64(size) != objs[i].Size {
				t.Errorf("file %d is not registered: %d bytes, %v", i, size, err)
			}
		}
	}
	batches, _, most := loggedBatches(log.String())
	if batches == 0 || most < 2 {
		t.Fatalf("%d batches, the largest of %d files: the uploads were not batched", batches, most)
	}
}

// Small uploads whose callers stop waiting (Ctrl-C ends every conversation the leader serves) are
// not stored once their callers have gone: the leader stores at most the batches already under way
// (each at most batchMaxFiles) and Close stops it, instead of working through the whole queue after
// the push was interrupted.
func TestAbandonedSmallUploadsAreNotStored(t *testing.T) {
	dir := t.TempDir()
	storeDir := filepath.Join(dir, "store")
	tr := storeLeader(t, zerolog.Nop(), "upload", dir, storeDir, nil)
	ctx, cancel := context.WithCancel(context.Background())
	const n = 600
	objs := make([]agent.Object, n)
	for i := range objs {
		data := testutil.RandomBytes(2000+i, uint64(5000+i))
		path := filepath.Join(dir, fmt.Sprintf("small%03d", i))
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		objs[i] = agent.Object{Oid: hex.EncodeToString(sum[:]), Size: int64(len(data)), Path: path}
	}
	// The batches wait at a gate until half the uploads queued behind them: on a loaded machine
	// the runners would otherwise take the files as fast as they come, and none would be queued.
	b := &tr.batcher
	open := make(chan struct{})
	b.c = gatedClient{Client: b.c, open: open}
	var wg sync.WaitGroup
	for i := range objs {
		wg.Go(func() { tr.Upload(ctx, objs[i], nil) })
	}
	if !testutil.Eventually(time.Minute, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.queue) >= n/2
	}) {
		t.Fatal("the uploads did not queue")
	}
	b.mu.Lock()
	queued := len(b.queue) // not taken into a batch yet
	cancel()               // Ctrl-C
	close(open)            // the batches under way go on
	b.mu.Unlock()
	wg.Wait()
	tr.Close()
	st, err := store.Open(storeDir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	stored := 0
	for _, o := range objs {
		if _, _, err := st.LookupSHA256(context.Background(), "", oidHash(t, o.Oid)); err == nil {
			stored++
		}
	}
	t.Logf("%d of %d small uploads stored after their callers stopped waiting", stored, n)
	if most := n - queued + batchRunners*batchMaxFiles; stored > most {
		t.Fatalf("%d of %d small uploads were stored, %d of them queued when their callers went: want at most %d", stored, n, queued, most)
	}
}

// gatedClient holds every batch until open is closed (or its ctx ends).
type gatedClient struct {
	Client
	open <-chan struct{}
}

func (g gatedClient) UploadBatch(ctx context.Context, objs []agent.Object) ([]agent.Result, []error, error) {
	select {
	case <-g.open:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	return g.Client.UploadBatch(ctx, objs)
}

// targetClient is a Client whose small uploads go to the target named by their file's directory
// (a network CAS when it starts with "net"), and which records the batches it stores.
type targetClient struct {
	barrierClient
	mu      sync.Mutex
	batches [][]agent.Object
}

func (c *targetClient) SmallBatch(_ context.Context, obj agent.Object) (client.BatchTarget, bool) {
	dir := filepath.Base(filepath.Dir(obj.Path))
	return client.BatchTarget{Key: dir, Network: strings.HasPrefix(dir, "net")}, true
}

func (c *targetClient) UploadBatch(_ context.Context, objs []agent.Object) ([]agent.Result, []error, error) {
	c.mu.Lock()
	c.batches = append(c.batches, objs)
	c.mu.Unlock()
	res := make([]agent.Result, len(objs))
	for i, o := range objs {
		res[i] = agent.Result{Mode: agent.ModeBatch, NewBytes: o.Size}
	}
	return res, make([]error, len(objs)), nil
}

func (c *targetClient) Upload(_ context.Context, obj agent.Object, _ func(int64)) (agent.Result, error) {
	return agent.Result{}, fmt.Errorf("%s was uploaded on its own", obj.Path)
}

// Small uploads to two network CASes and the embedded store at once are stored in batches of one
// target each, every file in one batch, the files that come together in few batches.
func TestSmallUploadsBatchedPerTarget(t *testing.T) {
	const n = 60
	c := &targetClient{}
	open := New(Options{Log: zerolog.Nop()}, func(agent.Init, client.Coordinator) Client { return c })
	tr, err := open(context.Background(), agent.Init{Operation: "upload", Remote: "origin", ConcurrentTransfers: n})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	l := tr.(*Leader)
	l.leading.Store(true)
	dirs := []string{"netA", "netB", "embedded"}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		obj := agent.Object{Oid: fmt.Sprintf("%064x", i+1), Size: 5000, Path: filepath.Join(dirs[i%3], fmt.Sprint(i))}
		wg.Go(func() { _, errs[i] = l.Upload(context.Background(), obj, nil) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("file %d: %v", i, err)
		}
	}
	seen := map[string]int{}
	for _, b := range c.batches {
		dir := filepath.Dir(b[0].Path)
		for _, o := range b {
			seen[o.Path]++
			if filepath.Dir(o.Path) != dir {
				t.Errorf("a batch mixes %s and %s", dir, o.Path)
			}
		}
	}
	if len(seen) != n {
		t.Errorf("%d files in batches, want %d", len(seen), n)
	}
	for p, k := range seen {
		if k != 1 {
			t.Errorf("%s in %d batches", p, k)
		}
	}
	if len(c.batches) > 12 {
		t.Errorf("%d batches for %d files to 3 targets", len(c.batches), n)
	}
}

// git-lfs's workers each send their next file once their last one completes. Into the embedded
// store, whose every batch costs an fdatasync, the batches then hold the files of half the workers
// (4 of 8 here; the halves overlap, TestSmallUploadsToTheStoreOverlapInTwoBatches): a batch taken
// at the first file left the other workers' files, arriving a moment later, to the next batch, and
// split the push into batches of 1 and 7 (a push of 5,000 files made 1,531 fdatasyncs in
// test/scale.sh, 8.4 of its 14.1 s).
func TestSmallUploadsOfEveryWorkerShareABatch(t *testing.T) {
	var log logbuf.Buffer
	dir := t.TempDir()
	tr := storeLeader(t, zerolog.New(&log).Level(zerolog.DebugLevel), "upload", dir, filepath.Join(dir, "store"), nil)
	// The store's commit takes as long as an fdatasync of a busy disk: the gather waits no longer
	// than the last commit took, and a test disk's that answers in a fraction of a millisecond left
	// no window when other test packages loaded the machine (CI: 25 batches, no gather at all).
	tr.batcher.c = slowCommits{Client: tr.c, d: 20 * time.Millisecond}
	const workers, each = 8, 12
	// The files exist before the workers start, so that a worker's next file follows its last one's
	// completion by the agent's own work only, as git-lfs's objects do (not by a disk write).
	objs := make([][]agent.Object, workers)
	for w := range workers {
		for k := range each {
			objs[w] = append(objs[w], writeObject(t, filepath.Join(dir, fmt.Sprintf("w%d-%02d", w, k)),
				testutil.RandomBytes(2000+31*k, uint64(1000*w+k))))
		}
	}
	uploadByWorkers(t, tr, objs)
	batches, files, _ := loggedBatches(log.String())
	if files != workers*each {
		t.Fatalf("%d files in batches, want %d", files, workers*each)
	}
	// Two batches per round of the workers, and some slack for a worker the scheduler kept late
	// (without the gather: 48, a batch of the first file of each half and one of the other 3).
	if batches > each*2*3/2 {
		t.Fatalf("%d files of %d workers took %d batches (%.1f files each): the workers' files did not share batches", files, workers, batches, float64(files)/float64(batches))
	}
}

// slowCommits is a client whose batches take at least d to store, as a busy disk's commit does.
type slowCommits struct {
	Client
	d time.Duration
}

func (c slowCommits) UploadBatch(ctx context.Context, objs []agent.Object) ([]agent.Result, []error, error) {
	res, errs, err := c.Client.UploadBatch(ctx, objs)
	time.Sleep(c.d)
	return res, errs, err
}

// loggedBatches counts the batches of small files a leader's log says it stored, the files in them
// and the most in one.
func loggedBatches(log string) (batches, files, most int) {
	for _, l := range strings.Split(log, "\n") {
		var m struct {
			Msg   string `json:"message"`
			Files int    `json:"files"`
		}
		if json.Unmarshal([]byte(l), &m) == nil && m.Msg == "upload: batch of small files stored" {
			batches++
			files += m.Files
			most = max(most, m.Files)
		}
	}
	return batches, files, most
}

// Into the embedded store the workers' files are stored in two halves that overlap: while one half
// is chunked, packed and committed, the other's completes reach git-lfs and its next files arrive.
// One batch of all of them left the leader idle while git-lfs turned its workers round and git-lfs
// idle while the leader worked (50,000 files of 1–64 KiB: 35–36 s against 29–32 s in two halves).
func TestSmallUploadsToTheStoreOverlapInTwoBatches(t *testing.T) {
	var log logbuf.Buffer
	dir := t.TempDir()
	tr := storeLeader(t, zerolog.New(&log).Level(zerolog.DebugLevel), "upload", dir, filepath.Join(dir, "store"), nil)
	overlap := &overlapping{Client: tr.c, both: make(chan struct{})}
	tr.batcher.c = overlap
	const workers = 8
	objs := make([][]agent.Object, workers)
	for w := range workers {
		objs[w] = []agent.Object{writeObject(t, filepath.Join(dir, fmt.Sprintf("f%d", w)), testutil.RandomBytes(3000+w, uint64(500+w)))}
	}
	uploadByWorkers(t, tr, objs)
	if !overlap.met.Load() {
		t.Fatalf("the files of %d workers were stored one batch at a time (most files in a batch: %d)", workers, overlap.most.Load())
	}
	if most := overlap.most.Load(); most > workers/2 {
		t.Fatalf("a batch held %d of the %d workers' files, want at most half", most, workers)
	}
}

// overlapping is a client whose batches wait (up to 10 s) until two are being stored at once, and
// that records whether they ever were, and the most files in one batch.
type overlapping struct {
	Client
	mu       sync.Mutex
	inflight int
	both     chan struct{}
	met      atomic.Bool
	most     atomic.Int64
}

func (c *overlapping) UploadBatch(ctx context.Context, objs []agent.Object) ([]agent.Result, []error, error) {
	for {
		m := c.most.Load()
		if int64(len(objs)) <= m || c.most.CompareAndSwap(m, int64(len(objs))) {
			break
		}
	}
	c.mu.Lock()
	c.inflight++
	if c.inflight == 2 && !c.met.Load() {
		c.met.Store(true)
		close(c.both)
	}
	c.mu.Unlock()
	select {
	case <-c.both:
	case <-time.After(10 * time.Second):
	case <-ctx.Done():
	}
	defer func() { c.mu.Lock(); c.inflight--; c.mu.Unlock() }()
	return c.Client.UploadBatch(ctx, objs)
}

// writeObject writes data to path and returns it as the object git-lfs would name.
func writeObject(t *testing.T, path string, data []byte) agent.Object {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return agent.Object{Oid: hex.EncodeToString(sum[:]), Size: int64(len(data)), Path: path}
}

// uploadByWorkers uploads through tr as git-lfs's workers do: one goroutine per list, each
// uploading its objects one after the other; any failure fails the test.
func uploadByWorkers(t *testing.T, tr *Leader, objs [][]agent.Object) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(objs))
	for _, list := range objs {
		wg.Go(func() {
			for _, o := range list {
				if _, err := tr.Upload(context.Background(), o, nil); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
