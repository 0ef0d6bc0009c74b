package leader

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/git-xet-transfer/git-xet-transfer/agent"
	"github.com/git-xet-transfer/git-xet-transfer/agent/client"
	"github.com/git-xet-transfer/git-xet-transfer/agent/share"
)

// barrierClient is a Client whose uploads all wait until n of them are under way at once (or a
// minute has passed: they then fail).
type barrierClient struct {
	n    int
	mu   sync.Mutex
	in   int
	all  chan struct{}
	once sync.Once
}

func (c *barrierClient) Upload(ctx context.Context, obj agent.Object, progress func(int64)) (agent.Result, error) {
	c.mu.Lock()
	c.in++
	if c.in == c.n {
		c.once.Do(func() { close(c.all) })
	}
	c.mu.Unlock()
	select {
	case <-c.all:
		return agent.Result{Mode: agent.ModeEmbedded, NewBytes: obj.Size}, nil
	case <-time.After(time.Minute):
		return agent.Result{}, fmt.Errorf("%s waited a minute for the other uploads", obj.Oid)
	}
}

func (c *barrierClient) Download(context.Context, agent.Object, func(int64)) (agent.Result, error) {
	return agent.Result{}, fmt.Errorf("no downloads here")
}
func (c *barrierClient) Close() error { return nil }
func (c *barrierClient) Scope(context.Context) (client.Scope, error) {
	return client.Scope{}, fmt.Errorf("not sharing")
}
func (c *barrierClient) SmallBatch(context.Context, agent.Object) (client.BatchTarget, bool) {
	return client.BatchTarget{}, false
}
func (c *barrierClient) UploadBatch(context.Context, []agent.Object) ([]agent.Result, []error, error) {
	return nil, nil, fmt.Errorf("no batches here")
}
func (c *barrierClient) BatchListing(context.Context, agent.Object) ([]agent.Object, error) {
	return nil, fmt.Errorf("no listings here")
}
func (c *barrierClient) DownloadListed(context.Context, agent.Object) ([]agent.Object, []agent.Result, []error, error) {
	return nil, nil, nil, fmt.Errorf("no listings here")
}

// A leader serves the conversations handed to it side by side: 8 conversations whose uploads each
// wait until all 8 are under way all complete.
func TestLeaderServesConversationsAtOnce(t *testing.T) {
	const n = 8
	c := &barrierClient{n: n, all: make(chan struct{})}
	open := New(Options{Log: zerolog.Nop()}, func(agent.Init, client.Coordinator) Client { return c })
	tr, err := open(context.Background(), agent.Init{Operation: "upload", Remote: "origin", ConcurrentTransfers: n})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	l := tr.(*Leader)
	l.leading.Store(true)
	outs := make([]strings.Builder, n)
	outcomes := make([]share.Outcome, n)
	var wg sync.WaitGroup
	for i := range n {
		oid := fmt.Sprintf("%064x", i+1)
		req := fmt.Sprintf(`{"event":"upload","oid":%q,"size":%d,"path":"obj"}`+"\n"+`{"event":"terminate"}`+"\n", oid, 3000+i)
		wg.Go(func() {
			outcomes[i] = l.servePipe(context.Background(), &share.Pipe{In: strings.NewReader(req), Out: &outs[i], Dir: t.TempDir(), Pid: 100 + i})
		})
	}
	wg.Wait()
	for i := range n {
		if !outcomes[i].Exit || outcomes[i].Err != "" || !strings.Contains(outs[i].String(), `"event":"complete"`) || strings.Contains(outs[i].String(), `"error"`) {
			t.Fatalf("conversation %d: outcome %+v, answers %s", i, outcomes[i], outs[i].String())
		}
	}
}
