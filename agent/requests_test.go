package agent

import (
	"context"
	"io"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/protocol"
)

// A request the reader has read when its conversation is stopped (the leader giving it back) is
// put back in front of what the conversation read and did not serve: the follower that takes the
// conversation back reads it first, and git-lfs gets its answer.
func TestStoppedReaderPutsItsRequestBack(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	dec := protocol.NewDecoder(pr)
	ctx, cancel := context.WithCancel(context.Background())
	reqs := readRequests(ctx, cancel, dec, pr)
	line := `{"event":"download","oid":"` + oid64 + `","size":5}` + "\n"
	if _, err := pw.Write([]byte(line)); err != nil { // returns once the decoder has taken it in
		t.Fatal(err)
	}
	cancel() // nobody takes the request: the conversation is being stopped
	reqs.wg.Wait()
	if got := string(dec.Remaining()); got != line {
		t.Fatalf("after the stop the conversation holds %q, want the request read: %q", got, line)
	}
}

const oid64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
