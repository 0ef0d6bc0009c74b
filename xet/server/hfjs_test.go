package server

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/testutil"
	"github.com/git-xet-transfer/git-xet-transfer/xet/cas"
	"github.com/git-xet-transfer/git-xet-transfer/xet/download"
	"github.com/git-xet-transfer/git-xet-transfer/xet/shard"
	"github.com/git-xet-transfer/git-xet-transfer/xet/xorb"
)

var update = flag.Bool("update", false, "rewrite the testdata fixtures from the generators")

func hfjsShard(t testing.TB, upload []byte, xorbBytes map[string]uint32, created uint64) []byte {
	t.Helper()
	b, err := testutil.HFJSShard(upload, xorbBytes, created)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A shard in huggingface.js's shape (footer present, zero lookup offsets) is accepted by the CAS and
// its file downloads byte for byte through our own client. The bytes are kept as a fixture
// (testdata/hfjs-ev-population.shard; go test -run HuggingFaceJS -update rewrites it).
func TestHuggingFaceJSShardIsAccepted(t *testing.T) {
	r := loadRef(t)
	got := hfjsShard(t, r.shard, map[string]uint32{r.xorbHash.String(): uint32(len(r.xorbBody))}, 1758141909)
	fixture := filepath.Join("testdata", "hfjs-ev-population.shard")
	if *update {
		if err := os.WriteFile(fixture, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(fixture)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the generator no longer writes %s (%v); run with -update if the change is intended", fixture, err)
	}
	if _, err := shard.Parse(want); err == nil || !strings.Contains(err.Error(), "lookup") {
		t.Fatalf("the fixture is not the shape the strict parser refuses (zero lookup offsets): %v", err)
	}

	e := newEnv(t, nil)
	c := e.casClient("org/repo")
	ctx := context.Background()
	if _, err := c.PutXorb(ctx, &xorb.Xorb{Hash: r.xorbHash, Body: r.xorbBody}); err != nil {
		t.Fatal(err)
	}
	if err := c.PutShard(ctx, want); err != nil {
		t.Fatalf("the CAS refused a huggingface.js shard: %v", err)
	}
	p := filepath.Join(t.TempDir(), "out")
	sum := r.sha
	if err := download.Download(ctx, download.Config{CAS: c}, download.Request{
		File: r.fileHash, SHA256: &sum, Size: int64(len(r.content)), Path: p}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(p); err != nil || !bytes.Equal(b, r.content) {
		t.Fatalf("downloaded file differs (%v)", err)
	}
}

// A file whose single term covers a xorb of more than 64 MiB raw (huggingface.js caps xorbs by
// serialized size, so compressible data makes such xorbs) uploads through our HTTP client and
// downloads byte for byte: the term is decoded chunk by chunk into the output.
func TestTermOver64MiBDownloads(t *testing.T) {
	var rows [][]byte
	for i := 0; i < 600; i++ {
		rows = append(rows, bytes.Repeat([]byte(fmt.Sprintf("%08d,0.000%d,tensor,row\n", i, i%7)), xorb.MaxChunkRaw/24+1)[:xorb.MaxChunkRaw])
	}
	of := testutil.NewOneXorbFile(rows)
	body, content, xh, fh, sum := of.Body, of.Content, of.Xorb, of.File, of.SHA256
	if len(content) <= xorb.MaxBytes || len(body) > xorb.MaxSerializedBytes {
		t.Fatalf("test data: %d raw bytes in %d serialized", len(content), len(body))
	}

	e := newEnv(t, nil)
	c := e.casClient("org/repo")
	ctx := context.Background()
	if _, err := c.PutXorb(ctx, &xorb.Xorb{Hash: xh, Body: body}); err != nil {
		t.Fatalf("a %d MiB raw / %d MiB serialized xorb was refused: %v", len(content)>>20, len(body)>>20, err)
	}
	if err := c.PutShard(ctx, of.Shard); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "out")
	if err := download.Download(ctx, download.Config{CAS: c}, download.Request{File: fh, SHA256: &sum, Size: int64(len(content)), Path: p}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(p); err != nil || !bytes.Equal(b, content) {
		t.Fatalf("downloaded file differs (%v)", err)
	}
}

// casClient is our own HTTP client of the server's CAS, with a write token for ns.
func (e *env) casClient(ns string) *cas.HTTP {
	tok := e.token("", ns, ScopeWrite, time.Hour)
	return cas.NewHTTP(cas.HTTPOptions{Endpoint: e.base, Token: cas.NewRefreshingToken(tok, time.Time{}, nil)})
}
