package cas_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/hash"
	"github.com/git-xet-transfer/git-xet-transfer/xet/lfsbatch"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

// readerAt serves lent payloads from memory.
type readerAt []byte

func (r readerAt) ReadAt(p []byte, off int64) (int, error) { return bytes.NewReader(r).ReadAt(p, off) }

// A xorb's hint of where it sits in a file goes in its header ("first" or the xorb it follows),
// none without one; the body sent is the serialized body, lent payloads included.
func TestPutXorbSendsFollowsAndLentBody(t *testing.T) {
	var got []string
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get(lfsbatch.HeaderXorbFollows))
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, b)
		io.WriteString(w, `{"was_inserted":true}`)
	}))
	defer srv.Close()
	c := cas.NewHTTP(cas.HTTPOptions{Endpoint: srv.URL})

	var file []byte
	for i := range 20_000 {
		file = append(file, byte(i*7919>>3), byte(i*104729>>5), byte(i))
	}
	b := xorb.NewBuilder(xorb.PolicyNone)
	b.Lend(readerAt(file))
	b.AddFrom(file[:30_000], hash.Chunk(file[:30_000]), 0)
	b.AddFrom(file[30_000:], hash.Chunk(file[30_000:]), 30_000)
	lent := b.Finish()
	want, err := lent.Serialized()
	if err != nil || len(lent.Lent) != 2 {
		t.Fatalf("%d payloads lent (%v)", len(lent.Lent), err)
	}
	prev := hash.Hash{5}
	for _, f := range []xorb.Follows{{Start: true}, {Prev: prev}, {}} {
		lent.Follows = f
		if _, err := c.PutXorb(context.Background(), lent); err != nil {
			t.Fatal(err)
		}
	}
	if got[0] != "first" || got[1] != prev.String() || got[2] != "" {
		t.Fatalf("%s headers sent: %q", lfsbatch.HeaderXorbFollows, got)
	}
	for i, body := range bodies {
		if !bytes.Equal(body, want) {
			t.Fatalf("body %d: %d bytes, not the %d-byte serialized body", i, len(body), len(want))
		}
	}
	if xorb.ParseFollows("first") != (xorb.Follows{Start: true}) || xorb.ParseFollows(prev.String()) != (xorb.Follows{Prev: prev}) ||
		xorb.ParseFollows("junk") != (xorb.Follows{}) || xorb.ParseFollows(hash.Hash{}.String()) != (xorb.Follows{}) {
		t.Fatal("ParseFollows does not read back what Header writes, or reads junk as a hint")
	}
}
