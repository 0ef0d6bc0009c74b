package upload_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// keepCAS keeps every xorb body it is given (the slice itself, as a client queueing uploads
// might) and does not declare that it releases them: the session must never write to them again.
type keepCAS struct {
	*recCAS
	mu   sync.Mutex
	kept map[hash.Hash][]byte
}

func (c *keepCAS) PutXorb(ctx context.Context, h hash.Hash, body []byte) (bool, error) {
	c.mu.Lock()
	c.kept[h] = body
	c.mu.Unlock()
	return c.recCAS.PutXorb(ctx, h, body)
}

// releaseCAS declares that it releases bodies; it checks each body while it has it, then passes it
// to the store.
type releaseCAS struct {
	*cas.Local
	mu  sync.Mutex
	bad []string
}

func (c *releaseCAS) ReleasesXorbBody() bool { return true }

func (c *releaseCAS) PutXorb(ctx context.Context, h hash.Hash, body []byte) (bool, error) {
	info, err := xorb.Index(body)
	if err != nil || info.Hash != h {
		c.mu.Lock()
		c.bad = append(c.bad, fmt.Sprintf("xorb %s: body indexes to %v (%v)", h, info, err))
		c.mu.Unlock()
	}
	return c.Local.PutXorb(ctx, h, body)
}

func mixedFiles(seed uint64) [][]byte {
	var out [][]byte
	for i := range 6 {
		out = append(out, genData(1000+i*90_000, seed*100+uint64(i)))
	}
	return out
}

// A client that keeps xorb bodies after PutXorb (and does not declare it releases them) finds them
// intact after later uploads in the same process: the session recycles only bodies it may.
func TestKeptXorbBodiesStayIntact(t *testing.T) {
	keep := &keepCAS{recCAS: &recCAS{}, kept: make(map[hash.Hash][]byte)}
	for round := range 2 {
		uploadFiles(t, upload.Config{CAS: keep}, mixedFiles(uint64(round+1))...)
	}
	// Churn the process's buffers with sessions whose client does release them.
	local := openStore(t)
	for round := range 3 {
		uploadFiles(t, upload.Config{CAS: &releaseCAS{Local: local}}, mixedFiles(uint64(round+10))...)
	}
	keep.mu.Lock()
	defer keep.mu.Unlock()
	if len(keep.kept) == 0 {
		t.Fatal("test precondition: no xorb uploaded")
	}
	for h, body := range keep.kept {
		info, err := xorb.Index(body)
		if err != nil || info.Hash != h {
			t.Fatalf("the body of xorb %s, kept by its client, was overwritten afterwards (%v)", h, err)
		}
	}
}

// Sessions running at once in one process, with clients that release bodies (and the store's own
// client), upload intact xorbs and files: recycled buffers are never shared.
func TestConcurrentSessionsRecycleSafely(t *testing.T) {
	local := openStore(t)
	rel := &releaseCAS{Local: local}
	var wg sync.WaitGroup
	type done struct {
		res   []*upload.FileResult
		files [][]byte
		err   error
	}
	out := make([]done, 4)
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var c cas.Client = rel
			if i%2 == 1 {
				c = local // the store's direct path (cas.BuiltXorbPutter when it has it)
			}
			files := mixedFiles(uint64(100 + i))
			s := upload.NewSession(upload.Config{CAS: c, Concurrency: 2})
			var res []*upload.FileResult
			for _, f := range files {
				r, err := s.Upload(context.Background(), bytesReader(f), nil, nil)
				if err != nil {
					out[i] = done{err: err}
					return
				}
				res = append(res, r)
			}
			out[i] = done{res: res, files: files, err: s.Finish(context.Background())}
		}()
	}
	wg.Wait()
	if len(rel.bad) != 0 {
		t.Fatalf("xorb bodies changed while their upload ran: %v", rel.bad)
	}
	for i, d := range out {
		if d.err != nil {
			t.Fatalf("session %d: %v", i, d.err)
		}
		for j, r := range d.res {
			downloadEq(t, local, r, d.files[j])
		}
	}
}
