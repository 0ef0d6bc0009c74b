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
	"github.com/git-xet-transfer/git-xet-transfer/xet/retry"
)

// A signed URL's suffix range reads the footer after the xorb's records (as an object store's
// presigned GET would read the object's tail), never records outside the signed ranges; the
// client's XorbFooter reads it through the URL and gets the chunk offsets of the stored xorb.
func TestSignedURLSuffixServesTheFooterOnly(t *testing.T) {
	e := newEnv(t, nil)
	r := loadRef(t)
	e.uploadRef(r)
	want, err := e.srv.cfg.Store.XorbFooter(context.Background(), r.xorbHash)
	if err != nil {
		t.Fatal(err)
	}
	fb := want.AppendTo(nil)
	records := len(r.xorbBody)
	total := records + len(fb)
	u := e.srv.urls.Sign(e.base, r.xorbHash, []casapi.ByteRange{{Start: 0, End: 999}}, time.Minute)

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
	// A URL that does not grant the tail (here: expired) gives ErrNoFooter, the caller's cue to
	// fetch whole ranges.
	e.clock.Advance(2 * time.Minute)
	if _, err := c.XorbFooter(context.Background(), r.xorbHash, casapi.XorbFetch{URL: u}); !errors.Is(err, cas.ErrNoFooter) {
		t.Fatalf("expired URL: %v", err)
	}
}
