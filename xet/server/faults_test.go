package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/vectors"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
	blobfs "github.com/git-xet-transfer/git-xet-transfer/xet/store/blob/fs"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// faultStore wraps the real store and fails or panics where told.
type faultStore struct {
	Store
	putXorbErr, putShardErr error
	panicReconstruct        bool
	shardDelay              time.Duration
}

func (f *faultStore) PutXorbAdmitted(ctx context.Context, a store.Access, h hash.Hash, body io.Reader, fl xorb.Follows, admit func(uint64) error) (store.XorbUpload, error) {
	if f.putXorbErr != nil {
		io.Copy(io.Discard, body)
		return store.XorbUpload{}, f.putXorbErr
	}
	return f.Store.PutXorbAdmitted(ctx, a, h, body, fl, admit)
}

func (f *faultStore) PutShardAs(ctx context.Context, a store.Access, body []byte) (bool, error) {
	if f.putShardErr != nil {
		return false, f.putShardErr
	}
	if f.shardDelay > 0 {
		time.Sleep(f.shardDelay)
	}
	return f.Store.PutShardAs(ctx, a, body)
}

func (f *faultStore) ReconstructIn(ctx context.Context, repo string, file hash.Hash, rng *casapi.ByteRange, max int) (*casapi.ReconstructionV2, error) {
	if f.panicReconstruct {
		panic("injected")
	}
	return f.Store.ReconstructIn(ctx, repo, file, rng, max)
}

// fullBackend fails every write with ENOSPC while full is set.
type fullBackend struct {
	blob.Backend
	full atomic.Bool
}

func (b *fullBackend) Create(ctx context.Context, name string, r io.Reader) (bool, error) {
	if b.full.Load() {
		return false, fmt.Errorf("writing %s: %w", name, syscall.ENOSPC)
	}
	return b.Backend.Create(ctx, name, r)
}

func (b *fullBackend) CreateBatch(ctx context.Context, blobs []blob.NewBlob) ([]bool, error) {
	return blob.CreateEach(ctx, b, blobs)
}

// A full disk answers 507 (v2 shards: an error frame, not retryable: a full disk is not freed in
// the seconds a retry waits) and registers nothing.
func TestDiskFull(t *testing.T) {
	var fs *faultStore
	full := &fullBackend{}
	e := newEnv(t, func(c *Config) {
		// One store on a backend that can run out of space: the CAS routes reach it through
		// faultStore, basic uploads through the UploadIngester's embedded CAS.
		fsb, err := blobfs.New(t.TempDir(), blobfs.Options{})
		if err != nil {
			t.Fatal(err)
		}
		full.Backend = fsb
		st, err := store.Open("", store.Options{Backend: full})
		if err != nil {
			t.Fatal(err)
		}
		fs = &faultStore{Store: st}
		c.Store = fs
		c.Ingest = &UploadIngester{Store: st, Policy: xorb.PolicyAuto}
	})
	r := loadRef(t)
	enospc := fmt.Errorf("store: writing xorb: %w", syscall.ENOSPC)

	fs.putXorbErr = enospc
	res := e.do("POST", "/v1/xorbs/default/"+r.xorbHash.String(), r.xorbBody)
	if res.status != 507 || !strings.Contains(errorMessage(t, res), "storage") {
		t.Fatalf("xorb on a full disk: %v", res)
	}
	if strings.Contains(string(res.body), "ENOSPC") || strings.Contains(string(res.body), "no space") {
		t.Fatalf("internal error detail leaked: %s", res.body)
	}
	fs.putXorbErr = nil
	if res := e.do("POST", "/v1/xorbs/default/"+r.xorbHash.String(), r.xorbBody); res.status != 200 {
		t.Fatal(res)
	}
	fs.putShardErr = enospc
	if res := e.do("POST", "/v1/shards", r.shard); res.status != 507 {
		t.Fatalf("v1 shard on a full disk: %v", res)
	}
	frames := shardV2(t, e, r.shard)
	if last := frames[len(frames)-1]; last.Type != "error" || last.Retryable {
		t.Fatalf("v2 shard on a full disk: %+v", frames)
	}
	if res := e.do("HEAD", "/v1/files/"+r.fileHash.String(), nil); res.status != 404 {
		t.Fatalf("file registered although its shard failed: %v", res)
	}

	// Basic-transfer upload on a full disk: 507, and the object is not there.
	data := vectors.SplitMix(100_000, 9)
	oid := sha256Hex(data)
	res = e.do("PUT", "/r/x.git/info/lfs/objects/"+oid, data)
	if res.status != 200 {
		t.Fatalf("basic upload with a failing CAS route but room on disk: %v", res)
	}
	data = vectors.SplitMix(100_000, 10)
	oid = sha256Hex(data)
	full.full.Store(true)
	res = e.do("PUT", "/r/x.git/info/lfs/objects/"+oid, data)
	if res.status != 507 || decodeJSON[lfsError](t, res.body).Message == "" {
		t.Fatalf("basic upload on a full disk: %v", res)
	}
	vb, _ := json.Marshal(lfsbatch.Object{OID: oid, Size: int64(len(data))})
	if res := e.do("POST", "/r/x.git/info/lfs/verify", vb); res.status != 404 {
		t.Fatalf("object present after a failed upload: %v", res)
	}
	full.full.Store(false)
	if res := e.do("PUT", "/r/x.git/info/lfs/objects/"+oid, data); res.status != 200 {
		t.Fatalf("retry after space was freed: %v", res)
	}
}

