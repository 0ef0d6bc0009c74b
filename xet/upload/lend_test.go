package upload_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/download"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded/embeddedtest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/upload"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// serverCAS checks every xorb as a server does: the body it would be sent (lent payloads read from
// the file) must index to the xorb's hash. before, when set, runs first (a file written meanwhile).
type serverCAS struct {
	cas.Client
	lent, bodyBytes atomic.Int64
	before          func()
	check           bool
}

func (c *serverCAS) PutXorb(ctx context.Context, x *xorb.Xorb) (bool, error) {
	if c.before != nil {
		c.before()
	}
	c.lent.Add(int64(len(x.Lent)))
	c.bodyBytes.Add(int64(len(x.Body)))
	body, err := io.ReadAll(x.Reader())
	if err != nil {
		return false, err
	}
	if info, err := xorb.Index(body); c.check && (err != nil || info.Hash != x.Hash) {
		return false, fmt.Errorf("xorb %s refused: its chunks do not hash to it (%v)", x.Hash, err)
	}
	return c.Client.PutXorb(ctx, &xorb.Xorb{Hash: x.Hash, Body: body, Chunks: x.Chunks, RawBytes: x.RawBytes})
}

// lendFile writes a file of incompressible and compressible stretches, 70 MB: more than a xorb.
func lendFile(t *testing.T) (string, []byte) {
	var data []byte
	for i := range 14 {
		if i%4 == 3 {
			data = append(data, bytes.Repeat([]byte(fmt.Sprintf("row %d,compressible\n", i)), 5<<20/24)...)
		} else {
			data = append(data, testutil.RandomBytes(5<<20, uint64(i))...)
		}
	}
	path := filepath.Join(t.TempDir(), "f.bin")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, data
}

