package upload_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded/embeddedtest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// An upload interrupted after its xorbs were accepted (no shard: Finish never ran) and started
// again in a new session sends none of them when ResumeCheckBytes asks first, and every one without.
func TestResumeDoesNotResendStoredXorbs(t *testing.T) {
	if testing.Short() {
		t.Skip("150 MiB uploaded twice; runs without -short")
	}
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
	if !testutil.Eventually(time.Minute, func() bool {
		first.mu.Lock()
		defer first.mu.Unlock()
		return first.putDone >= stored
	}) {
		t.Fatal("the xorbs cut were not stored within a minute")
	}
	s.Close()
	if stored < 2 {
		t.Fatalf("%d xorbs stored before the interruption", stored)
	}

	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// With Lend (from the file) a xorb's body holds little but headers: its size still counts. By
	// then the first run here has stored the tail too: nothing is sent.
	for _, tc := range []struct {
		check int64
		puts  int
		lend  bool
	}{{8 << 20, 1, false}, {0, stored + 1, false}, {8 << 20, 0, true}} {
		again := &recCAS{inner: inner}
		s := upload.NewSession(upload.Config{CAS: again, TempDir: t.TempDir(), ResumeCheckBytes: tc.check, Lend: tc.lend})
		var r io.Reader = bytes.NewReader(data)
		if tc.lend {
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			r = f
		}
		if _, err := s.Upload(ctx, r, nil, nil); err != nil {
			t.Fatal(err)
		}
		if err := s.Finish(ctx); err != nil {
			t.Fatal(err)
		}
		_, puts, _ := again.counts()
		// The last xorb (the file's tail) was never cut in the interrupted session.
		if puts != tc.puts {
			t.Errorf("ResumeCheckBytes %d (lend %v): %d xorbs sent (%d were stored before), want %d", tc.check, tc.lend, puts, stored, tc.puts)
		}
		if tc.check > 0 && s.Resumed() == 0 {
			t.Errorf("Resumed() = 0")
		}
		s.Close()
	}
}

// hasGateCAS holds the first xorb's upload until the CAS has been asked about a second xorb.
type hasGateCAS struct {
	*recCAS
	mu      sync.Mutex
	asked   map[hash.Hash]bool
	second  chan struct{} // closed at the second question
	putting int
}

func (c *hasGateCAS) HasXorb(ctx context.Context, x hash.Hash) (bool, error) {
	c.mu.Lock()
	c.asked[x] = true
	if len(c.asked) == 2 {
		close(c.second)
	}
	c.mu.Unlock()
	return c.recCAS.HasXorb(ctx, x)
}

func (c *hasGateCAS) PutXorb(ctx context.Context, x *xorb.Xorb) (bool, error) {
	c.mu.Lock()
	c.putting++
	first := c.putting == 1
	c.mu.Unlock()
	if first {
		select {
		case <-c.second:
		case <-time.After(20 * time.Second):
			return false, errors.New("the second xorb was not asked about while the first one's upload held the only room")
		}
	}
	return c.recCAS.PutXorb(ctx, x)
}

// A xorb is asked about (ResumeCheckBytes) as soon as it is cut, while it waits for room under the
// limit: with room for one upload, the second xorb's question is answered while the first uploads,
// so on a long link the round trip costs no upload time.
func TestResumeQuestionAskedWhileWaitingForRoom(t *testing.T) {
	ctx := context.Background()
	c := &hasGateCAS{recCAS: &recCAS{inner: embeddedtest.New(t)}, asked: map[hash.Hash]bool{}, second: make(chan struct{})}
	s := upload.NewSession(upload.Config{CAS: c, TempDir: t.TempDir(), ResumeCheckBytes: 1, Concurrency: 1, SeparateFiles: true})
	defer s.Close()
	for i := range 2 {
		if _, err := s.Upload(ctx, bytes.NewReader(testutil.RandomBytes(1<<20, uint64(40+i))), nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	if _, puts, _ := c.counts(); puts != 2 {
		t.Fatalf("%d xorbs sent, want 2", puts)
	}
}