// A handler panic is a 500 and a log line; the server keeps serving.
func TestPanicRecovered(t *testing.T) {
	var fs *faultStore
	e := newEnv(t, func(c *Config) { fs = &faultStore{Store: c.Store}; c.Store = fs })
	r := loadRef(t)
	e.uploadRef(r)
	fs.panicReconstruct = true
	res := e.do("GET", "/v2/reconstructions/"+r.fileHash.String(), nil)
	if res.status != 500 || errorMessage(t, res) != "internal server error" {
		t.Fatalf("panic: %v", res)
	}
	fs.panicReconstruct = false
	if res := e.do("GET", "/v2/reconstructions/"+r.fileHash.String(), nil); res.status != 200 {
		t.Fatalf("after a panic: %v", res)
	}
	if !strings.Contains(e.logs.String(), "handler panic") {
		t.Fatal("panic not logged")
	}
}

// Every request gets one access-log line with method, path, status and duration (never the query).
func TestAccessLog(t *testing.T) {
	e := newEnv(t, nil)
	e.do("HEAD", "/v1/files/"+strings.Repeat("0", 64)+"?secret=zzz", nil)
	var line map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(e.logs.String())), &line); err != nil {
		t.Fatalf("log %q: %v", e.logs.String(), err)
	}
	if line["method"] != "HEAD" || line["path"] != "/v1/files/"+strings.Repeat("0", 64) || line["status"] != float64(404) || line["duration"] == nil {
		t.Fatalf("log line %v", line)
	}
	if strings.Contains(e.logs.String(), "zzz") {
		t.Fatal("query in the log")
	}
}

// While a slow shard registration runs, POST /v2/shards repeats its last frame as a heartbeat, then
// ends with the result.
func TestShardV2Heartbeat(t *testing.T) {
	var fs *faultStore
	e := newEnv(t, func(c *Config) {
		fs = &faultStore{Store: c.Store, shardDelay: 300 * time.Millisecond}
		c.Store = fs
		c.HeartbeatInterval = 40 * time.Millisecond
	})
	r := loadRef(t)
	if res := e.do("POST", "/v1/xorbs/default/"+r.xorbHash.String(), r.xorbBody); res.status != 200 {
		t.Fatal(res)
	}
	frames := shardV2(t, e, r.shard)
	validating := 0
	for _, f := range frames {
		if f.Type == "validating" {
			validating++
		}
	}
	last := frames[len(frames)-1]
	if validating < 3 || last.Type != "result" || last.Result == nil || *last.Result != casapi.ShardSyncPerformed {
		t.Fatalf("frames %+v", frames)
	}
}
