package upload_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded/embeddedtest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
)

// An upload interrupted after its xorbs were accepted (no shard: Finish never ran) and started
// again in a new session sends none of them when ResumeCheckBytes asks first, and every one without.
func TestResumeDoesNotResendStoredXorbs(t *testing.T) {
	ctx := context.Background()
	inner := embeddedtest.New(t)
	data := testutil.RandomBytes(150<<20, 21) // three xorbs
	first := &recCAS{inner: inner}
	s := upload.NewSession(upload.Config{CAS: first, TempDir: t.TempDir()})
	if _, err := s.Upload(ctx, bytes.NewReader(data), nil, nil); err != nil {
		t.Fatal(err)
	}
	// "Killed" once the xorbs cut so far are stored: the file is not registered.
	_, stored, _ := first.counts()
	for done := 0; done < stored; {
		first.mu.Lock()
		done = first.putDone
		first.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	s.Close()
	if stored < 2 {
		t.Fatalf("%d xorbs stored before the interruption", stored)
	}

	for _, tc := range []struct {
		check  int64
		resent int
	}{{8 << 20, 0}, {0, stored}} {
		again := &recCAS{inner: inner}
		s := upload.NewSession(upload.Config{CAS: again, TempDir: t.TempDir(), ResumeCheckBytes: tc.check})
		if _, err := s.Upload(ctx, bytes.NewReader(data), nil, nil); err != nil {
			t.Fatal(err)
		}
		if err := s.Finish(ctx); err != nil {
			t.Fatal(err)
		}
		_, puts, _ := again.counts()
		// The last xorb (the file's tail) was never cut in the interrupted session.
		if resent := puts - 1; resent != tc.resent {
			t.Errorf("ResumeCheckBytes %d: %d of the %d stored xorbs sent again, want %d", tc.check, resent, stored, tc.resent)
		}
		if tc.check > 0 && s.Resumed() == 0 {
			t.Errorf("Resumed() = 0")
		}
		s.Close()
	}
}
