package server

import (
	"errors"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/servertest"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
)

// Shard bodies are held in memory whole (up to Limits.Shard, 64 MiB, each) before they are
// checked: the server reads a bounded number of them at once (MaxShardBodies, MaxShardPuts per
// user), as it does xorb bodies. On main every shard upload read its body at once, however many
// were sent, so one user with write access held as many 64 MiB bodies as it opened connections
// (memory without bound).
func TestShardBodiesReadAtOnceAreBounded(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxShardPuts = 1 })
	const sent = 12
	bodies := e.srv.shardBodies.size
	var wg sync.WaitGroup
	var pipes []*io.PipeWriter
	for i := range sent {
		user := "u" + strconv.Itoa(i/2) // two uploads each: one user holds at most MaxShardPuts bodies
		tok := e.token(user, user+"/r", scopeWrite, time.Hour)
		pr, pw := io.Pipe()
		pipes = append(pipes, pw)
		req, err := http.NewRequest("POST", e.base+"/v1/shards", pr)
		if err != nil {
			t.Fatal(err)
		}
		hdr := servertest.Bearer(tok)
		req.Header.Set(hdr[0], hdr[1])
		wg.Add(1)
		go func() {
			defer wg.Done()
			if res, err := http.DefaultClient.Do(req); err == nil {
				res.Body.Close()
			}
		}()
		go func() { _, _ = pw.Write(make([]byte, 64<<10)) }() // a start of a body, then nothing
	}
	defer func() {
		for _, pw := range pipes {
			pw.CloseWithError(errors.New("test over"))
		}
		wg.Wait()
	}()
	var reading, waiting int
	settled := testutil.Eventually(20*time.Second, func() bool {
		reading, waiting = shardHandlers()
		return reading > bodies || (reading == bodies && waiting == sent-bodies)
	})
	if !settled || reading > bodies {
		t.Fatalf("%d shard bodies being read at once and %d uploads waiting, want at most %d read (%d waiting)",
			reading, waiting, bodies, sent-bodies)
	}
}

// shardHandlers counts the shard upload handlers reading a body and those waiting for a slot to
// read one.
func shardHandlers() (reading, waiting int) {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	for _, g := range strings.Split(string(buf), "\n\n") {
		if !strings.Contains(g, "server.(*Server).handlePutShardV1(") {
			continue
		}
		switch {
		case strings.Contains(g, "server.(*Server).readShard("):
			reading++
		case strings.Contains(g, "server.(*slotPool).acquire("):
			waiting++
		}
	}
	return reading, waiting
}
