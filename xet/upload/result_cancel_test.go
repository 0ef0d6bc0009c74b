package upload_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded/embeddedtest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
)

// The result of an upload describes the file: its Xet hash (hash.File of its chunks), size, chunk
// count, SHA-256 (computed, or the one given, which must give the same shard) and the split of its
// bytes between new and deduped.
func TestFileResultFields(t *testing.T) {
	inputs := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"one byte", []byte{42}},
		{"300 KiB", testutil.RandomBytes(300<<10+5, 10)},
		{"blocks then a repeat", join(t, append(blocks(8, 31), blocks(8, 31)...)...)},
	}
	local := embeddedtest.New(t)
	for _, given := range []bool{false, true} {
		cc := &recCAS{inner: local}
		s := upload.NewSession(upload.Config{CAS: cc})
		var res []*upload.FileResult
		for _, in := range inputs {
			want := sha256.Sum256(in.data)
			var sum *[32]byte
			if given {
				sum = &want
			}
			r, err := s.Upload(context.Background(), bytesReader(in.data), sum, nil)
			if err != nil {
				t.Fatalf("%s: %v", in.name, err)
			}
			chunks := chunkEntries(in.data)
			if r.FileHash != hash.File(entriesOf(chunks)) {
				t.Errorf("%s: file hash %s, want %s", in.name, r.FileHash, hash.File(entriesOf(chunks)))
			}
			if r.Size != int64(len(in.data)) || r.Chunks != len(chunks) {
				t.Errorf("%s: size %d chunks %d, want %d and %d", in.name, r.Size, r.Chunks, len(in.data), len(chunks))
			}
			if r.NewBytes+r.DedupedBytes != r.Size || r.NewBytes < 0 || r.DedupedBytes < 0 {
				t.Errorf("%s: new %d + deduped %d != size %d", in.name, r.NewBytes, r.DedupedBytes, r.Size)
			}
			if r.SHA256 != want {
				t.Errorf("%s (SHA-256 given: %v): SHA-256 %x, want %x", in.name, given, r.SHA256, want)
			}
			res = append(res, r)
		}
		if r := res[3]; r.DedupedBytes != 8*blockSize {
			t.Errorf("a file repeating its first 8 chunks deduped %d bytes, want %d", r.DedupedBytes, 8*blockSize)
		}
		if err := s.Finish(context.Background()); err != nil {
			t.Fatal(err)
		}
		sh := cc.lastShard(t)
		for i, r := range res {
			if r.Size == 0 {
				continue // the empty file needs no registration
			}
			fi, ok := sh.FindFile(r.FileHash)
			if !ok {
				t.Fatalf("%s is not in the shard", inputs[i].name)
			}
			f := sh.Files[fi]
			if !f.HasSHA256 || f.SHA256 != hash.FromSHA256(r.SHA256) {
				t.Errorf("%s: the shard's SHA-256 ext %v %s, want %s", inputs[i].name, f.HasSHA256, f.SHA256, hash.FromSHA256(r.SHA256))
			}
			if f.Size() != uint64(r.Size) {
				t.Errorf("%s: the shard's terms cover %d bytes, want %d", inputs[i].name, f.Size(), r.Size)
			}
			downloadEq(t, local, r, inputs[i].data)
		}
	}
}

// endless yields pseudo-random bytes forever (so the chunker never reaches EOF by itself).
type endless struct{ r *rand.Rand }

func (e *endless) Read(p []byte) (int, error) {
	n := len(p)
	for len(p) >= 8 {
		binary.LittleEndian.PutUint64(p, e.r.Uint64())
		p = p[8:]
	}
	for i := range p {
		p[i] = byte(e.r.Uint32())
	}
	return n, nil
}

func newEndless(seed uint64) *endless { return &endless{r: rand.New(rand.NewPCG(seed, 1))} }

// Cancelling the context of an Upload that is streaming a file makes it return promptly with the
// context's error, and leaves no goroutine behind.
func TestUploadCancelled(t *testing.T) {
	base := goleak.IgnoreCurrent()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cancelledAt time.Time
	cc := &recCAS{}
	s := upload.NewSession(upload.Config{CAS: cc})
	progress := func(done int64) {
		if done >= 4<<20 && cancelledAt.IsZero() {
			cancelledAt = time.Now()
			cancel()
		}
	}
	_, err := s.Upload(ctx, newEndless(1), nil, progress)
	if cancelledAt.IsZero() {
		t.Fatalf("upload of an endless stream returned before 4 MiB: %v", err)
	}
	if took := time.Since(cancelledAt); took > 3*time.Second {
		t.Fatalf("Upload returned %v after its context was cancelled", took)
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled upload returned %v, want context.Canceled", err)
	}
	// The session may refuse to go on, but it must never register the cut-off file.
	_ = s.Finish(context.Background())
	cc.mu.Lock()
	for _, b := range cc.shards {
		if sh, err := shard.Parse(b); err != nil || len(sh.Files) != 0 {
			t.Errorf("after a cancelled upload a shard was registered (%v, err %v)", sh != nil && len(sh.Files) != 0, err)
		}
	}
	cc.mu.Unlock()
	goroutinesSettle(t, base)
}

// An Upload whose context is already done returns at once (even for an endless stream).
func TestUploadContextAlreadyDone(t *testing.T) {
	base := goleak.IgnoreCurrent()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan error, 1)
	go func() {
		_, err := upload.NewSession(upload.Config{CAS: &recCAS{}}).Upload(ctx, newEndless(2), nil, nil)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Upload with a cancelled context did not return")
	}
	goroutinesSettle(t, base)
}

// Cancelling Finish while xorb uploads hang stops those uploads (their context ends) and Finish
// returns promptly with an error; no goroutine is left behind.
func TestFinishCancelledWhileUploading(t *testing.T) {
	base := goleak.IgnoreCurrent()
	cc := &recCAS{blockPut: true}
	s := upload.NewSession(upload.Config{CAS: cc, Concurrency: 2})
	for i := range 3 {
		if _, err := s.Upload(context.Background(), bytesReader(testutil.RandomBytes(200<<10, uint64(70+i))), nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := s.Finish(ctx)
	if err == nil {
		t.Fatal("Finish succeeded although no xorb upload could complete")
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("Finish returned %v after start, its context ended after 200ms", took)
	}
	_, x, shards := cc.counts()
	if x == 0 {
		t.Fatal("test precondition: no xorb upload was started")
	}
	if shards != 0 {
		t.Fatal("a shard was registered although its xorbs were not uploaded")
	}
	goroutinesSettle(t, base)
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.putDone != len(cc.xorbs) {
		t.Fatalf("%d of %d xorb uploads still hang", len(cc.xorbs)-cc.putDone, len(cc.xorbs))
	}
}
