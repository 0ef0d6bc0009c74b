package agent

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// A stalled stdout (git-lfs busy, not reading its agent's answers) holds up no transfer: progress
// from the transfer's goroutines (a download's ranges) returns at once, the transfer finishes,
// and every message reaches git-lfs once it reads again, the progress in order and the complete
// last.
func TestStalledStdoutHoldsUpNoTransfer(t *testing.T) {
	const size = 64 << 20
	returned := make(chan struct{})
	f := &fake{download: func(ctx context.Context, obj Object, progress func(int64)) (Result, error) {
		var ranges sync.WaitGroup
		for r := range 8 { // 8 ranges, each reporting as it writes
			ranges.Go(func() {
				for done := int64(r+1) << 20; done <= size; done += 8 << 20 {
					progress(done)
					time.Sleep(10 * time.Millisecond) // 8 MiB of work: the transfer outlasts the progress interval
				}
			})
		}
		ranges.Wait()
		close(returned)
		return Result{Mode: "fake", Path: "/tmp/" + obj.Oid}, nil
	}}
	s := start(t, f, nil)
	s.send(initDownload)
	s.recv()
	s.send(fmt.Sprintf(`{"event":"download","oid":"%s","size":%d,"action":null}`, oidN(1), size))
	first := s.recv() // the first message (it frees git-lfs's other workers); then nothing is read
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("the transfer's progress calls were held up by a stdout nobody read")
	}
	ps, c := s.untilComplete(oidN(1))
	if c.Error != nil {
		t.Fatalf("complete = %+v", c)
	}
	checkProgress(t, append([]response{first}, ps...), size)
	s.send(`{"event":"terminate"}`)
	if err := s.wait(); err != nil {
		t.Fatal(err)
	}
}
