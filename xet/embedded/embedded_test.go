package embedded_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded/embeddedtest"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// xorbShard is an upload shard listing x alone.
func xorbShard(x *xorb.Xorb) []byte {
	sx := shard.Xorb{Hash: x.Hash, BytesInXorb: uint32(x.RawBytes)}
	for _, ch := range x.Chunks {
		sx.Chunks = append(sx.Chunks, shard.XorbChunk{Hash: ch.Hash, RawStart: uint32(ch.RawStart), RawLen: ch.RawLen})
	}
	sh := &shard.Shard{Version: shard.HeaderVersion, Xorbs: []shard.Xorb{sx}}
	return sh.AppendUpload(nil)
}

// The store's "not found" answers reach callers as cas.ErrNotFound, which upload and download act
// on (a dedupe miss, an unknown file).
func TestNotFoundIsCASNotFound(t *testing.T) {
	c := embeddedtest.New(t)
	ctx := context.Background()
	if _, err := c.QueryChunk(ctx, hash.Hash{1}); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("QueryChunk of an unknown chunk: %v, want cas.ErrNotFound", err)
	}
	if _, err := c.Reconstruct(ctx, hash.Hash{2}, nil); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("Reconstruct of an unknown file: %v, want cas.ErrNotFound", err)
	}
	if _, err := c.Fetch(ctx, hash.Hash{3}, casapi.XorbFetch{}, casapi.ByteRange{Start: 0, End: 1}); !errors.Is(err, cas.ErrNotFound) {
		t.Errorf("Fetch of an unknown xorb: %v, want cas.ErrNotFound", err)
	}
}

// A xorb put through the trusted path reads back byte for byte once the shard listing it is stored
// (a small xorb is held back until then, and counts as held), and a range past its records is an
// error, not a short read.
func TestPutXorbThenFetch(t *testing.T) {
	c := embeddedtest.New(t)
	ctx := context.Background()
	b := xorb.NewBuilder(xorb.PolicyAuto)
	data := bytes.Repeat([]byte("embedded "), 1000)
	b.Add(data, hash.Chunk(data))
	x := b.Finish()
	if ok, err := c.PutXorb(ctx, x); !ok || err != nil {
		t.Fatalf("PutXorb = %v, %v", ok, err)
	}
	if ok, err := c.PutXorb(ctx, x); ok || err != nil {
		t.Fatalf("second PutXorb = %v, %v; want false, nil", ok, err)
	}
	if ok, err := c.HasXorb(ctx, x.Hash); !ok || err != nil {
		t.Fatalf("HasXorb of a held-back xorb = %v, %v", ok, err)
	}
	if _, err := c.Fetch(ctx, x.Hash, casapi.XorbFetch{}, casapi.ByteRange{Start: 0, End: 1}); !errors.Is(err, cas.ErrNotFound) {
		t.Fatalf("Fetch of a xorb whose shard is not stored: %v, want not found", err)
	}
	if err := c.PutShard(ctx, xorbShard(x)); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.Store().HasXorb(ctx, x.Hash); !ok || err != nil {
		t.Fatalf("store's HasXorb after the shard = %v, %v", ok, err)
	}
	n := uint64(len(x.Body))
	rc, err := c.Fetch(ctx, x.Hash, casapi.XorbFetch{}, casapi.ByteRange{Start: 0, End: n - 1})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, x.Body) {
		t.Fatalf("Fetch of the whole records region: %d bytes, %v; want the %d body bytes", len(got), err, n)
	}
	if _, err := c.Fetch(ctx, x.Hash, casapi.XorbFetch{}, casapi.ByteRange{Start: 0, End: n}); err == nil {
		t.Fatal("Fetch past the records region succeeded")
	}
}

// Closing the store gives back every file it opened for the writes and reads of a session: a
// process that opens and closes stores keeps none of them until the collector runs.
func TestStoreCloseReleasesItsFiles(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := embedded.New(st, "")
	ctx := context.Background()
	b := xorb.NewBuilder(xorb.PolicyAuto)
	for i := range 40 { // over a MiB: a xorb of its own file, besides the packed shard
		data := testutil.RandomBytes(32<<10, uint64(i))
		b.Add(data, hash.Chunk(data))
	}
	x := b.Finish()
	if _, err := c.PutXorb(ctx, x); err != nil {
		t.Fatal(err)
	}
	if err := c.PutShard(ctx, xorbShard(x)); err != nil {
		t.Fatal(err)
	}
	rc, err := c.Fetch(ctx, x.Hash, casapi.XorbFetch{}, casapi.ByteRange{Start: 0, End: 99})
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(io.Discard, rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(testutil.OpenFilesUnder(t, dir)) == 0 {
		t.Fatal("nothing open under the store before Close: the test checks nothing")
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if open := testutil.OpenFilesUnder(t, dir); len(open) > 0 {
		t.Fatalf("after Close, %d files of the store are still open: %v", len(open), open)
	}
}
