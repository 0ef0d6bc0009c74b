package upload_test

import (
	"context"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded/embeddedtest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
)

// The questions a session asks the CAS on goroutines of their own (global dedupe after a file's
// first chunk; "do you hold this xorb" for large xorbs) belong to the session: none is still under
// way when Finish returns (their answers are taken up), nor when Close returns without a Finish
// (they are cancelled), however long a round trip takes.
func TestSessionJoinsItsQuestions(t *testing.T) {
	e := eligibleBlocks(t, 6, 1<<41)
	var parts [][]byte
	parts = append(parts, blocks(3, 8000)...)
	parts = append(parts, e...)
	f := join(t, parts...)
	for _, finish := range []bool{true, false} {
		cc := &recCAS{inner: embeddedtest.New(t), queryDelay: 300 * time.Millisecond}
		if !finish { // a Finish waits for its xorbs, and so for their questions
			cc.hasDelay = 300 * time.Millisecond
		}
		s := upload.NewSession(upload.Config{CAS: cc, GlobalDedupe: true, QuerySpacing: 1, ResumeCheckBytes: 1, Policy: policyNone})
		if _, err := s.Upload(context.Background(), bytesReader(f), nil, nil); err != nil {
			t.Fatal(err)
		}
		if finish {
			if err := s.Finish(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if q, _, _ := cc.counts(); q < 2 {
			t.Fatalf("test data: %d global questions, want some in the background", q)
		}
		if n := cc.questions(); finish && n != 0 {
			t.Errorf("%d questions still under way when Finish returned", n)
		}
		s.Close()
		if n := cc.questions(); n != 0 {
			t.Errorf("finish %v: %d questions still under way after Close", finish, n)
		}
	}
}
