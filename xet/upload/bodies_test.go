package upload

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/bufpool"
	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded/embeddedtest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// drainBodies empties the process's body pool, so a test sees only the bodies it returns.
func drainBodies() {
	for b := bodies.Get(xorb.BodyCap); b != nil; b = bodies.Get(xorb.BodyCap) {
		bufpool.Unmap(b)
	}
}

// A session closed without Finish (a failed push) returns the body of its open xorb to the pool:
// a mapped body nobody returns stays mapped until the process ends, 64 MiB each time in a
// long-lived server's basic-transfer bridge.
func TestCloseReturnsOpenBodies(t *testing.T) {
	drainBodies()
	defer drainBodies()
	s := NewSession(Config{CAS: embeddedtest.New(t), Concurrency: 2})
	if _, err := s.Upload(context.Background(), bytes.NewReader(testutil.RandomBytes(100_000, 7)), nil, nil); err != nil {
		t.Fatal(err)
	}
	if b := bodies.Get(xorb.BodyCap); b != nil {
		t.Fatalf("the open xorb's body is in the pool before Close")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if b := bodies.Get(xorb.BodyCap); b == nil {
		t.Fatalf("Close did not return the open xorb's body")
	}
}

// A xorb whose upload fails returns its body too (the client no longer reads it).
func TestFailedPutReturnsBody(t *testing.T) {
	drainBodies()
	defer drainBodies()
	s := NewSession(Config{CAS: failingCAS{embeddedtest.New(t)}, Concurrency: 2})
	_, err := s.Upload(context.Background(), bytes.NewReader(testutil.RandomBytes(100_000, 8)), nil, nil)
	if err == nil {
		err = s.Finish(context.Background())
	}
	if err == nil {
		t.Fatal("the session succeeded with a CAS that refuses every xorb")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if b := bodies.Get(xorb.BodyCap); b == nil {
		t.Fatalf("the failed xorb's body did not come back to the pool")
	}
}

// failingCAS refuses every xorb.
type failingCAS struct{ cas.Client }

func (failingCAS) PutXorb(context.Context, *xorb.Xorb) (bool, error) {
	return false, errors.New("refused")
}

// A session told it uploads a small file builds its xorb in a small recycled body, not a 64 MiB
// mapping, and stores the same file; a file that turns out bigger than the hint still uploads.
func TestSmallSessionUsesSmallBodies(t *testing.T) {
	drainBodies()
	defer drainBodies()
	for smallBodies.Get(0) != nil {
	}
	upload := func(hint int64, data []byte) *FileResult {
		t.Helper()
		s := NewSession(Config{CAS: embeddedtest.New(t), Concurrency: 1, SizeHint: hint})
		defer s.Close()
		res, err := s.Upload(context.Background(), bytes.NewReader(data), nil, nil)
		if err == nil {
			err = s.Finish(context.Background())
		}
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	data := testutil.RandomBytes(100_000, 9)
	small := upload(int64(len(data)), data)
	if b := bodies.Get(xorb.BodyCap); b != nil {
		t.Fatal("a small session took a 64 MiB body")
	}
	if b := smallBodies.Get(smallBodyCap); b == nil {
		t.Fatal("a small session's body did not come back to the small pool")
	}
	if whole := upload(0, data); whole.FileHash != small.FileHash || whole.SHA256 != small.SHA256 {
		t.Fatalf("a small session stored file %s, the ordinary one %s", small.FileHash, whole.FileHash)
	}
	big := testutil.RandomBytes(3<<20, 10)
	if got, want := upload(1000, big), upload(0, big); got.FileHash != want.FileHash || got.Size != int64(len(big)) {
		t.Fatalf("a file bigger than its hint: %s (%d bytes), want %s", got.FileHash, got.Size, want.FileHash)
	}
}
