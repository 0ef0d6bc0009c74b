package embedded_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/embedded"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

func open(t *testing.T) *embedded.CAS {
	t.Helper()
	st, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return embedded.New(st, "")
}

// The store's "not found" answers reach callers as cas.ErrNotFound, which upload and download act
// on (a dedupe miss, an unknown file).
func TestNotFoundIsCASNotFound(t *testing.T) {
	c := open(t)
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
	c := open(t)
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
	sx := shard.Xorb{Hash: x.Hash, BytesInXorb: uint32(x.RawBytes)}
	for _, ch := range x.Chunks {
		sx.Chunks = append(sx.Chunks, shard.XorbChunk{Hash: ch.Hash, RawStart: uint32(ch.RawStart), RawLen: ch.RawLen})
	}
	sh := &shard.Shard{Version: shard.HeaderVersion, Xorbs: []shard.Xorb{sx}}
	if err := c.PutShard(ctx, sh.AppendUpload(nil)); err != nil {
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
