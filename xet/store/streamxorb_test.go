package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/bufpool"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// noLen hides a reader's Len: the store then reads the body whole, as before streaming.
type noLen struct{ io.Reader }

// A large xorb upload is checked as it arrives and written as it passes: the store holds no whole
// body (no receive buffer, allocations far below the body's size), stores byte for byte what the
// whole-body path stores, and hashes the raw bytes into the file's SHA-256 run on the way.
func TestPutXorbStreamed(t *testing.T) {
	if testing.Short() {
		t.Skip("an allocation measure of a 3-part xorb; runs without -short (the race step runs with it: the detector's own allocations would be measured)")
	}
	ctx := context.Background()
	x := builtXorb(t, 1600, 3)
	if len(x.Body) < 3*streamMin {
		t.Fatalf("test xorb of %d bytes, want at least %d", len(x.Body), 3*streamMin)
	}
	for b := recvBufs.Get(recvMin); b != nil; b = recvBufs.Get(recvMin) {
		bufpool.Unmap(b)
	}
	streamed, whole := openStore(t), openStore(t)
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	if ok, err := streamed.PutXorbFollowing(ctx, x.Hash, bytes.NewReader(x.Body), xorb.Follows{Start: true}); !ok || err != nil {
		t.Fatalf("streamed put = %v, %v", ok, err)
	}
	runtime.ReadMemStats(&m1)
	if b := recvBufs.Get(recvMin); b != nil {
		bufpool.Unmap(b)
		t.Error("the streamed put used a whole-body receive buffer")
	}
	if a := m1.TotalAlloc - m0.TotalAlloc; a > uint64(len(x.Body)/2) { // buffers of 5 MiB; a whole body is 30
		t.Errorf("the streamed put of %d bytes allocated %d bytes", len(x.Body), a)
	}
	if ok, err := whole.PutXorb(ctx, x.Hash, noLen{bytes.NewReader(x.Body)}); !ok || err != nil {
		t.Fatalf("whole-body put = %v, %v", ok, err)
	}
	if !bytes.Equal(readObject(t, streamed, x.Hash), readObject(t, whole, x.Hash)) {
		t.Fatal("the streamed xorb is stored differently from the whole-body one")
	}
	if ok, err := streamed.PutXorb(ctx, x.Hash, bytes.NewReader(x.Body)); ok || err != nil {
		t.Fatalf("second put = %v, %v; want false, nil", ok, err)
	}

	// The SHA-256 run kept for the xorb is the hash of its raw bytes.
	st, ok := streamed.chains.get(x.Hash)
	if !ok || st.chunks != len(x.Chunks) {
		t.Fatalf("chain state after the streamed put: %v %+v", ok, st)
	}
	h := sha256.New()
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(st.state); err != nil {
		t.Fatal(err)
	}
	raw := sha256.New()
	info, err := xorb.Index(x.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range info.Chunks {
		d, _, _, err := xorb.DecodeRecord(nil, x.Body[c.Start:c.End])
		if err != nil {
			t.Fatal(err)
		}
		raw.Write(d)
	}
	if !bytes.Equal(h.Sum(nil), raw.Sum(nil)) {
		t.Error("the SHA-256 state kept is not that of the xorb's raw bytes")
	}
}

// A streamed body that is not the xorb it claims to be, or is malformed part-way, is refused as
// invalid; one that breaks off is a read error; in each case nothing is stored, no temp file stays
// behind, and the state of a SHA-256 run is not kept.
func TestPutXorbStreamedRefusals(t *testing.T) {
	ctx := context.Background()
	x := builtXorb(t, 400, 4)
	other := builtXorb(t, 2, 5)
	corrupt := bytes.Clone(x.Body)
	corrupt[len(corrupt)/2] ^= 0xff
	badRecord := bytes.Clone(x.Body)
	info, err := xorb.Index(x.Body)
	if err != nil {
		t.Fatal(err)
	}
	badRecord[info.Chunks[300].Start] = 9 // record version
	for _, tc := range []struct {
		name    string
		h       hash.Hash
		body    io.Reader
		invalid bool
	}{
		{"another xorb's hash", other.Hash, bytes.NewReader(x.Body), true},
		{"a flipped byte", x.Hash, bytes.NewReader(corrupt), true},
		{"a bad record late", x.Hash, bytes.NewReader(badRecord), true},
		{"trailing garbage", x.Hash, bytes.NewReader(append(bytes.Clone(x.Body), "garbage!"...)), true},
		{"a body that breaks off", x.Hash, &cutReader{n: len(x.Body), left: len(x.Body) / 2}, false},
	} {
		dir := t.TempDir()
		s, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.PutXorbFollowing(ctx, tc.h, tc.body, xorb.Follows{Start: true})
		var inv *InvalidError
		if err == nil || errors.As(err, &inv) != tc.invalid {
			t.Errorf("%s: %v (invalid: %v), want invalid %v", tc.name, err, errors.As(err, &inv), tc.invalid)
		}
		if ok, _ := s.HasXorb(ctx, tc.h); ok {
			t.Errorf("%s: the xorb was stored", tc.name)
		}
		if _, ok := s.chains.get(tc.h); ok {
			t.Errorf("%s: a SHA-256 run was kept", tc.name)
		}
		if left, _ := os.ReadDir(filepath.Join(dir, "tmp")); len(left) != 0 {
			t.Errorf("%s: %d temp files left", tc.name, len(left))
		}
	}
}
