package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/casapi"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
)

// A signed URL's suffix range reads the footer after the xorb's records (as an object store's
// presigned GET would read the object's tail), never records outside the signed ranges, and the
// footer holds only the hashes of the chunks inside them (the others zero); the client's
// XorbFooter reads it through the URL and gets the chunk offsets of the stored xorb.
func TestSignedURLSuffixServesTheFooterOnly(t *testing.T) {
	e := newEnv(t, nil)
	r := loadRef(t)
	e.uploadRef(r)
	want, err := e.srv.cfg.Store.XorbFooter(context.Background(), r.xorbHash)
	if err != nil {
		t.Fatal(err)
	}
	records := len(r.xorbBody)
	// The URL grants chunks 0 and 1 whole, and part of chunk 2.
	grant := casapi.ByteRange{Start: 0, End: uint64(want.BoundaryEnds[2]) - 2}
	u := e.srv.urls.Sign(e.base, r.xorbHash, []casapi.ByteRange{grant}, time.Minute)
	redacted := *want
	redacted.ChunkHashes = make([]hash.Hash, len(want.ChunkHashes))
	copy(redacted.ChunkHashes, want.ChunkHashes[:2])
	fb := redacted.AppendTo(nil)
	total := records + len(fb)

	res := e.do("GET", u, nil, "Range", "bytes=-100")
	if res.status != 206 || !bytes.Equal(res.body, fb[len(fb)-100:]) ||
		res.header.Get("Content-Range") != fmt.Sprintf("bytes %d-%d/%d", total-100, total-1, total) {
		t.Fatalf("suffix of 100: %d %v", res.status, res.header)
	}
	// A suffix longer than the footer gets the footer, not the records before it.
	res = e.do("GET", u, nil, "Range", fmt.Sprintf("bytes=-%d", total))
	if res.status != 206 || !bytes.Equal(res.body, fb) ||
		res.header.Get("Content-Range") != fmt.Sprintf("bytes %d-%d/%d", records, total-1, total) {
		t.Fatalf("suffix of the whole object: %d %v, %d bytes", res.status, res.header, len(res.body))
	}

	c := cas.NewHTTP(cas.HTTPOptions{Endpoint: e.base, Retry: retry.Policy{Attempts: 1}})
	got, err := c.XorbFooter(context.Background(), r.xorbHash, casapi.XorbFetch{URL: u})
	if err != nil {
		t.Fatal(err)
	}
	if got.Hash != r.xorbHash || len(got.BoundaryEnds) != 10 || int(got.BoundaryEnds[9]) != records {
		t.Fatalf("client footer: %d chunks, records end at %v", len(got.BoundaryEnds), got.BoundaryEnds)
	}
	for i, h := range got.ChunkHashes {
		if (i < 2) != (h == want.ChunkHashes[i]) || (i >= 2 && !h.IsZero()) {
			t.Errorf("chunk %d: footer hash %s, stored %s (granted: chunks 0 and 1)", i, h, want.ChunkHashes[i])
		}
	}
	// A URL that does not grant the tail (here: expired) gives ErrNoFooter, the caller's cue to
	// fetch whole ranges.
	e.clock.Advance(2 * time.Minute)
	if _, err := c.XorbFooter(context.Background(), r.xorbHash, casapi.XorbFetch{URL: u}); !errors.Is(err, cas.ErrNoFooter) {
		t.Fatalf("expired URL: %v", err)
	}
}
