package client

import (
	"bytes"
	"context"
	"io"
	"math"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
)

// emptyFetches answers every fetch with no bytes, as a hostile server's 206 with Content-Length 0.
type emptyFetches struct{ cas.Client }

func (emptyFetches) Fetch(context.Context, hash.Hash, casapi.XorbFetch, casapi.ByteRange) (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(nil)), nil
}

// A listing's merged range of bytes 0-18446744073709551615 (its length wraps to 0, so it cost
// nothing against the bytes held in memory) is left out, not taken as holding every offset: a
// listed file's fetch from it sliced past the empty buffer and the panic ended the leader and
// every conversation it served.
func TestListedRangeThatWrapsIsLeftOut(t *testing.T) {
	x := hash.Hash{7}
	m := &listedCAS{Client: emptyFetches{}, ranges: map[hash.Hash][]fetchedRange{}}
	wraps := map[hash.Hash][]casapi.XorbFetch{x: {{URL: "https://cas.example/x", Ranges: []casapi.XorbRange{
		{Chunks: casapi.ChunkRange{Start: 0, End: 1}, Bytes: casapi.ByteRange{Start: 0, End: math.MaxUint64}},
		{Chunks: casapi.ChunkRange{Start: 1, End: 2}, Bytes: casapi.ByteRange{Start: 9, End: 3}},
	}}}}
	if err := m.fetch(context.Background(), wraps); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Fetch(context.Background(), x, casapi.XorbFetch{}, casapi.ByteRange{Start: 0, End: 100007}); err == nil {
		t.Fatal("bytes 0-100007 were served from a listed range that held none")
	}
}
