package upload_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded/embeddedtest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// releaseCAS checks each body while it has it (the session must not touch it before PutXorb
// returns), then passes it to the store.
type releaseCAS struct {
	*embedded.CAS
	mu  sync.Mutex
	bad []string
}

func (c *releaseCAS) PutXorb(ctx context.Context, x *xorb.Xorb) (bool, error) {
	h := x.Hash
	info, err := xorb.Index(x.Body)
	if err != nil || info.Hash != h {
		c.mu.Lock()
		c.bad = append(c.bad, fmt.Sprintf("xorb %s: body indexes to %v (%v)", h, info, err))
		c.mu.Unlock()
	}
	return c.CAS.PutXorb(ctx, x)
}

func mixedFiles(seed uint64) [][]byte {
	var out [][]byte
	for i := range 6 {
		out = append(out, testutil.RandomBytes(1000+i*90_000, seed*100+uint64(i)))
	}
	return out
}

// Sessions running at once in one process, with clients that release bodies (and the store's own
// client), upload intact xorbs and files: recycled buffers are never shared.
func TestConcurrentSessionsRecycleSafely(t *testing.T) {
	local := embeddedtest.New(t)
	rel := &releaseCAS{CAS: local}
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
				c = local // the store's client itself
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