// With Config.Lend, a file's incompressible chunks are sent from the file, not copied into xorb
// bodies, and the file downloads byte for byte.
func TestLendSendsFromTheFile(t *testing.T) {
	path, data := lendFile(t)
	local := embeddedtest.New(t)
	c := &serverCAS{Client: local, check: true}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := upload.NewSession(upload.Config{CAS: c, Concurrency: 2, Lend: true, Policy: xorb.PolicyAuto})
	defer s.Close()
	res, err := s.Upload(context.Background(), f, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c.lent.Load() == 0 || c.bodyBytes.Load() > int64(len(data))/2 {
		t.Fatalf("%d payloads lent, %d body bytes for %d bytes of mostly random data: the chunks were copied", c.lent.Load(), c.bodyBytes.Load(), len(data))
	}
	out := filepath.Join(t.TempDir(), "out")
	sum := sha256.Sum256(data)
	if err := download.Download(context.Background(), download.Config{CAS: local}, download.Request{File: res.FileHash,
		SHA256: &sum, Size: int64(len(data)), Path: out}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("downloaded file differs (%v)", err)
	}
}

// A file written while its chunks are sent from it fails the upload: the CAS refuses the xorb
// whose bytes no longer hash to it, and where it would not notice, the file's changed size or time
// does.
func TestLendFileChangedDuringUpload(t *testing.T) {
	if testing.Short() {
		t.Skip("two uploads of 70 MB; runs without -short")
	}
	for _, check := range []bool{true, false} {
		path, _ := lendFile(t)
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		var once atomic.Bool
		c := &serverCAS{Client: embeddedtest.New(t), check: check, before: func() {
			if once.CompareAndSwap(false, true) {
				w, err := os.OpenFile(path, os.O_WRONLY, 0)
				if err == nil {
					_, _ = w.WriteAt(testutil.RandomBytes(100_000, 99), 0)
					_ = w.Close()
				}
			}
		}}
		s := upload.NewSession(upload.Config{CAS: c, Concurrency: 2, Lend: true, Policy: xorb.PolicyAuto})
		_, err = s.Upload(context.Background(), f, nil, nil)
		if err == nil {
			err = s.Finish(context.Background())
		}
		s.Close()
		f.Close()
		want := "changed while it was uploaded"
		if check {
			want = "do not hash to it"
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("check=%v: an upload of a file written meanwhile gave %v; want an error saying %q", check, err, want)
		}
	}
}

// Without a file (any other reader) nothing is lent.
func TestLendNeedsAFile(t *testing.T) {
	c := &serverCAS{Client: embeddedtest.New(t), check: true}
	s := upload.NewSession(upload.Config{CAS: c, Concurrency: 2, Lend: true})
	defer s.Close()
	if _, err := s.Upload(context.Background(), bytesReader(testutil.RandomBytes(3<<20, 5)), nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c.lent.Load() != 0 {
		t.Fatalf("%d payloads lent from a reader that is not a file", c.lent.Load())
	}
}

// Files of one session whose leftovers share a xorb (the accumulator) are merged with their
// payloads read in; every file downloads byte for byte.
func TestLendMergedLeftovers(t *testing.T) {
	local := embeddedtest.New(t)
	c := &serverCAS{Client: local, check: true}
	s := upload.NewSession(upload.Config{CAS: c, Concurrency: 2, Lend: true, Policy: xorb.PolicyAuto})
	defer s.Close()
	var datas [][]byte
	var results []*upload.FileResult
	for i := range 3 {
		data := testutil.RandomBytes(1<<20+i*1000, uint64(40+i))
		path := filepath.Join(t.TempDir(), "f")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close() // open until Finish
		res, err := s.Upload(context.Background(), f, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		datas, results = append(datas, data), append(results, res)
	}
	if err := s.Finish(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i, res := range results {
		out := filepath.Join(t.TempDir(), "out")
		if err := download.Download(context.Background(), download.Config{CAS: local}, download.Request{File: res.FileHash,
			Size: int64(len(datas[i])), Path: out}); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(out); err != nil || !bytes.Equal(got, datas[i]) {
			t.Fatalf("file %d downloads different bytes (%v)", i, err)
		}
	}
}

// followsCAS records each xorb's hash and hint, in the order cut.
type followsCAS struct {
	cas.Client
	mu      sync.Mutex
	hashes  []hash.Hash
	follows []xorb.Follows
}

func (c *followsCAS) PutXorb(ctx context.Context, x *xorb.Xorb) (bool, error) {
	c.mu.Lock()
	c.hashes, c.follows = append(c.hashes, x.Hash), append(c.follows, x.Follows)
	c.mu.Unlock()
	return c.Client.PutXorb(ctx, x)
}

// Each xorb of a file whose chunks are all new says where it sits: the first begins the file, each
// next one follows the one before (what lets a server hash the file's SHA-256 as they arrive). A
// file that dedupes against earlier data hints nothing past that point.
func TestXorbsSayWhereTheyFollow(t *testing.T) {
	if testing.Short() {
		t.Skip("220 MiB through sessions of one uploader; runs without -short")
	}
	data := testutil.RandomBytes(150<<20, 61) // three xorbs
	c := &followsCAS{Client: embeddedtest.New(t)}
	s := upload.NewSession(upload.Config{CAS: c, Concurrency: 1})
	defer s.Close()
	if _, err := s.Upload(context.Background(), bytesReader(data), nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(c.hashes) != 3 || c.follows[0] != (xorb.Follows{Start: true}) ||
		c.follows[1] != (xorb.Follows{Prev: c.hashes[0]}) || c.follows[2] != (xorb.Follows{Prev: c.hashes[1]}) {
		t.Fatalf("xorbs %v sent with hints %+v", c.hashes, c.follows)
	}
	// In one session, file B = 1 MiB of new bytes, then all of file A (deduped in the session),
	// then 70 MiB of new bytes: B's first xorb begins it, but none after the dedupe may claim to
	// follow another.
	c.hashes, c.follows = nil, nil
	s2 := upload.NewSession(upload.Config{CAS: c, Concurrency: 1})
	defer s2.Close()
	a := testutil.RandomBytes(2<<20, 62)
	b := append(append(testutil.RandomBytes(1<<20, 63), a...), testutil.RandomBytes(70<<20, 64)...)
	for _, f := range [][]byte{a, b} {
		if _, err := s2.Upload(context.Background(), bytesReader(f), nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := s2.Finish(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(c.hashes) < 2 {
		t.Fatalf("%d xorbs", len(c.hashes))
	}
	for i, f := range c.follows {
		if f.Prev != (hash.Hash{}) {
			t.Fatalf("xorb %d says it follows %s, after its file deduped", i, f.Prev)
		}
	}
}
